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

// ns per output pixel with 2 threads on the 2-core AVX-512 machine under load (gpuconv-bench-cpu
// --method, 4096^2 fp32; only the ratios matter): direct 0.7 + 0.06 per tap (K = 3..31);
// separable 1.3 + 0.062 per tap, counting the column taps twice for the row pass over the
// kh - 1 extra rows of each band (K = 3..127); the FFT method ~3.3 per level of the tile's
// transform and padded pixel (512^2 tiles at K = 63).
double direct_ns_per_pixel(int kh, int kw) { return 0.7 + 0.06 * kh * kw; }
double separable_ns_per_pixel(int kh, int kw) { return 1.3 + 0.062 * (kh + 2.0 * kw); }
double fft_ns_per_pixel(int tile_h, int tile_w, int valid_h, int valid_w) {
  const double padding = double(tile_h) * tile_w / (double(valid_h) * valid_w);
  return 3.3 * padding * std::log2(double(tile_h) * tile_w) + 1.0;
}

cpu_choice choose_cpu_method(const std::vector<float>& kernels, int count, int kh, int kw, int tile_h, int tile_w,
                             int valid_h, int valid_w, cpu_method forced) {
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
  if (forced != cpu_method::automatic) {
    c.method = forced;
    return c;
  }
  double best = fft_ns_per_pixel(tile_h, tile_w, valid_h, valid_w);
  c.method = cpu_method::fft;
  if (const double d = direct_ns_per_pixel(kh, kw); d < best) best = d, c.method = cpu_method::direct;
  if (c.factors.found())
    if (const double s = separable_ns_per_pixel(kh, kw); s < best) best = s, c.method = cpu_method::separable;
  return c;
}

}  // namespace gpuconv::conv
