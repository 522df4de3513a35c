#include "method.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace gpuconv::conv {

rank1_factors factor_rank1(const float* k, int kh, int kw, double tolerance) {
  // the largest entry's row and column carry the factors: k(i, j) = k(i, q) k(p, j) / k(p, q)
  int p = 0, q = 0;
  double peak = 0;
  for (int i = 0; i < kh; ++i)
    for (int j = 0; j < kw; ++j)
      if (std::abs(k[i * kw + j]) > peak) peak = std::abs(k[i * kw + j]), p = i, q = j;
  rank1_factors f;
  if (peak == 0) return f;  // an all-zero kernel: nothing to gain
  std::vector<float> column(kh), row(kw);
  for (int i = 0; i < kh; ++i) column[i] = k[i * kw + q];
  for (int j = 0; j < kw; ++j) row[j] = float(double(k[p * kw + j]) / k[p * kw + q]);
  for (int i = 0; i < kh; ++i)
    for (int j = 0; j < kw; ++j)
      if (std::abs(double(column[i]) * row[j] - k[i * kw + j]) > tolerance * peak) return f;
  f.column = std::move(column);
  f.row = std::move(row);
  return f;
}

// ns per output pixel with 2 threads on the 2-core AVX-512 machine (gpuconv-bench-cpu --method
// and --tile, 4096^2 fp32, methods interleaved with OpenCV; only the ratios matter):
// direct 0.95 + 0.0157 per tap (K = 3..15); separable 0.5 + 0.0183 per tap, counting the
// row taps twice for the row pass over the kh - 1 extra rows of each band (K = 3..127); the
// FFT method ~0.155 ns per padded pixel and level of the tile's transform up to 128^2 tiles
// (0.14-0.16 measured on 64 and 128 tiles), 1.2x that at 256^2, 1.8x at 512^2 and 6x at
// 1024^2 as the tile's planes outgrow the L2 (1 MB), plus gather and scatter. The 512^2
// factor: 1.9-3.2x on the loaded machine of the first calibration; 1.6-1.75x once the
// machine was quiet (K = 127: 512^2 tiles 144 ms, 256^2 193 ms; K = 63: 119 and 91 ms).
double direct_ns_per_pixel(int kh, int kw) { return 0.95 + 0.0157 * kh * kw; }
double separable_ns_per_pixel(int kh, int kw) { return 0.5 + 0.0183 * (kh + 2.0 * kw); }
double fft_ns_per_pixel(const tiling& t) {
  const double area = double(t.tile_h) * t.tile_w;
  const double padding = area / (double(t.valid_h) * t.valid_w);
  const double cache = area <= 16384    ? 1
                       : area <= 65536  ? 1.2
                       : area <= 262144 ? 1.8
                                        : 6 * std::pow(3.0, std::log2(area / 1048576) / 2);
  return 0.155 * std::log2(area) * cache * padding + 0.5;
}

tiling choose_cpu_tiling(long long out_h, long long out_w, int kh, int kw, int forced) {
  constexpr int min_tile = 16, max_tile = 4096;
  if (forced > 0) return choose_tiling(out_h, out_w, kh, kw, min_tile, max_tile, forced);
  tiling best;
  double best_cost = INFINITY;
  for (int t = std::max<int>(min_tile, (int)next_pow2(std::max(kh, kw))); t <= max_tile; t *= 2) {
    const tiling c = choose_tiling(out_h, out_w, kh, kw, t, t);
    const double cost = fft_ns_per_pixel(c) * double(c.valid_h) * c.valid_w * c.tiles_per_plane();
    if (cost < best_cost) best_cost = cost, best = c;
    if (c.tile_h >= out_h + kh - 1 && c.tile_w >= out_w + kw - 1) break;  // one tile holds the plane
  }
  return best;
}

cpu_choice choose_cpu_method(const std::vector<float>& kernels, int count, int kh, int kw, long long out_h,
                             long long out_w, cpu_method forced, int forced_tile) {
  cpu_choice c;
  const bool may_separate = forced == cpu_method::automatic || forced == cpu_method::separable;
  if (may_separate) {
    std::vector<float> column, row;
    bool all = true;
    for (int k = 0; k < count && all; ++k) {
      rank1_factors f = factor_rank1(kernels.data() + (std::size_t)k * kh * kw, kh, kw);
      all = f.found();
      column.insert(column.end(), f.column.begin(), f.column.end());
      row.insert(row.end(), f.row.begin(), f.row.end());
    }
    if (all) c.factors = {std::move(column), std::move(row)};
  }
  if (forced == cpu_method::separable && !c.factors.found())
    throw std::invalid_argument("conv::plan: the separable CPU method needs a rank-1 kernel; the " +
                                std::to_string(kh) + " x " + std::to_string(kw) + " kernel" +
                                (count > 1 ? "s of the bank are" : " is") + " not");
  if (forced == cpu_method::automatic || forced == cpu_method::fft)
    c.tiles = choose_cpu_tiling(out_h, out_w, kh, kw, forced_tile);
  if (forced != cpu_method::automatic) {
    c.method = forced;
    return c;
  }
  double best = fft_ns_per_pixel(c.tiles);
  c.method = cpu_method::fft;
  // Direct sums of more than max_direct_taps products in float lose more to rounding than the FFT's
  // log-depth error (a 20 x 30 'valid' correlation to one pixel: 1.05e-6 rel against SciPy in double,
  // the Python package's bound is 1e-6); the cost model picks direct beyond it only for tiny outputs,
  // where the FFT's padding is costly but the time is small anyway.
  constexpr long long max_direct_taps = 128;
  if (const double d = direct_ns_per_pixel(kh, kw); d < best && (long long)kh * kw <= max_direct_taps)
    best = d, c.method = cpu_method::direct;
  if (c.factors.found())
    if (const double s = separable_ns_per_pixel(kh, kw); s < best) best = s, c.method = cpu_method::separable;
  return c;
}

}  // namespace gpuconv::conv
