// Internal: what the plan hands its backends, and the backend interface.
#pragma once
#include <cmath>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <vector>

#include "plan.hpp"
#include "tile_map.hpp"

namespace gpuconv::conv {

// The element type of an execute call (conv::pixel: method.hpp).
inline pixel pixel_of(int bytes, bool is_float) {
  if (is_float) return pixel::f32;
  return bytes == 1 ? pixel::u8 : pixel::u16;
}

// Host conversions for the paths that compute in float buffers: narrow -> float, and float
// -> narrow rounded to nearest with ties to even (std::nearbyint in the default rounding
// mode, as OpenCV's cvRound) and saturated; NaN becomes 0, as on the GPU (pixel.cuh).
inline void to_float(const void* in, pixel p, std::size_t n, float* out) {
  if (p == pixel::u8)
    for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<const std::uint8_t*>(in)[i];
  else if (p == pixel::u16)
    for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<const std::uint16_t*>(in)[i];
  else
    for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<const float*>(in)[i];
}

template <typename T>
inline T saturate_round(float v) {
  constexpr float hi = std::is_same_v<T, std::uint8_t> ? 255.f : 65535.f;
  if (!(v == v)) return 0;
  const float r = std::nearbyint(v);
  return static_cast<T>(r < 0.f ? 0.f : (r > hi ? hi : r));
}

inline void from_float(const float* in, std::size_t n, pixel p, void* out) {
  if (p == pixel::u8)
    for (std::size_t i = 0; i < n; ++i) static_cast<std::uint8_t*>(out)[i] = saturate_round<std::uint8_t>(in[i]);
  else if (p == pixel::u16)
    for (std::size_t i = 0; i < n; ++i) static_cast<std::uint16_t*>(out)[i] = saturate_round<std::uint16_t>(in[i]);
  else
    for (std::size_t i = 0; i < n; ++i) static_cast<float*>(out)[i] = in[i];
}

// The map a call on pixels of type T runs with: for narrow types the constant boundary
// value is saturated to the type first, as OpenCV builds its border in the source type.
template <typename T>
tile_map map_for(tile_map m) {
  if constexpr (!std::is_same_v<T, float>) m.constant_value = float(saturate_round<T>(m.constant_value));
  return m;
}

struct problem {
  long long height, width;
  int planes;
  geometry geo;
  tiling tiles;
  tile_map map;
  std::vector<float> kernel;  // effective kernels (flipped for correlation), kernels x kh x kw
  int kh, kw;
  plan_options options;
  int kernels = 1;            // the bank's size

  // Sets the tiling and the index map that goes with it.
  void set_tiling(const tiling& t) {
    tiles = t;
    map = tile_map{height, width, geo.out_h, geo.out_w, kh, kw, geo.oy, geo.ox,
                   t.tile_h, t.tile_w, t.valid_h, t.valid_w, t.tiles_x, t.tiles_per_plane(),
                   options.semantics.border, options.semantics.constant_value,
                   planes * t.tiles_per_plane(), kernels};
  }
  long long total_tiles() const { return kernels * planes * tiles.tiles_per_plane(); }
  long long output_planes() const { return (long long)planes * kernels; }
  long long output_elements() const { return output_planes() * map.out_h * map.out_w; }
  long long input_elements() const { return planes * height * width; }
  // Kernel k zero-padded to one tile, scaled by 1/(tile_h*tile_w) so that the
  // unnormalised inverse FFT comes out normalised.
  std::vector<float> kernel_tile(int k) const {
    std::vector<float> t((std::size_t)tiles.tile_h * tiles.tile_w, 0.f);
    const float scale = 1.0f / (float(tiles.tile_h) * float(tiles.tile_w));
    const float* kk = kernel.data() + (std::size_t)k * kh * kw;
    for (int i = 0; i < kh; ++i)
      for (int j = 0; j < kw; ++j) t[(std::size_t)i * tiles.tile_w + j] = kk[(std::size_t)i * kw + j] * scale;
    return t;
  }
};

struct plan::impl {
  explicit impl(problem p) : prob(std::move(p)) {}
  virtual ~impl() = default;
  virtual backend kind() const = 0;
  virtual cuda_path path() const { return cuda_path::automatic; }
  virtual cpu_method method() const { return cpu_method::automatic; }
  virtual void execute(const void* in, void* out, pixel p) = 0;
  virtual void execute_device(const void*, void*, pixel, cudaStream_t) {
    throw std::invalid_argument("execute_device needs the CUDA backend");
  }
  problem prob;
};

std::unique_ptr<plan::impl> make_cuda_backend(problem p);
std::unique_ptr<plan::impl> make_cpu_backend(problem p);  // the method chosen by method.hpp
std::unique_ptr<plan::impl> make_cpu_direct(problem p);
std::unique_ptr<plan::impl> make_cpu_separable(problem p, rank1_factors f);

}  // namespace gpuconv::conv
