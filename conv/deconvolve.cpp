// Richardson-Lucy on plan3d (the algorithm in deconvolve.hpp): validation, the two plans,
// the CPU loop on host buffers, and the CUDA loop on device buffers (its kernels in
// deconvolve.cu).
#include "deconvolve.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "../fft/device/buffer.hpp"
#include "backend3d.hpp"
#include "cpu_rows.hpp"
#include "host_staging.hpp"
#include "rl_steps.hpp"

namespace gpuconv::conv {

namespace {

[[noreturn]] void fail(const std::string& what) { throw std::invalid_argument("gpuconv::conv::richardson_lucy: " + what); }

// The PSF scaled to sum 1 (in double), after the checks deconvolve.hpp lists.
std::vector<float> unit_psf(const float* psf, int kd, int kh, int kw) {
  if (psf == nullptr) fail("psf is a null pointer");
  if (kd < 1 || kh < 1 || kw < 1)
    fail("PSF size " + std::to_string(kd) + " x " + std::to_string(kh) + " x " + std::to_string(kw) + " has a side < 1");
  const std::size_t n = std::size_t(kd) * kh * kw;
  double sum = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (!std::isfinite(psf[i])) fail("PSF value " + std::to_string(i) + " is not finite");
    if (psf[i] < 0) fail("PSF value " + std::to_string(i) + " is negative (" + std::to_string(psf[i]) + "); RL needs a PSF >= 0");
    sum += psf[i];
  }
  if (!(sum > 0)) fail("PSF sums to 0");
  std::vector<float> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = float(psf[i] / sum);
  return out;
}

plan_options plan_for(const deconvolve_options& o, operation op) {
  plan_options p;
  p.semantics.op = op;
  p.semantics.mode = output_mode::same;
  p.semantics.border = o.border;
  p.semantics.constant_value = o.constant_value;
  p.device = o.device;
  p.threads = o.threads;
  p.memory_limit = o.memory_limit;
  p.path = o.path;
  return p;
}

}  // namespace

struct richardson_lucy::impl {
  long long depth, height, width;
  deconvolve_options options;
  std::vector<float> psf;
  plan3d blur, correlate;  // u (*) h and r (*corr) h, built once
  // CUDA backend: b/r and c always (c holds u_{k+1} instead where the update is folded), the
  // next estimate with TV; the observed volume and the estimate for run() on host buffers;
  // max(y) as one float
  device_buffer<float> blurred, correction, next, host_observed, host_estimate, max_y;
  lazy_host_staging staging{options.threads};  // run()'s page-locked staging of the host volumes

  impl(long long d, long long h, long long w, std::vector<float> unit, int kd, int kh, int kw,
       const deconvolve_options& o)
      : depth(d), height(h), width(w), options(o), psf(std::move(unit)),
        blur(d, h, w, 1, psf.data(), kd, kh, kw, plan_for(o, operation::convolution)),
        correlate(d, h, w, 1, psf.data(), kd, kh, kw, plan_for(o, operation::correlation)) {
    if (blur.selected_backend() == backend::cuda) {
      const std::size_t n = std::size_t(voxels());
      blurred = device_buffer<float>(n);
      correction = device_buffer<float>(n);
      if (o.tv_lambda > 0) next = device_buffer<float>(n);
      max_y = device_buffer<float>(1);
    }
  }
  long long voxels() const { return depth * height * width; }

  int run_host(const float* observed, float* u, const deconvolve_progress& progress);
  int run_cuda(const float* observed, float* u, cudaStream_t stream, const deconvolve_progress& progress);
};

int richardson_lucy::impl::run_host(const float* y, float* u, const deconvolve_progress& progress) {
  const std::size_t n = std::size_t(voxels());
  float top = 0;
  for (std::size_t i = 0; i < n; ++i) top = std::max(top, y[i]);  // max(y, 0): top starts at 0
  const float eps = options.epsilon * top, eps2 = std::max(eps * eps, FLT_MIN);
  for (std::size_t i = 0; i < n; ++i) u[i] = y[i] > 0 ? y[i] : 0.f;
  std::vector<float> b(n), c(n), u_next(options.tv_lambda > 0 ? n : 0);
  const rl::grid g{depth, height, width};
  const int threads = options.threads > 0 ? options.threads : int(std::max(1u, std::thread::hardware_concurrency()));
  // the elementwise steps on the CPU pool, a row (z, y) of `width` voxels per unit
  auto rows = [&](auto&& f) {
    parallel_units(threads, depth * height, [&](long long row) {
      const std::size_t first = std::size_t(row * width);
      const long long z = row / height, r = row % height;
      for (long long x = 0; x < width; ++x) f(z, r, x, first + std::size_t(x));
    });
  };
  for (int k = 0; k < options.iterations; ++k) {
    blur.execute(u, b.data());
    rows([&](long long, long long, long long, std::size_t i) { b[i] = rl::ratio(y[i], b[i], eps); });
    correlate.execute(b.data(), c.data());
    if (options.tv_lambda > 0) {
      rows([&](long long z, long long r, long long x, std::size_t i) {
        u_next[i] = rl::next(u[i], c[i], rl::tv_denominator(u, g, z, r, x, options.tv_lambda, eps2));
      });
      std::copy(u_next.begin(), u_next.end(), u);
    } else {
      rows([&](long long, long long, long long, std::size_t i) { u[i] = rl::next(u[i], c[i], 1.f); });
    }
    if (progress && !progress(k + 1, options.iterations)) return k + 1;
  }
  return options.iterations;
}

int richardson_lucy::impl::run_cuda(const float* y, float* u, cudaStream_t stream, const deconvolve_progress& progress) {
  const long long n = voxels();
  rl_device::max_nonnegative(y, n, max_y.data(), stream);
  rl_device::clamp_copy(y, u, n, stream);
  // The elementwise steps go into the convolutions' last pass where the method can take them
  // (the separable one: backend3d.hpp's store_step), so that b and c are never stored: the
  // ratio into the blur's store, and without TV the update into the correlation's (u_{k+1}
  // then lands in the other buffer, never over the u_k it reads). Else their own kernels.
  plan3d::impl& blur_impl = plan3d_access::of(blur);
  plan3d::impl& correlate_impl = plan3d_access::of(correlate);
  const store_step ratio_step{store_step::kind::ratio, y, max_y.data(), options.epsilon};
  float* current = u;  // the estimate u_k
  // u_{k+1}: TV's buffer, or without TV `correction` where the update is folded (then the two swap)
  float* spare = options.tv_lambda > 0 ? next.data() : correction.data();
  for (int k = 0; k < options.iterations; ++k) {
    if (!blur_impl.execute_device_step(current, blurred.data(), ratio_step, stream)) {
      blur.execute_device(current, blurred.data(), stream);
      rl_device::ratio(y, blurred.data(), n, max_y.data(), options.epsilon, stream);
    }
    if (options.tv_lambda > 0) {
      correlate.execute_device(blurred.data(), correction.data(), stream);
      rl_device::update(current, correction.data(), spare, depth, height, width, options.tv_lambda, max_y.data(),
                        options.epsilon, stream);
      std::swap(current, spare);
    } else if (correlate_impl.execute_device_step(blurred.data(), spare, {store_step::kind::update, current}, stream)) {
      std::swap(current, spare);
    } else {
      correlate.execute_device(blurred.data(), correction.data(), stream);
      rl_device::update(current, correction.data(), current, depth, height, width, 0.f, max_y.data(), options.epsilon,
                        stream);
    }
    if (progress) {
      GPUCONV_CUDA(cudaStreamSynchronize(stream));
      if (!progress(k + 1, options.iterations)) {
        if (current != u) GPUCONV_CUDA(cudaMemcpyAsync(u, current, std::size_t(n) * sizeof(float), cudaMemcpyDeviceToDevice, stream));
        GPUCONV_CUDA(cudaStreamSynchronize(stream));
        return k + 1;
      }
    }
  }
  if (current != u) GPUCONV_CUDA(cudaMemcpyAsync(u, current, std::size_t(n) * sizeof(float), cudaMemcpyDeviceToDevice, stream));
  return options.iterations;
}

richardson_lucy::richardson_lucy(long long depth, long long height, long long width, const float* psf, int kd, int kh,
                                 int kw, const deconvolve_options& o) {
  if (o.iterations < 1) fail("iterations = " + std::to_string(o.iterations) + " is < 1");
  if (!(o.tv_lambda >= 0 && o.tv_lambda < 1.f / 6))
    fail("tv_lambda = " + std::to_string(o.tv_lambda) + " is outside [0, 1/6) (1 - lambda div n must stay > 0)");
  if (!(o.epsilon > 0) || !std::isfinite(o.epsilon)) fail("epsilon = " + std::to_string(o.epsilon) + " must be > 0");
  impl_ = std::make_unique<impl>(depth, height, width, unit_psf(psf, kd, kh, kw), kd, kh, kw, o);
}
richardson_lucy::~richardson_lucy() = default;
richardson_lucy::richardson_lucy(richardson_lucy&&) noexcept = default;
richardson_lucy& richardson_lucy::operator=(richardson_lucy&&) noexcept = default;

backend richardson_lucy::selected_backend() const { return impl_->blur.selected_backend(); }
const deconvolve_options& richardson_lucy::options() const { return impl_->options; }

namespace {

void check_volumes(const float* observed, const float* estimate, long long voxels) {
  if (observed == nullptr || estimate == nullptr) fail("a null volume pointer");
  if (observed < estimate + voxels && estimate < observed + voxels) fail("observed and estimate overlap");
}

}  // namespace

int richardson_lucy::run(const float* observed, float* estimate, const deconvolve_progress& progress) {
  check_volumes(observed, estimate, impl_->voxels());
  auto& m = *impl_;
  if (m.blur.selected_backend() != backend::cuda) return m.run_host(observed, estimate, progress);
  const std::size_t bytes = std::size_t(m.voxels()) * sizeof(float);
  if (m.host_observed.size() == 0) {
    m.host_observed = device_buffer<float>(std::size_t(m.voxels()));
    m.host_estimate = device_buffer<float>(std::size_t(m.voxels()));
  }
  m.staging().upload(m.host_observed.data(), observed, bytes, nullptr);
  const int done = m.run_cuda(m.host_observed.data(), m.host_estimate.data(), nullptr, progress);
  m.staging().download(estimate, m.host_estimate.data(), bytes, nullptr);
  return done;
}

int richardson_lucy::run_device(const float* observed, float* estimate, cudaStream_t stream,
                                const deconvolve_progress& progress) {
  check_volumes(observed, estimate, impl_->voxels());
  if (impl_->blur.selected_backend() != backend::cuda) fail("run_device needs the CUDA backend");
  return impl_->run_cuda(observed, estimate, stream, progress);
}

}  // namespace gpuconv::conv
