// Richardson-Lucy deconvolution of volumes (D x H x W, one or more z slices) on top of
// plan3d: two plans built once, the PSF's convolution and its correlation (their kernel
// spectra computed once, at construction), reused by every iteration; the elementwise steps
// are small CUDA kernels on the CUDA backend (deconvolve.cu) and loops on the CPU backend.
//
// The algorithm (y the observed volume, h the PSF scaled to sum 1, (*) 'same' convolution and
// (*corr) 'same' correlation with the boundary rule of deconvolve_options::border):
//
//   y      <- max(y, 0)                               (negative data counts as 0)
//   eps     = epsilon * max(y)                        (0: every estimate is 0)
//   u_0     = y
//   b       = u_k (*) h
//   r       = y / b where b > eps, else 0             (the guarded division)
//   c       = r (*corr) h
//   u_{k+1} = max(u_k * c / d_k, 0)                   (non-negativity kept against FFT ringing)
//
// d_k = 1 without a regulariser. With total variation (Dey et al. 2006, RL-TV),
// d_k = 1 - lambda * div(n), n = grad u_k / sqrt(|grad u_k|^2 + eps^2): the gradient by
// forward differences (0 at the last index of an axis: Neumann), the divergence by backward
// differences (n taken as 0 before the first index), unit spacing on every axis. |n| < 1
// per axis bounds |div n| below 6, so lambda in [0, 1/6) keeps d_k > 0; larger lambdas are
// refused. Typical values: 0.001 to 0.01.
#pragma once
#include <functional>
#include <memory>

#include "plan3d.hpp"

namespace gpuconv::conv {

struct deconvolve_options {
  int iterations = 10;
  float tv_lambda = 0;                  // total-variation weight, 0 (plain RL) to below 1/6
  float epsilon = 1e-6f;                // the division guard, relative to max(observed)
  boundary border = boundary::reflect;  // the PSF's convolution and correlation beyond the edges
  float constant_value = 0;             // boundary::constant's value
  backend device = backend::automatic;  // automatic: CUDA when a device is present
  int threads = 0;                      // CPU backend threads (0: all cores)
  std::size_t memory_limit = 0;         // per plan3d (plan_options::memory_limit; 0: its default)
  cuda_path path = cuda_path::automatic;  // the two plans' CUDA route (plan_options::path, plan3d::path())
};

// After each iteration: (iterations done, iterations asked). Returning false stops the run
// there (the estimate holds the last completed iteration). On the CUDA backend a callback
// costs a stream synchronisation per iteration.
using deconvolve_progress = std::function<bool(int done, int total)>;

class richardson_lucy {
 public:
  // psf: kd x kh x kw on the host (depth-major), finite and non-negative; scaled to sum 1
  // here. Throws std::invalid_argument for bad shapes, options (iterations < 1, lambda
  // outside [0, 1/6), epsilon <= 0 or not finite, a border mode that plan3d refuses) or a
  // PSF with a negative, NaN/Inf value or sum 0, and gpuconv::cuda_error from the CUDA setup.
  richardson_lucy(long long depth, long long height, long long width, const float* psf, int kd, int kh, int kw,
                  const deconvolve_options& options = {});
  ~richardson_lucy();
  richardson_lucy(richardson_lucy&&) noexcept;
  richardson_lucy& operator=(richardson_lucy&&) noexcept;

  // Host buffers of depth x height x width floats (not overlapping). On the CUDA backend the
  // volumes cross the bus once each way (device buffers allocated on the first call and kept).
  // Returns the iterations done.
  int run(const float* observed, float* estimate, const deconvolve_progress& progress = {});
  // Device buffers (CUDA backend only), asynchronous on `stream` unless `progress` is given.
  int run_device(const float* observed, float* estimate, cudaStream_t stream = nullptr,
                 const deconvolve_progress& progress = {});

  backend selected_backend() const;
  const deconvolve_options& options() const;

  struct impl;

 private:
  std::unique_ptr<impl> impl_;
};

// The CUDA kernels of the elementwise steps (deconvolve.cu), on device buffers of n voxels.
namespace rl_device {
// max(max(y, 0)) over n voxels into *max_out (one float on the device, reset here).
void max_nonnegative(const float* y, long long n, float* max_out, cudaStream_t s);
// u = max(y, 0)
void clamp_copy(const float* y, float* u, long long n, cudaStream_t s);
// b <- (b > eps ? max(y, 0) / b : 0), eps = epsilon * (*max_y)
void ratio(const float* y, float* b, long long n, const float* max_y, float epsilon, cudaStream_t s);
// u_next = max(u * c / d, 0), d = 1 (lambda == 0, u_next may be u) or the TV term of u.
void update(const float* u, const float* c, float* u_next, long long depth, long long height, long long width,
            float lambda, const float* max_y, float epsilon, cudaStream_t s);
}  // namespace rl_device

}  // namespace gpuconv::conv
