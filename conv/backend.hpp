// Internal: what the plan hands its backends, and the backend interface.
#pragma once
#include <memory>
#include <stdexcept>
#include <vector>

#include "plan.hpp"
#include "tile_map.hpp"

namespace gpuconv::conv {

struct problem {
  long long height, width;
  int planes;
  tiling tiles;
  tile_map map;
  std::vector<float> kernel;  // effective (flipped for correlation), kh x kw
  plan_options options;
  long long total_tiles() const { return planes * tiles.tiles_per_plane(); }
  long long output_elements() const { return planes * map.out_h * map.out_w; }
  long long input_elements() const { return planes * height * width; }
  // The kernel zero-padded to one tile, scaled by 1/(tile_h*tile_w) so that the
  // unnormalised inverse FFT comes out normalised.
  std::vector<float> kernel_tile() const {
    std::vector<float> t((std::size_t)tiles.tile_h * tiles.tile_w, 0.f);
    const float scale = 1.0f / (float(tiles.tile_h) * float(tiles.tile_w));
    for (int i = 0; i < map.kh; ++i)
      for (int j = 0; j < map.kw; ++j) t[(std::size_t)i * tiles.tile_w + j] = kernel[(std::size_t)i * map.kw + j] * scale;
    return t;
  }
};

struct plan::impl {
  explicit impl(problem p) : prob(std::move(p)) {}
  virtual ~impl() = default;
  virtual backend kind() const = 0;
  virtual void execute(const float* in, float* out) = 0;
  virtual void execute_device(const float*, float*, cudaStream_t) {
    throw std::invalid_argument("execute_device needs the CUDA backend");
  }
  problem prob;
};

std::unique_ptr<plan::impl> make_cuda_backend(problem p);
std::unique_ptr<plan::impl> make_cpu_backend(problem p);

}  // namespace gpuconv::conv
