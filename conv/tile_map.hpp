// Index maps between images and overlap-save tiles (see tiling.hpp), shared by the CUDA
// kernels and the CPU backend so that both compute exactly the same function.
#pragma once
#include "semantics.hpp"
#include "tiling.hpp"

namespace gpuconv::conv {

struct tile_map {
  long long height, width;          // input plane
  long long out_h, out_w;           // output plane
  int kh, kw, oy, ox;               // kernel and geometry offsets
  int tile_h, tile_w, valid_h, valid_w;
  long long tiles_x, tiles_per_plane;
  boundary border;
  float constant_value;

  // Value of tile element (u, v) of global tile g (plane-major) from the planes at `in`.
  template <typename in_t>
  HOST_DEVICE GPUCONV_INLINE float gather(const in_t* in, long long g, int u, int v) const {
    const long long plane = g / tiles_per_plane, t = g - plane * tiles_per_plane;
    const long long ty = t / tiles_x, tx = t - ty * tiles_x;
    const int r = border_index(ty * valid_h + u + oy - (kh - 1), (int)height, border);
    const int c = border_index(tx * valid_w + v + ox - (kw - 1), (int)width, border);
    if (r < 0 || c < 0) return border == boundary::zero ? 0.f : constant_value;
    return static_cast<float>(in[(plane * height + r) * width + c]);
  }

  // Output index written by valid element (a, b) of global tile g, or -1 past the edge;
  // the value sits at tile element (a + kh - 1, b + kw - 1).
  HOST_DEVICE GPUCONV_INLINE long long output_index(long long g, int a, int b) const {
    const long long plane = g / tiles_per_plane, t = g - plane * tiles_per_plane;
    const long long ty = t / tiles_x, tx = t - ty * tiles_x;
    const long long y = ty * valid_h + a, x = tx * valid_w + b;
    if (y >= out_h || x >= out_w) return -1;
    return (plane * out_h + y) * out_w + x;
  }
};

}  // namespace gpuconv::conv
