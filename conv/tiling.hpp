// Overlap-save tiling of a convolution onto power-of-two FFT tiles.
//
// With (oy, ox) the geometry offsets, out(y,x) = sum_{i,j} k(i,j) in_ext(y+oy-i, x+ox-j).
// A tile of th x tw extended-input pixels starting at output (y0, x0) holds
//   tile(u, v) = in_ext(y0 + u + oy - (kh-1), x0 + v + ox - (kw-1)).
// Its circular convolution with the kernel zero-padded to th x tw equals the linear one
// wherever no index wraps, i.e. for u >= kh-1 and v >= kw-1:
//   out(y0 + u - (kh-1), x0 + v - (kw-1)) = (tile (*) k)(u, v),
// so each tile yields (th-kh+1) x (tw-kw+1) outputs. Tiles are chosen per kernel size by a
// cost model: the padded pixels processed, weighted by the log of the tile's FFT size.
#pragma once
#include <cstdint>

#include "fft/thread/config.hpp"

namespace gpuconv::conv {

struct tiling {
  int tile_h = 0, tile_w = 0;    // FFT tile, powers of two
  int valid_h = 0, valid_w = 0;  // outputs per tile: tile - kernel + 1
  long long tiles_y = 0, tiles_x = 0;
  long long tiles_per_plane() const { return tiles_y * tiles_x; }
};

// Smallest power of two >= v (v >= 1).
constexpr long long next_pow2(long long v) {
  long long p = 1;
  while (p < v) p <<= 1;
  return p;
}

// Picks tile_h x tile_w in [min_tile, max_tile] for an out_h x out_w output and a kh x kw
// kernel; forced > 0 asks for that square tile (rounded up to cover the kernel).
tiling choose_tiling(long long out_h, long long out_w, int kh, int kw, int min_tile, int max_tile, int forced = 0);

// Relative cost of a tiling: padded pixels processed, weighted by the log of the tile's
// FFT size plus a constant for the loads and stores, times `weight`.
double tiling_cost(const tiling& t, long long planes, double weight);

// The CUDA backend's choice between the fused kernel (square tiles of 32, 64 or 128, two
// tiles per block, so the tile count is rounded up to even) and the multi-pass pipeline.
// A padded pixel through the multi-pass pipeline costs multipass_weight times one through
// the fused kernel (its seven passes over device memory against one on-chip pass);
// measured on the H100: docs/benchmarks.md.
struct cuda_tiling {
  tiling tiles;
  bool fused = false;
};
constexpr double multipass_weight = 6.0;
// want_fused / want_multipass force one path (plan_options::path); forced > 0 asks for that
// square tile (rounded up to cover the kernel). Throws std::invalid_argument when the fused
// path is forced but cannot hold the kernel.
cuda_tiling choose_cuda_tiling(long long out_h, long long out_w, long long planes, int kh, int kw, bool want_fused,
                               bool want_multipass, int forced = 0);

}  // namespace gpuconv::conv
