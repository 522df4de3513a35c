// Volume convolution API: plan3d is conv::plan for D x H x W volumes (image stacks) with a
// Kd x Kh x Kw kernel (a point-spread function), built once and executed many times.
// Semantics are the 2D plan's on each axis (semantics3d.hpp): convolution or correlation,
// same/full/valid, the six boundaries and the constant value of plan_options::semantics,
// anchor (K-1)/2 per axis. Volumes are depth-major (slice after slice, each row-major), one
// volume after another; the kernel has the same layout.
//
// Engine: 3D overlap-save tiles (tile_map3d.hpp) of power-of-two sides; per tile a 3D R2C,
// a multiply by the kernel's tile spectrum (computed once, at plan time), and a C2R.
// Backends: CUDA (fft::real_3d_plan; bands of output slices when a volume does not fit
// plan_options::memory_limit) and CPU (a direct sum for small kernels, else the same tiles
// through the host 3D FFT, multithreaded). automatic picks CUDA when a device is present.
// A rank-1 kernel (a product of 1D kernels: gaussian3d) runs on either backend as three 1D
// passes instead (separable3d.hpp), Kw + Kh + Kd multiply-adds a voxel.
#pragma once
#include <memory>

#include "plan.hpp"

namespace gpuconv::conv {

// The CPU backend's expected seconds for one execute of a plan3d with these arguments (its
// method's work at the per-thread rates measured on the H100 host's 16 cores; threads as
// options.threads, 0: all cores): --device auto's 3D rule compares it with CUDA's start-up.
// Throws std::invalid_argument as plan3d's constructor does.
double cpu3d_estimated_seconds(long long depth, long long height, long long width, int volumes, const float* psf,
                               int kd, int kh, int kw, const plan_options& options = {});

class plan3d {
 public:
  // psf: kd x kh x kw on the host. Throws std::invalid_argument on bad input (empty shapes,
  // a null kernel, NaN/Inf in it, 'valid' with a kernel larger than the volume) and
  // gpuconv::cuda_error when the CUDA backend cannot be set up. plan_options: semantics,
  // device, tile (forces a cubic tile side: the FFT tiles, a power of two; on the CUDA slice
  // path 160 forces 160^3, slices of 160), memory_limit, threads,
  // cuda_device, cpu (the CPU backend: direct, separable or fft; automatic: separable for a
  // rank-1 kernel, else direct or fft by the cost model) and path (the CUDA backend:
  // separable, or any FFT path for the FFT tiles; automatic: separable for a rank-1 kernel,
  // else the tiles) apply; separable forced on a kernel that is not rank-1 throws
  // std::invalid_argument. autotune is a 2D choice and is ignored.
  plan3d(long long depth, long long height, long long width, int volumes, const float* psf, int kd, int kh, int kw,
         const plan_options& options = {});
  ~plan3d();
  plan3d(plan3d&&) noexcept;
  plan3d& operator=(plan3d&&) noexcept;

  // Host buffers: in holds volumes x depth x height x width, out volumes x output_depth x
  // output_height x output_width. Narrow types are converted to float on load and rounded
  // (ties to even) and saturated on store, as the 2D plan does.
  template <typename T>
  void execute(const T* in, T* out) {
    static_assert(is_pixel_type_v<T>, "conv::plan3d: voxels are float, uint8_t or uint16_t");
    execute_any(in, out, sizeof(T), std::is_same_v<T, float>);
  }
  // Device buffers (CUDA backend only); asynchronous on `stream`. The whole volume is
  // processed at once (the tile workspace stays within the memory cap; the buffers are the
  // caller's).
  template <typename T>
  void execute_device(const T* in, T* out, cudaStream_t stream = nullptr) {
    static_assert(is_pixel_type_v<T>, "conv::plan3d: voxels are float, uint8_t or uint16_t");
    execute_device_any(in, out, sizeof(T), std::is_same_v<T, float>, stream);
  }

  long long output_depth() const;
  long long output_height() const;
  long long output_width() const;
  int volumes() const;
  backend selected_backend() const;
  // The method: direct or fft (CPU backend), separable (either backend), automatic (the CUDA
  // backend's FFT tiles).
  cpu_method method() const;
  // The CUDA backend's route: separable, fused (the slice path: tiles whose slices are squares
  // of 32, 64, 128 or 160, each slice's 2D transform in one kernel, three passes), or multipass
  // (fft::real_3d_plan's five passes between a gather and a scatter); automatic on the CPU
  // backend. plan_options::path multipass forces the last, fused the slice path (throws where
  // the tiles' slices do not allow it).
  cuda_path path() const;
  // The tile (powers of two; the slice path's: also mixed depths, and slices of 160) and the
  // outputs per tile, per axis: {tile_d, tile_h, tile_w}.
  struct tile_shape {
    int tile_d, tile_h, tile_w;
  };
  tile_shape tile() const;

  struct impl;

 private:
  friend struct plan3d_access;  // backend3d.hpp: the library's own callers of impl (deconvolve.cpp)
  void execute_any(const void* in, void* out, int bytes, bool is_float);
  void execute_device_any(const void* in, void* out, int bytes, bool is_float, cudaStream_t stream);
  std::unique_ptr<impl> impl_;
};

}  // namespace gpuconv::conv
