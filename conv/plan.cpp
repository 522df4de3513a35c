#include "plan.hpp"

#include "backend.hpp"
#include "fft/device/cuda_check.hpp"

namespace gpuconv::conv {

namespace {

constexpr int min_tile = 16, max_tile = 4096;

problem make_problem(long long height, long long width, int planes, const float* kernel, int count, int kh, int kw,
                     const plan_options& o) {
  if (planes < 1) throw std::invalid_argument("conv::plan: planes " + std::to_string(planes) + " is < 1");
  if (count < 1) throw std::invalid_argument("conv::plan: kernel_count " + std::to_string(count) + " is < 1");
  std::vector<float> effective;
  for (int k = 0; k < count; ++k) {
    const float* kk = kernel ? kernel + (std::size_t)k * kh * kw : nullptr;
    try {
      validate_plan(height, width, kk, kh, kw, o.semantics);
    } catch (const std::invalid_argument& e) {
      if (count == 1) throw;
      throw std::invalid_argument(std::string(e.what()) + " (kernel " + std::to_string(k) + " of the bank)");
    }
    const auto e = effective_kernel(kk, kh, kw, o.semantics.op);
    effective.insert(effective.end(), e.begin(), e.end());
  }
  const geometry g = make_geometry(height, width, kh, kw, o.semantics.mode);
  problem p{height, width, planes, g, {}, {}, std::move(effective), kh, kw, o, count};
  // the CPU's tiling; the CUDA backend chooses its own (tiling.hpp: choose_cuda_tiling)
  p.set_tiling(choose_tiling(g.out_h, g.out_w, kh, kw, min_tile, max_tile, o.tile));
  return p;
}

}  // namespace

plan::plan(long long height, long long width, int planes, const float* kernel, int kh, int kw,
           const plan_options& options)
    : plan(height, width, planes, kernel, 1, kh, kw, options) {}

plan::plan(long long height, long long width, int planes, const float* kernels, int kernel_count, int kh, int kw,
           const plan_options& options) {
  problem p = make_problem(height, width, planes, kernels, kernel_count, kh, kw, options);
  if (options.cuda_device >= 0 && options.device != backend::cpu) {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess) {
      (void)cudaGetLastError();
      count = 0;
    }
    if (options.cuda_device >= count)
      throw std::invalid_argument("conv::plan: plan_options::cuda_device " + std::to_string(options.cuda_device) +
                                  " is not one of the " + std::to_string(count) + " CUDA devices present");
  }
  switch (options.device) {
    case backend::cpu: impl_ = make_cpu_backend(std::move(p)); break;
    case backend::cuda:
      if (!cuda_device_available()) throw std::invalid_argument("conv::plan: the CUDA backend was asked for but no CUDA device is present");
      impl_ = make_cuda_backend(std::move(p));
      break;
    case backend::automatic:
      impl_ = cuda_device_available() ? make_cuda_backend(std::move(p)) : make_cpu_backend(std::move(p));
      break;
  }
}

plan::~plan() = default;
plan::plan(plan&&) noexcept = default;
plan& plan::operator=(plan&&) noexcept = default;

void plan::execute_any(const void* in, void* out, int bytes, bool is_float) {
  if (!in || !out) throw std::invalid_argument("conv::plan::execute: null pointer");
  impl_->execute(in, out, pixel_of(bytes, is_float));
}

void plan::execute_device_any(const void* in, void* out, int bytes, bool is_float, cudaStream_t stream) {
  if (!in || !out) throw std::invalid_argument("conv::plan::execute_device: null pointer");
  impl_->execute_device(in, out, pixel_of(bytes, is_float), stream);
}

cuda_path plan::path() const { return impl_->path(); }
cpu_method plan::method() const { return impl_->method(); }

backend plan::selected_backend() const { return impl_->kind(); }
long long plan::output_planes() const { return impl_->prob.output_planes(); }
long long plan::output_height() const { return impl_->prob.map.out_h; }
long long plan::output_width() const { return impl_->prob.map.out_w; }
const tiling& plan::tiles() const { return impl_->prob.tiles; }

}  // namespace gpuconv::conv
