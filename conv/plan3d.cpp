// plan3d: validation, the tiling, and the backend and method choice (backend3d.hpp). The CPU
// backend's direct and FFT methods are cpu3d.cpp, the CUDA backend's FFT tiles plan3d.cu, the
// separable method of both separable3d.cpp / separable3d.cu.
#include "plan3d.hpp"

#include <algorithm>
#include <cstdlib>
#include <string>
#include <thread>

#include "backend3d.hpp"
#include "separable3d.hpp"
#include "fft/device/cuda_check.hpp"

namespace gpuconv::conv {

namespace {

// The FFT tiles (tile_map3d.hpp): a cube of plan_options::tile when forced; on the CPU at most
// cpu_max_tile_side_3d a side; on CUDA the slice path's tiles priced as they cost there unless
// the multipass route is forced. GPUCONV_SLICE_MIXED=0 (a measurement knob) leaves the slices
// of slice_mixed_side out.
tiling3d tiling_for(const geometry3d& g, int kd, int kh, int kw, const plan_options& o, bool cpu) {
  if (cpu) return choose_tiling3d(g.out_d, g.out_h, g.out_w, kd, kh, kw, o.tile, cpu_max_tile_side_3d);
  const char* mixed = std::getenv("GPUCONV_SLICE_MIXED");
  return choose_tiling3d(g.out_d, g.out_h, g.out_w, kd, kh, kw, o.tile, max_tile_side_3d, o.path != cuda_path::multipass,
                         !(mixed && std::string(mixed) == "0"));
}

problem3d make_problem3d(long long depth, long long height, long long width, int volumes, const float* psf, int kd,
                         int kh, int kw, const plan_options& o, bool cpu) {
  if (volumes < 1) throw std::invalid_argument("conv::plan3d: volumes " + std::to_string(volumes) + " is < 1");
  validate_plan3d(depth, height, width, psf, kd, kh, kw, o.semantics);
  const geometry3d g = make_geometry3d(depth, height, width, kd, kh, kw, o.semantics.mode);
  return problem3d{depth, height, width, volumes, g, tiling_for(g, kd, kh, kw, o, cpu),
                   effective_kernel3d(psf, kd, kh, kw, o.semantics.op), kd, kh, kw, o};
}

// Whether the separable method is forced, and whether it is the automatic choice's to make.
bool separable_forced(const plan_options& o, bool cpu) {
  return cpu ? o.cpu == cpu_method::separable : o.path == cuda_path::separable;
}
bool separable_considered(const plan_options& o, bool cpu) {
  return separable_forced(o, cpu) ||
         (cpu ? o.cpu == cpu_method::automatic : (o.path == cuda_path::automatic && o.tile == 0));
}

// The method: separable for a rank-1 kernel (method.hpp: factor_rank1_3d; three passes of
// Kw + Kh + Kd taps a voxel, cheaper than the direct sum's Kd Kh Kw and the FFT tiles'
// transforms at every size) unless another one is forced: plan_options::cpu on the CPU
// backend, plan_options::path on CUDA (separable forces it; any other path, or a forced tile,
// the FFT tiles). Separable forced on a kernel that is not rank-1 throws.
std::unique_ptr<plan3d::impl> make_backend(problem3d p, bool cpu) {
  if (separable_considered(p.options, cpu)) {
    rank1_3d_factors f = factor_rank1_3d(p.kernel.data(), p.kd, p.kh, p.kw);
    if (f.found()) return cpu ? make_cpu3d_separable(std::move(p), std::move(f)) : make_cuda3d_separable(std::move(p), std::move(f));
    if (separable_forced(p.options, cpu))
      throw std::invalid_argument("conv::plan3d: the separable method needs a rank-1 kernel (a product of 1D kernels); the " +
                                  std::to_string(p.kd) + " x " + std::to_string(p.kh) + " x " + std::to_string(p.kw) +
                                  " kernel is not");
  }
  return cpu ? make_cpu3d_backend(std::move(p)) : make_cuda3d_backend(std::move(p));
}

}  // namespace

// The separable method on the CPU: three passes that stream the volume, ~80 ns a voxel on one of
// 16 busy threads of the H100 host whatever the taps (gaussian3d:2 and :4, 13 and 25 taps a
// pass: the same 0.16-0.17 s on 128 x 512^2; session 35).
constexpr double cpu3d_separable_ns_per_voxel = 80;

double cpu3d_estimated_seconds(long long depth, long long height, long long width, int volumes, const float* psf,
                               int kd, int kh, int kw, const plan_options& options) {
  const problem3d p = make_problem3d(depth, height, width, volumes, psf, kd, kh, kw, options, true);
  const int threads =
      options.threads > 0 ? options.threads : (int)std::max(1u, std::thread::hardware_concurrency());
  if (separable_considered(options, true) && factor_rank1_3d(p.kernel.data(), p.kd, p.kh, p.kw).found())
    return double(volumes) * double(depth) * double(height) * double(width) * cpu3d_separable_ns_per_voxel * 1e-9 /
           threads;
  return cpu3d_seconds(p, threads);
}

plan3d::plan3d(long long depth, long long height, long long width, int volumes, const float* psf, int kd, int kh,
               int kw, const plan_options& options) {
  const bool have_cuda = options.device != backend::cpu && cuda_device_available();
  const bool cpu = options.device == backend::cpu || (options.device == backend::automatic && !have_cuda);
  problem3d p = make_problem3d(depth, height, width, volumes, psf, kd, kh, kw, options, cpu);
  if (options.device == backend::cuda && !have_cuda)
    throw std::invalid_argument("conv::plan3d: the CUDA backend was asked for but no CUDA device is present");
  impl_ = make_backend(std::move(p), cpu);
}

plan3d::~plan3d() = default;
plan3d::plan3d(plan3d&&) noexcept = default;
plan3d& plan3d::operator=(plan3d&&) noexcept = default;

void plan3d::execute_any(const void* in, void* out, int bytes, bool is_float) {
  if (!in || !out) throw std::invalid_argument("conv::plan3d::execute: null pointer");
  impl_->execute(in, out, pixel_of(bytes, is_float));
}

void plan3d::execute_device_any(const void* in, void* out, int bytes, bool is_float, cudaStream_t stream) {
  if (!in || !out) throw std::invalid_argument("conv::plan3d::execute_device: null pointer");
  impl_->execute_device(in, out, pixel_of(bytes, is_float), stream);
}

long long plan3d::output_depth() const { return impl_->prob.geo.out_d; }
long long plan3d::output_height() const { return impl_->prob.geo.out_h; }
long long plan3d::output_width() const { return impl_->prob.geo.out_w; }
int plan3d::volumes() const { return impl_->prob.volumes; }
backend plan3d::selected_backend() const { return impl_->kind(); }
cpu_method plan3d::method() const { return impl_->method(); }
cuda_path plan3d::path() const {
  if (impl_->kind() != backend::cuda) return cuda_path::automatic;
  return impl_->method() == cpu_method::separable ? cuda_path::separable : impl_->path();
}
plan3d::tile_shape plan3d::tile() const {
  return {impl_->prob.tiles.tile_d, impl_->prob.tiles.tile_h, impl_->prob.tiles.tile_w};
}

}  // namespace gpuconv::conv
