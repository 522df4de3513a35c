// Convolution API: a plan built once from the image shape, the kernel and the options,
// executed many times. Semantics (operation, output mode, anchor, boundaries) are those of
// semantics.hpp: 'same' convolution matches scipy.signal.fftconvolve(mode='same') with zero
// boundary and OpenCV filter2D on the flipped kernel with its default anchor; the default
// boundary is reflect101 (OpenCV's default).
//
// Engine: overlap-save tiling (tiling.hpp) onto power-of-two tiles chosen by a cost model;
// per tile a 2D R2C, a multiply by the kernel's spectrum (computed once, here), and a C2R.
// Backends: CUDA (fft::real_2d_plan, fused column pass) and CPU (the same fft_t through
// the host transforms, multithreaded); automatic picks CUDA when a device is present.
// fp32 throughout; planes are float, row-major, plane after plane.
#pragma once
#include <cstddef>
#include <memory>

#include <cuda_runtime.h>

#include "semantics.hpp"
#include "tiling.hpp"

namespace gpuconv::conv {

enum class backend { automatic, cuda, cpu };

struct plan_options {
  options semantics;                    // operation, output mode, boundary
  backend device = backend::automatic;  // automatic: CUDA when a device is present
  int tile = 0;                         // force a square tile side (0: the cost model)
  std::size_t memory_limit = 0;         // CUDA workspace cap in bytes (0: half the free memory)
  int threads = 0;                      // CPU backend threads (0: all cores)
};

class plan {
 public:
  // kernel: kh x kw row-major on the host. Throws std::invalid_argument on bad input
  // (empty shapes, null kernel, NaN/Inf in the kernel, 'valid' with a kernel larger than
  // the image) and gpuconv::cuda_error when the CUDA backend cannot be set up.
  plan(long long height, long long width, int planes, const float* kernel, int kh, int kw,
       const plan_options& options = {});
  ~plan();
  plan(plan&&) noexcept;
  plan& operator=(plan&&) noexcept;

  // Host buffers: in holds planes x height x width, out planes x output_height x output_width.
  void execute(const float* in, float* out);
  // Device buffers (CUDA backend only); asynchronous on `stream`.
  void execute_device(const float* in, float* out, cudaStream_t stream = nullptr);

  backend selected_backend() const;
  long long output_height() const;
  long long output_width() const;
  const tiling& tiles() const;

  struct impl;

 private:
  std::unique_ptr<impl> impl_;
};

}  // namespace gpuconv::conv
