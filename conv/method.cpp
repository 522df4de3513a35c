#include "method.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "direct.hpp"
#include "separable.hpp"

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

rank1_3d_factors factor_rank1_3d(const float* k, int kd, int kh, int kw, double tolerance) {
  // kd x (kh kw) as column x row, then the row as kh x kw, each to half the tolerance: the row
  // is scaled by the largest entry (|row| <= 1), so depth x column x row stays within
  // tolerance x max |k| everywhere
  rank1_factors outer = factor_rank1(k, kd, kh * kw, tolerance / 2);
  rank1_3d_factors f;
  if (!outer.found()) return f;
  rank1_factors inner = factor_rank1(outer.row.data(), kh, kw, tolerance / 2);
  if (!inner.found()) return f;
  f.depth = std::move(outer.column);
  f.column = std::move(inner.column);
  f.row = std::move(inner.row);
  return f;
}

// ns per output pixel with 2 threads on the 2-core AVX-512 machine (gpuconv-bench-cpu --method
// and --tile, 4096^2 fp32, methods interleaved with OpenCV; only the ratios matter):
// direct 0.95 + 0.0157 per tap (K = 3..15); separable 0.26 + 0.0070 per tap, counting the
// row taps twice for the row pass over the kh - 1 extra rows of each band (K = 3..127; fitted
// within ~10% to the column pass of four rows a call, docs/benchmarks.md "Third round"; it was
// 0.5 + 0.0183 before); the
// FFT method ~0.155 ns per padded pixel and level of the tile's transform up to 128^2 tiles
// (0.14-0.16 measured on 64 and 128 tiles), 1.2x that at 256^2, 1.8x at 512^2 and 6x at
// 1024^2 as the tile's planes outgrow the L2 (1 MB), plus gather and scatter. The 512^2
// factor: 1.9-3.2x on the loaded machine of the first calibration; 1.6-1.75x once the
// machine was quiet (K = 127: 512^2 tiles 144 ms, 256^2 193 ms; K = 63: 119 and 91 ms).
double direct_ns_per_pixel(int kh, int kw) { return 0.95 + 0.0157 * kh * kw; }
double separable_ns_per_pixel(int kh, int kw) { return 0.26 + 0.0070 * (kh + 2.0 * kw); }
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

namespace {

// max_direct_taps (method.hpp): direct sums of more products in float lose more to rounding than
// the FFT's log-depth error (a 20 x 30 'valid' correlation to one pixel: 1.05e-6 rel against SciPy
// in double, the Python package's bound is 1e-6); the cost models pick direct beyond it only when
// forced (or, on the CPU, for tiny outputs, where the FFT's padding is costly but the time is small).
// max_cuda_direct_taps: the error of a float sum of n products grows as sqrt(n) (rounding errors of
// random sign), the FFT's as its log depth. Sequential float sums (multiply, then add: no FMA) over
// a random 128^2 image in [0, 1), against the same sums in double, relative L2, with the error of a
// float32 FFT convolution of the same image and kernel beside it (NumPy / SciPy, session 67):
//   taps          81      121     169     225     256     400     961
//   direct, k>0   1.4e-7  1.5e-7  1.8e-7  2.1e-7  2.2e-7  2.6e-7  4.2e-7   (FFT 0.9-1.2e-7)
//   direct, k+-   1.7e-7  1.9e-7  2.2e-7  3.1e-7  3.8e-7  2.6e-7  6.0e-7   (FFT 1.2-2.9e-7)
// so up to 256 taps the sums stay within 2-3x the FFT's error and under 0.4 of the 1e-6 bound (the
// GPU's direct method measured 2.0-3.0e-7 up to 16 x 16, its FFT paths 1.4-2.0e-7: the [gpu] test
// "GPU direct method's float sums ..."). On the GPU direct wins past 128 taps where transforms pad
// most (H100, session 67: 1024 x 64^2 dense K = 12 / 13 / 14 0.069 / 0.089 / 0.093 ms against fused
// 0.117 / 0.114 / 0.099; 1000 x 28^2 K = 12 0.027 against 0.033), and from K = 15 on no shape
// measured ran it fastest: max_cuda_direct_taps = 225. That was with reflect101; with a zero
// boundary the fused tiles on those shapes were faster (1024 x 64^2 K = 13 0.074 ms; 1000 x 28^2
// K = 13 0.024 against direct's 0.029), and the crossover there is not measured, so zero and
// constant boundaries kept 128 on the GPU too. The CPU keeps 128: its prices past that are not
// fitted. Session 69: the fused tiles' row tables (fused_tile.cuh) took most of the boundary
// rule's cost out of tiles that cross the image's edge, and the 80-tiles came (H100, reflect101:
// 1024 x 64^2 K = 13 fused 80-tiles 0.047 ms against direct 0.085, 1000 x 28^2 K = 12..15 fused
// 32-tiles 0.024 against direct 0.030-0.032), so the chooser keeps 128 taps for every boundary;
// autotune still times direct up to max_cuda_direct_taps.

// The bank's rank-1 factors (every kernel's, one after another), or none.
rank1_factors bank_factors(const std::vector<float>& kernels, int count, int kh, int kw) {
  std::vector<float> column, row;
  for (int k = 0; k < count; ++k) {
    rank1_factors f = factor_rank1(kernels.data() + (std::size_t)k * kh * kw, kh, kw);
    if (!f.found()) return {};
    column.insert(column.end(), f.column.begin(), f.column.end());
    row.insert(row.end(), f.row.begin(), f.row.end());
  }
  return {std::move(column), std::move(row)};
}

void require_rank1(const rank1_factors& f, const char* backend, int count, int kh, int kw) {
  if (!f.found())
    throw std::invalid_argument(std::string("conv::plan: the separable ") + backend + " method needs a rank-1 kernel; the " +
                                std::to_string(kh) + " x " + std::to_string(kw) + " kernel" +
                                (count > 1 ? "s of the bank are" : " is") + " not");
}

}  // namespace

cpu_choice choose_cpu_method(const std::vector<float>& kernels, int count, int kh, int kw, long long out_h,
                             long long out_w, cpu_method forced, int forced_tile) {
  cpu_choice c;
  if (forced == cpu_method::automatic || forced == cpu_method::separable) c.factors = bank_factors(kernels, count, kh, kw);
  if (forced == cpu_method::separable) require_rank1(c.factors, "CPU", count, kh, kw);
  if (forced == cpu_method::automatic || forced == cpu_method::fft)
    c.tiles = choose_cpu_tiling(out_h, out_w, kh, kw, forced_tile);
  auto price = [&](cpu_method m) {
    return m == cpu_method::direct      ? direct_ns_per_pixel(kh, kw)
           : m == cpu_method::separable ? separable_ns_per_pixel(kh, kw)
                                        : fft_ns_per_pixel(c.tiles);
  };
  auto take = [&](cpu_method m) { c.method = m, c.ns_per_pixel = price(m); };
  if (forced != cpu_method::automatic) {
    take(forced);
    return c;
  }
  take(cpu_method::fft);
  if ((long long)kh * kw <= max_direct_taps && price(cpu_method::direct) < c.ns_per_pixel) take(cpu_method::direct);
  if (c.factors.found() && price(cpu_method::separable) < c.ns_per_pixel) take(cpu_method::separable);
  return c;
}

double cuda_direct_ps_per_pixel(int kh, int kw) {
  const double kw4 = round4(kw);
  if (direct_unrolled(kh, kw)) {
    const double t = double(kh) * kw;
    return 3.33 + 2.22e-4 * t * t;
  }
  const double taps = kw == 1 ? 1.15 * kh : kh == 1 ? 1.1 * kw4 : 1.4 * kh * kw4;
  return 2.9 + 0.045 * taps;
}

double cuda_separable_ps_per_pixel(int kh, int kw, long long out_h, long long out_w, long long planes, int sms) {
  const bool tile = separable_tiles::uses_tile(kh, kw);
  const separable_tiles::tile_geometry block =
      tile ? separable_tiles::tile_geometry_for(out_h, out_w, kh, kw, planes, sms) : separable_tiles::tile_geometry{};
  const double kw4 = round4(kw), rows = tile ? block.tile_h : double(out_h);
  const double taps = 1.1 * kw4 * (rows + kh - 1) / rows + 1.15 * kh;
  // fitted to gpuconv-bench sweep on the H100 (rank-1 kernels on 4096^2 and 3 x 3000 x 4000): the
  // shared tile (session 21's loader and stores) 4.4 ps a pixel at K = 3, 4.7 at 7, 5.6 at 15,
  // 6.5 at 21, 6.9 at 25, and 14.1 at 31, where a block's tile (116 KB on 4096^2) leaves one
  // block a multiprocessor instead of two (228 KB of shared memory, 1 KB of it reserved a
  // block); the two passes through global memory 15.2 ps at K = 63, 25.2 at 127, 53 at 255.
  // That lone block is 8 warps there (64 rows); where one block holds a short plane's height
  // (100^2 images: 104 rows, 13 warps, 122-164 KB at K = 5..31) it ran at the direct method's
  // rate, not at 1.9x (256 x 100^2 rank-1, K = 9..31: 0.029-0.053 ms against direct 0.033-0.275
  // and fused 0.035-0.069; the factor sent K = 11..31 to fused at 1.13-1.47x), so the factor is
  // for blocks of fewer than 12 warps
  if (tile) {
    const bool lone = block.shared_bytes > 113 * 1024;
    return (4.0 + 0.040 * taps) * (lone && block.threads < 12 * 32 ? 1.9 : 1.0);
  }
  // rows narrower than 128 outputs: 1.03-2.8x that on 64^2 and 100^2 images at K = 47..255 (a
  // fifth more keeps the FFT passes, 0.41-0.60x the FMA passes' time there, K >= 127 on 1024 x 64^2).
  // Session 78 (H100): 0.92x the fit above (3.1 + 0.084 t). The passes at 4 rows a thread (session 76)
  // and the 5-6 chunk loaders ran 11.3-11.5 ps at K = 63 on 4096^2 and 3 x 3000 x 4000, 14.1-14.3 at
  // 81 (the old price: 15.2, 18.8), where the model took three-pass at K = 63 (0.237 / 0.463 ms
  // against the FMA passes' 0.193 / 0.407). Lower still (the large images' own fit, 3.0 + 0.065 t)
  // took the FMA passes on small planes with long kernels where the FFT passes ran 1.1-2.4x faster
  // (session 75's sweep: 64 x 256^2 K = 101..128, 1024 x 64^2 K = 161..191): replayed over this
  // session's sweeps and sessions 75-77's, 0.92 kept every one of those and gained 13 rows within 10%
  // of the fastest (299 -> 312 of 326), losing 1-2 of 236 on session 75's default sweeps.
  return (2.85 + 0.0773 * taps) * (out_w < 128 ? 1.2 : 1.0);
}

double cuda_box_ps_per_pixel(int kh, long long out_h) { return 7.5 * double(out_h + kh - 1) / double(out_h); }

bool box_factors(const rank1_factors& f, int count, int kh, int kw) {
  if (!f.found() || !separable_tiles::is_box_size(kh, kw)) return false;
  auto constant = [](const float* v, int n) { return std::all_of(v, v + n, [&](float x) { return x == v[0]; }); };
  for (int k = 0; k < count; ++k)
    if (!constant(f.column.data() + std::size_t(k) * kh, kh) || !constant(f.row.data() + std::size_t(k) * kw, kw))
      return false;
  return true;
}

tiling direct_tiling(long long out_h, long long out_w, int kh, int kw, int rows) {
  const window_shape s = window_shape_for(out_h, out_w, kh, kw, rows);
  return {s.tile_h + kh - 1, s.tile_w + kw - 1, s.tile_h, s.tile_w, s.tiles_y, s.tiles_x};
}

cuda_choice choose_cuda_method(const std::vector<float>& kernels, int count, int kh, int kw, long long out_h,
                               long long out_w, long long planes, cuda_path forced, int forced_tile, int sms,
                               bool by_rule) {
  const bool any = forced == cuda_path::automatic;
  const double outputs = double(planes) * count * out_h * out_w;
  // a block shape's waste: the threads' outputs over the output (1 for large images)
  auto waste = [&](int rows, int cols, int thread_rows = window_policy::rows_per_thread) {
    const tiling t = direct_tiling(out_h, out_w, rows, cols, thread_rows);
    return double(t.tiles_y * t.valid_h) * double(t.tiles_x * t.valid_w) / (double(out_h) * out_w);
  };
  cuda_choice best;
  best.cost_ps = INFINITY;
  if (any || forced == cuda_path::fused || forced == cuda_path::three_pass || forced == cuda_path::multipass) {
    const cuda_tiling f = choose_cuda_tiling(out_h, out_w, planes * count, kh, kw, forced, forced_tile, sms, by_rule);
    best.path = f.path;
    best.tiles = f.tiles;
    best.cost_ps = f.cost_ps;
    if (!any) return best;
    if (forced_tile > 0) return best;  // a forced tile is a request for an FFT path
  }
  if (forced == cuda_path::direct && !direct_tiles::supports(kh, kw))
    throw std::invalid_argument("the direct path cannot hold a " + std::to_string(kh) + " x " + std::to_string(kw) +
                                " kernel in its shared tile");
  if (forced == cuda_path::direct || (direct_tiles::supports(kh, kw) && (long long)kh * kw <= max_direct_taps)) {
    const int rows = window_rows_for(out_h, out_w, kh, kw, planes, sms);  // as direct_tiles::run (a launch a kernel)
    const double cost = cuda_direct_ps_per_pixel(kh, kw) * direct_plane_factor(out_w) * waste(kh, kw, rows) * outputs;
    if (forced == cuda_path::direct || cost < best.cost_ps)
      best = {cuda_path::direct, direct_tiling(out_h, out_w, kh, kw, rows), {}, cost};
  }
  if (any || forced == cuda_path::separable) {
    rank1_factors f = bank_factors(kernels, count, kh, kw);
    if (forced == cuda_path::separable) {
      require_rank1(f, "CUDA", count, kh, kw);
      if (!separable_tiles::supports(kh, kw))
        throw std::invalid_argument("the separable path cannot hold a " + std::to_string(kh) + " x " +
                                    std::to_string(kw) + " kernel's passes in its shared tile");
    }
    if (f.found() && separable_tiles::supports(kh, kw)) {
      const bool box = box_factors(f, count, kh, kw);
      const bool by_fft = separable_tiles::fft_passes(kh, kw, out_h, out_w, box);
      const bool tile = separable_tiles::uses_tile(kh, kw) && !by_fft;
      // (the small planes' factor here, not in cuda_separable_ps_per_pixel: fft_passes weighs the FFT
      // passes against that price, and on 28^2 planes at K = 33 they ran 0.110-0.112 ms against the FMA
      // passes' 0.040-0.042, reflect101)
      const double per_pixel = by_fft           ? separable_tiles::fft_passes_ps_per_pixel(kh, kw, out_h, out_w)
                               : !tile && box ? cuda_box_ps_per_pixel(kh, out_h)
                                              : cuda_separable_ps_per_pixel(kh, kw, out_h, out_w, planes, sms) *
                                                    separable_plane_factor(out_h, out_w);
      const double cost = per_pixel * (tile ? waste(kh, kw) : std::max(waste(1, kw), waste(kh, 1))) * outputs;
      if (forced == cuda_path::separable || cost < best.cost_ps)
        best = {cuda_path::separable, direct_tiling(out_h, out_w, kh, 1), std::move(f), cost};  // the column pass's blocks
    }
  }
  return best;
}

}  // namespace gpuconv::conv
