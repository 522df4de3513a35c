#include "tiling.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <stdexcept>
#include <string>

namespace gpuconv::conv {

namespace {

// Candidate tile sides along one axis: powers of two covering the kernel, no larger than
// one tile holding the whole axis.
void side_range(long long out, int k, int min_tile, int max_tile, int& lo, int& hi) {
  lo = (int)std::max<long long>(min_tile, next_pow2(k));
  hi = (int)std::min<long long>(max_tile, std::max<long long>(lo, next_pow2(out + k - 1)));
  if (lo > max_tile)
    throw std::invalid_argument("kernel side " + std::to_string(k) + " needs a tile larger than " +
                                std::to_string(max_tile));
}

// Relative cost of a tiling: padded pixels processed, weighted by the log of the tile's
// FFT size plus a constant for the loads and stores.
double tiling_cost(const tiling& t) {
  const double pixels = double(t.tiles_per_plane()) * t.tile_h * t.tile_w;
  return pixels * (8.0 + std::log2(double(t.tile_h) * t.tile_w));
}

// GPUCONV_FUSED_80=0: the mixed fused side not allowed from the start
bool mixed_from_environment() {
  const char* e = std::getenv("GPUCONV_FUSED_80");
  return !(e && e[0] == '0' && !e[1]);
}
std::atomic<bool> mixed_allowed{mixed_from_environment()};

}  // namespace

void allow_mixed_fused_tiles(bool allowed) { mixed_allowed = allowed; }
bool mixed_fused_tiles_allowed() { return mixed_allowed; }

tiling choose_tiling(long long out_h, long long out_w, int kh, int kw, int min_tile, int max_tile, int forced) {
  int lo_h, hi_h, lo_w, hi_w;
  side_range(out_h, kh, min_tile, max_tile, lo_h, hi_h);
  side_range(out_w, kw, min_tile, max_tile, lo_w, hi_w);
  if (forced > 0) {
    const long long f = next_pow2(forced);
    lo_h = hi_h = (int)std::min<long long>(max_tile, std::max<long long>(lo_h, f));
    lo_w = hi_w = (int)std::min<long long>(max_tile, std::max<long long>(lo_w, f));
  }
  tiling best;
  double best_cost = std::numeric_limits<double>::infinity();
  for (int th = lo_h; th <= hi_h; th *= 2)
    for (int tw = lo_w; tw <= hi_w; tw *= 2) {
      const int vh = th - kh + 1, vw = tw - kw + 1;
      const long long ty = (out_h + vh - 1) / vh, tx = (out_w + vw - 1) / vw;
      const tiling candidate{th, tw, vh, vw, ty, tx};
      const double cost = tiling_cost(candidate);
      if (cost < best_cost) {
        best_cost = cost;
        best = candidate;
      }
    }
  return best;
}

tiling square_tiling(long long out_h, long long out_w, int kh, int kw, int tile) {
  const int vh = tile - kh + 1, vw = tile - kw + 1;
  if (vh < 1 || vw < 1)
    throw std::invalid_argument("kernel " + std::to_string(kh) + " x " + std::to_string(kw) + " does not fit a " +
                                std::to_string(tile) + " tile");
  return {tile, tile, vh, vw, (out_h + vh - 1) / vh, (out_w + vw - 1) / vw};
}

double multipass_ps_per_pixel(const tiling& t) { return 1.4 * (8.0 + std::log2(double(t.tile_h) * t.tile_w)); }

cuda_tiling choose_cuda_tiling(long long out_h, long long out_w, long long planes, int kh, int kw, cuda_path path,
                               int forced, int sms, bool by_rule) {
  constexpr int fused_max = 128, three_min = 256, three_max = 1024, multi_min = 16, multi_max = 4096;
  const bool any = path == cuda_path::automatic;
  cuda_tiling best;
  double best_cost = std::numeric_limits<double>::infinity();
  const int side = std::max(kh, kw);
  // the square tiles of the fused or three-pass path (`sides`, ascending) that hold the kernel,
  // priced by `cost`; forced: the first of them at least that large alone
  auto square_tiles = [&](const auto& sides, cuda_path kind, auto cost) {
    bool found = false;
    for (const int t : sides) {
      if (t < side || t < forced || (kind == cuda_path::fused && !fused_side_in_use(t))) continue;
      const tiling c = square_tiling(out_h, out_w, kh, kw, t);
      const long long tiles = planes * c.tiles_per_plane();
      if (tiles >= (1LL << 31)) continue;  // the kernels index tiles in 32 bits
      found = true;
      const double v = cost(t, tiles, c);
      if (v < best_cost) {
        best_cost = v;
        best = {c, kind};
      }
      if (forced > 0) break;
    }
    return found;
  };
  if (any || path == cuda_path::fused) {
    const bool found = square_tiles(fused_tile_sides, cuda_path::fused, [&](int t, long long tiles, const tiling& c) {
      const long long pairs = (tiles + 1) / 2;
      // the busiest multiprocessor's pairs over the average (>= 1): the kernels are issue-bound
      // on a multiprocessor, so its pairs cost about the same side by side or in a last wave of
      // fewer blocks, and what a short batch wastes is the uneven share, not that wave's empty
      // block slots (counting those sent 256 x 100^2 at K = 15 to 128-tiles, 0.047-0.051 ms on
      // the H100, where 64-tiles ran 0.033-0.035)
      const double share = pair_share(pairs, sms);
      // input past the image's edges through a boundary rule that reads the image, as the
      // three-pass tiles' below (H100, session 67, reflect101: 1024 x 64^2 on 32-tiles, half their
      // input outside, ran 1.4-1.95x this price without it and direct 1.3-1.9x its own, so dense
      // K = 13 chose fused at 0.114 ms against direct's 0.089; with a zero boundary the same fused
      // tiles took 0.074)
      // (the 64- and 128-tiles: whatever the boundary, and their outputs' DRAM traffic priced apart)
      const double outside = outside_share(c, out_h, out_w);
      const fused_price price = fused_tile_price(t);
      return price.per_pixel * (1.0 + price.outside_term(by_rule, outside)) * double(2 * pairs) * t * t * share +
             price.per_output * double(planes) * double(out_h) * double(out_w);
    });
    if (path == cuda_path::fused && !found)
      throw std::invalid_argument("the fused kernel needs a kernel side <= " + std::to_string(fused_max) +
                                  (forced > 0 ? " and a tile of 32, 64, 80 or 128" : "") + "; kernel is " +
                                  std::to_string(kh) + " x " + std::to_string(kw));
  }
  if (any || path == cuda_path::three_pass) {
    constexpr int three_sides[] = {three_min, 2 * three_min, three_max};
    const bool found = square_tiles(three_sides, cuda_path::three_pass, [&](int t, long long tiles, const tiling& c) {
      // the tiles' input pixels past the image's edges (small images on large tiles) load through
      // the boundary rule, ~a quarter dearer than interior ones (H100: 64^2 .. 256^2 images
      // 1.1-1.3x the price without it, 4096^2 and 3000 x 4000 0.9-1.1x)
      // and, as the fused price, the busiest multiprocessor's share of the pairs, to the power 1/4:
      // its passes are not one block a pair, but a short grid still ends unevenly (H100, session
      // 70: 4096^2 on 256-tiles, 145-181 pairs, ran 1.07-1.18x the price without it, 3 x 3000 x
      // 4000's 378-726 pairs 1.0-1.1x; with it 4096^2 K = 27 takes the fused 128-tiles, 0.170 ms
      // against three-pass 0.187)
      const double outside = outside_share(c, out_h, out_w);
      const long long pairs = (tiles + 1) / 2;
      return three_pass_ps_per_pixel(t, kh) * (1.0 + 0.25 * outside) * double(2 * pairs) * t * t *
             std::pow(pair_share(pairs, sms), 0.25);
    });
    if (path == cuda_path::three_pass && !found)
      throw std::invalid_argument("the three-pass path needs a kernel side <= " + std::to_string(three_max) +
                                  (forced > 0 ? " and a tile of 256, 512 or 1024" : "") + "; kernel is " +
                                  std::to_string(kh) + " x " + std::to_string(kw));
  }
  if (any || path == cuda_path::multipass) {
    const tiling c = choose_tiling(out_h, out_w, kh, kw, multi_min, multi_max, forced);
    const double cost = multipass_ps_per_pixel(c) * double(planes) * c.tiles_per_plane() * c.tile_h * c.tile_w;
    if (cost < best_cost) best = {c, cuda_path::multipass}, best_cost = cost;
  }
  best.cost_ps = best_cost;
  return best;
}

}  // namespace gpuconv::conv
