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
  // A bank of `kernels` kernels convolves every input plane with each of them. Tiles are
  // numbered kernel-major, g = (kernel * input planes + plane) * tiles_per_plane + tile, so
  // tiles_per_kernel = input planes * tiles_per_plane; output plane = plane * kernels + kernel.
  long long tiles_per_kernel;
  int kernels = 1;

  struct tile_at {
    long long kernel, plane, ty, tx;
  };
  HOST_DEVICE GPUCONV_INLINE tile_at locate(long long g) const {
    const long long k = kernels == 1 ? 0 : g / tiles_per_kernel, r = g - k * tiles_per_kernel;  // (64-bit divisions are slow)
    const long long plane = r / tiles_per_plane, t = r - plane * tiles_per_plane;
    const long long ty = t / tiles_x;
    return {k, plane, ty, t - ty * tiles_x};
  }

  // Value of tile element (u, v) of global tile g from the input planes at `in`.
  template <typename in_t>
  HOST_DEVICE GPUCONV_INLINE float gather(const in_t* in, long long g, int u, int v) const {
    const tile_at at = locate(g);
    const int r = border_index(at.ty * valid_h + u + oy - (kh - 1), (int)height, border);
    const int c = border_index(at.tx * valid_w + v + ox - (kw - 1), (int)width, border);
    if (r < 0 || c < 0) return border == boundary::zero ? 0.f : constant_value;
    return static_cast<float>(in[(at.plane * height + r) * width + c]);
  }

  // Output index written by valid element (a, b) of global tile g, or -1 past the edge;
  // the value sits at tile element (a + kh - 1, b + kw - 1).
  HOST_DEVICE GPUCONV_INLINE long long output_index(long long g, int a, int b) const {
    const tile_at at = locate(g);
    const long long y = at.ty * valid_h + a, x = at.tx * valid_w + b;
    if (y >= out_h || x >= out_w) return -1;
    return ((at.plane * kernels + at.kernel) * out_h + y) * out_w + x;
  }
};

}  // namespace gpuconv::conv
