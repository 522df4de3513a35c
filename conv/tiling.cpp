#include "tiling.hpp"

#include <cmath>
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

}  // namespace

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
      const double pixels = double(ty) * tx * th * tw;
      const double cost = pixels * (8.0 + std::log2(double(th) * tw));
      if (cost < best_cost) {
        best_cost = cost;
        best = {th, tw, vh, vw, ty, tx};
      }
    }
  return best;
}

}  // namespace gpuconv::conv
