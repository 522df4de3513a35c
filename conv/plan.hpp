// Convolution API: a plan built once from the image shape, the kernel and the options,
// executed many times. Semantics (operation, output mode, anchor, boundaries) are those of
// semantics.hpp: 'same' convolution matches scipy.signal.fftconvolve(mode='same') with zero
// boundary and OpenCV filter2D on the flipped kernel with its default anchor; the default
// boundary is reflect101 (OpenCV's default).
//
// Methods: overlap-save tiling (tiling.hpp) onto tiles chosen by a cost model (powers of two; the
// CUDA fused path also 80 = 5 x 16),
// per tile a 2D R2C, a multiply by the kernel's spectrum (computed once, here), and a C2R; or,
// without a transform, direct (kh * kw multiply-adds per output) and separable (rank-1
// kernels: a row pass and a column pass). Backends: CUDA (cuda_path in tiling.hpp: direct,
// separable, the fused tile kernel, the three-pass tile path or the multi-pass pipeline) and
// CPU (cpu_method: direct, separable, or the same fft_t through the host transforms,
// multithreaded); each backend's chooser is in method.hpp; automatic picks CUDA when a
// device is present.
// fp32 throughout; planes are float, row-major, plane after plane.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>

#include <cuda_runtime.h>

#include "method.hpp"
#include "semantics.hpp"
#include "tiling.hpp"

namespace gpuconv::conv {

enum class backend { automatic, cuda, cpu };

// Element types a plan executes on. Narrow types are converted to float on load and
// rounded to nearest (ties to even, as OpenCV's saturate_cast) and saturated on store.
template <typename T>
inline constexpr bool is_pixel_type_v =
    std::is_same_v<T, float> || std::is_same_v<T, std::uint8_t> || std::is_same_v<T, std::uint16_t>;

struct plan_options {
  options semantics;                    // operation, output mode, boundary
  backend device = backend::automatic;  // automatic: CUDA when a device is present
  cuda_path path = cuda_path::automatic;  // CUDA backend: one method forced (automatic: method.hpp's cost model);
                                          // separable throws std::invalid_argument for a kernel that is not rank-1
  int tile = 0;                         // force a square tile side (0: the cost model)
  std::size_t memory_limit = 0;         // CUDA memory cap in bytes, workspace and staging (0: half the free memory)
  bool autotune = false;                // CUDA, path automatic, no forced tile: time the candidate methods
                                        // (direct, separable, FFT paths and tiles) on this shape at plan
                                        // time (a few ms) instead of the model
  int threads = 0;                      // CPU backend threads (0: all cores)
  int cuda_device = -1;                 // CUDA backend: the device ordinal the plan lives and runs on
                                        // (-1: the device current when the plan is built); the
                                        // caller's current device is left as it was
  cpu_method cpu = cpu_method::automatic;  // CPU backend: direct, separable or FFT (automatic: method.hpp's cost model)
  pixel pixels = pixel::f32;            // CUDA backend: the pixel type autotune times the candidates on (the
                                        // model's prices are fp32's for every type, method.hpp); execute
                                        // still takes any of the three
};

class plan {
 public:
  // kernel: kh x kw row-major on the host. Throws std::invalid_argument on bad input
  // (empty shapes, null kernel, NaN/Inf in the kernel, 'valid' with a kernel larger than
  // the image) and gpuconv::cuda_error when the CUDA backend cannot be set up.
  plan(long long height, long long width, int planes, const float* kernel, int kh, int kw,
       const plan_options& options = {});
  // A bank of `kernel_count` kernels of kh x kw, stored one after another: every input plane
  // is convolved with each of them, and the output holds planes x kernel_count planes, input
  // plane major: output plane p * kernel_count + k is input plane p convolved with kernel k.
  // One launch on the fused path (a filter bank over small images costs one pass).
  plan(long long height, long long width, int planes, const float* kernels, int kernel_count, int kh, int kw,
       const plan_options& options = {});
  ~plan();
  plan(plan&&) noexcept;
  plan& operator=(plan&&) noexcept;

  // Host buffers: in holds planes x height x width, out output_planes() x output_height x
  // output_width;
  // T is float, uint8_t or uint16_t. On the CUDA backend the first call allocates the device
  // staging (within the memory cap; execute_device never needs it), and an image larger
  // than the cap is processed in bands of rows.
  template <typename T>
  void execute(const T* in, T* out) {
    static_assert(is_pixel_type_v<T>, "conv::plan: pixels are float, uint8_t or uint16_t");
    execute_any(in, out, sizeof(T), std::is_same_v<T, float>);
  }
  // Device buffers (CUDA backend only); asynchronous on `stream`.
  template <typename T>
  void execute_device(const T* in, T* out, cudaStream_t stream = nullptr) {
    static_assert(is_pixel_type_v<T>, "conv::plan: pixels are float, uint8_t or uint16_t");
    execute_device_any(in, out, sizeof(T), std::is_same_v<T, float>, stream);
  }

  backend selected_backend() const;
  cuda_path path() const;  // the CUDA backend's method: direct, separable, fused, three_pass or
                           // multipass (automatic on the CPU backend)
  cpu_method method() const;  // the CPU backend's method (automatic on the CUDA backend)
  long long output_planes() const;  // planes x kernel_count
  long long output_height() const;
  long long output_width() const;
  const tiling& tiles() const;

  struct impl;

 private:
  void execute_any(const void* in, void* out, int bytes, bool is_float);
  void execute_device_any(const void* in, void* out, int bytes, bool is_float, cudaStream_t stream);
  std::unique_ptr<impl> impl_;
};

}  // namespace gpuconv::conv
