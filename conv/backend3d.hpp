// Internal: what plan3d hands its backends (the validated problem, its tiling and index
// maps), and the backend interface. The 3D twin of backend.hpp, whose pixel conversions it
// shares.
#pragma once
#include <algorithm>
#include <memory>
#include <thread>
#include <vector>

#include "backend.hpp"
#include "plan3d.hpp"
#include "semantics3d.hpp"
#include "tile_map3d.hpp"

namespace gpuconv::conv {

struct problem3d {
  long long depth, height, width;
  int volumes;
  geometry3d geo;
  tiling3d tiles;
  std::vector<float> kernel;  // the effective kernel (flipped for correlation), kd x kh x kw
  int kd, kh, kw;
  plan_options options;

  long long input_voxels() const { return depth * height * width; }    // per volume
  long long output_voxels() const { return geo.out_d * geo.out_h * geo.out_w; }  // per volume

  // The map of a unit covering output slices [z_first, z_end) (whole tile layers from z_first),
  // reading slabs of slab_depth slices per volume (tile_map3d).
  tile_map3d map(long long z_first, long long z_end, long long slab_first, long long slab_depth, bool extended) const {
    const long long layers = (z_end - z_first + tiles.valid_d - 1) / tiles.valid_d;
    return tile_map3d{depth, height, width, geo.out_d, geo.out_h, geo.out_w, kd, kh, kw, geo.oz, geo.oy, geo.ox,
                      tiles.tile_d, tiles.tile_h, tiles.tile_w, tiles.valid_d, tiles.valid_h,
                      tiles.valid_w, tiles.tiles_y, tiles.tiles_x, layers, options.semantics.border,
                      options.semantics.constant_value, z_first, z_end, slab_first, slab_depth, extended};
  }
  // The whole output of every volume at once, the input volumes as they are.
  tile_map3d whole_map() const { return map(0, geo.out_d, 0, depth, false); }

  // The kernel zero-padded to one tile ([tile_d][tile_h][tile_w]), scaled by 1/(tile voxels)
  // so that the unnormalised inverse comes out normalised.
  std::vector<float> kernel_tile() const {
    std::vector<float> t((std::size_t)tiles.tile_voxels(), 0.f);
    const float scale = float(1.0 / double(tiles.tile_voxels()));
    for (int l = 0; l < kd; ++l)
      for (int i = 0; i < kh; ++i)
        for (int j = 0; j < kw; ++j)
          t[((std::size_t)l * tiles.tile_h + i) * tiles.tile_w + j] = kernel[((std::size_t)l * kh + i) * kw + j] * scale;
    return t;
  }
};

// A band of output slices [z0, z1) of one volume (z0 on a tile layer boundary): its map and
// the slab it reads, slab slice j being in_ext's slice slab_first + j = source slice
// slices[j], or the outside value where slices[j] < 0 (zero/constant boundaries). The slab
// holds z1 - z0 + kd - 1 slices: every slice the band's outputs reach.
struct band3d {
  tile_map3d map;
  std::vector<int> slices;
};

inline band3d make_band(const problem3d& p, long long z0, long long z1) {
  const long long first = z0 + p.geo.oz - (p.kd - 1), count = z1 - z0 + p.kd - 1;
  band3d b{p.map(z0, z1, first, count, true), std::vector<int>((std::size_t)count)};
  for (long long j = 0; j < count; ++j) b.slices[j] = border_index(first + j, (int)p.depth, p.options.semantics.border);
  return b;
}

// The outside value for zero/constant boundaries in the pixel type's range (narrow types:
// the constant saturated to the type first, as the 2D plan does).
inline float outside_value3d(const options& s, pixel px) {
  if (s.border == boundary::zero) return 0.f;
  return px == pixel::u8 ? float(saturate_round<std::uint8_t>(s.constant_value))
         : px == pixel::u16 ? float(saturate_round<std::uint16_t>(s.constant_value)) : s.constant_value;
}

// The CPU backend's threads: plan_options::threads, or every core.
inline int cpu_threads(const problem3d& p) {
  return p.options.threads > 0 ? p.options.threads : (int)std::max(1u, std::thread::hardware_concurrency());
}

// An elementwise step of Richardson-Lucy (deconvolve.hpp, rl_steps.hpp) folded into the store
// of a float execution on device buffers, so that the convolution's result is not written and
// read again: out[i] = rl::ratio(aux[i], sum, epsilon * *max_y) (ratio) or rl::next(aux[i],
// sum, 1) (update), aux indexed as out and not overlapping it. The same float operations on the
// same sums as the separate kernels (deconvolve.cu): the results are bit-identical.
struct store_step {
  enum class kind { ratio, update };
  kind what = kind::ratio;
  const float* aux = nullptr;
  const float* max_y = nullptr;  // ratio: one float on the device
  float epsilon = 0;
};

struct plan3d::impl {
  explicit impl(problem3d p) : prob(std::move(p)) {}
  virtual ~impl() = default;
  virtual backend kind() const = 0;
  virtual cpu_method method() const { return cpu_method::automatic; }
  virtual cuda_path path() const { return cuda_path::automatic; }  // the CUDA FFT tiles' route
  virtual void execute(const void* in, void* out, pixel p) = 0;
  virtual void execute_device(const void*, void*, pixel, cudaStream_t) {
    throw std::invalid_argument("conv::plan3d::execute_device needs the CUDA backend");
  }
  // execute_device on floats with `step` folded into the store; false (nothing done) where the
  // method cannot fold it (the caller then runs execute_device and the step's own kernel).
  virtual bool execute_device_step(const float*, float*, const store_step&, cudaStream_t) { return false; }
  problem3d prob;
};

struct plan3d_access {
  static plan3d::impl& of(plan3d& p) { return *p.impl_; }
};

std::unique_ptr<plan3d::impl> make_cpu3d_backend(problem3d p);
std::unique_ptr<plan3d::impl> make_cuda3d_backend(problem3d p);
// Seconds the CPU backend's direct or FFT method (whichever make_cpu3d_backend takes) is
// expected to take for one execute of p on `threads` threads (cpu3d.cpp).
double cpu3d_seconds(const problem3d& p, int threads);

}  // namespace gpuconv::conv
