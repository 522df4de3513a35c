// Row machinery shared by the CPU backend's direct and separable methods: a plane is cut
// into units of (band of output rows) x (strip of output columns); a unit builds the
// extended source rows it needs in float (the boundary rule applied once per row, the
// pixel type converted on the way in, so uint8/uint16 images need no float copy), filters
// them with taps_rows, and stores rounded and saturated rows for narrow types.
//
// Extended row of source row r for output columns [x0, x0 + n):
//   ext[t] = in_ext(r, x0 + t + ox - (kw - 1)),  t < n + kw - 1,
// so that out(y, x0 + t) = sum_{i, j} k(i, j) ext_{y + oy - i}[t + kw - 1 - j].
#pragma once
#include <limits>
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "backend.hpp"
#include "cpu_pool.hpp"
#include "../fft/host/line_vector.hpp"

namespace gpuconv::conv {

using fft::host::line_vector;

// out[t] = sum_{i < kh, j < kw} k[i * kw + j] * rows[i][t + kw - 1 - j] for t < n: the one
// inner loop of both methods (direct: all taps; separable: kh = 1 for the row pass, kw = 1
// for the column pass). Vectorised along t, compiled per ISA with run-time dispatch.
void taps_rows(const float* const* rows, const float* k, int kh, int kw, long long n, float* out);
// The same sums stored as narrow pixels, rounded half to even and saturated (saturate_round's
// function, NaN to 0) in the same loop: no float row in between.
void taps_rows(const float* const* rows, const float* k, int kh, int kw, long long n, std::uint8_t* out);
void taps_rows(const float* const* rows, const float* k, int kh, int kw, long long n, std::uint16_t* out);

// The separable method's column pass for `count` (1..column_block) consecutive output rows
// in one call: rows[m] for m < kh + count - 1 are the filtered rows newest first, and output
// row j (top to bottom, at out + j * out_stride) is taps_rows(rows + count - 1 - j, k, kh, 1)
// to the bit. Each row is loaded once for up to column_block outputs (in registers; see
// cpu_rows.cpp, column_any_width).
constexpr int column_block = 8;
void column_rows(const float* const* rows, const float* k, int kh, int count, long long n, float* out,
                 long long out_stride);
void column_rows(const float* const* rows, const float* k, int kh, int count, long long n, std::uint8_t* out,
                 long long out_stride);
void column_rows(const float* const* rows, const float* k, int kh, int count, long long n, std::uint16_t* out,
                 long long out_stride);

// The separable method's row pass: out[t] = sum_{j < kw} k[j] * float(src[t + kw - 1 - j]) for
// t < n, to the bit taps_rows(&row, k, 1, kw, n, out) on the widened row (same tap order).
// src[t] must be readable for -row_taps_pad <= t < n + kw - 1 (the values before 0 are read
// but unused): on AVX-512 each 16-value block of the row is loaded once per 16 taps (widened
// from uint8/uint16 in registers) and the shifted windows are built with valignd, ~kw / 16 + 1
// loads per 16 V outputs instead of kw V; elsewhere the row is widened and taps_rows runs.
constexpr int row_taps_pad = 16;
void row_taps(const float* src, const float* k, int kw, long long n, float* out);
void row_taps(const std::uint8_t* src, const float* k, int kw, long long n, float* out);
void row_taps(const std::uint16_t* src, const float* k, int kw, long long n, float* out);

// The separable method's row pass on row_group rows at once, where row_group_available() (the
// host has AVX-512; elsewhere the caller runs row_taps on each row): out[r][t] = row_taps's sum
// for src[r], to the bit, for r < row_group and t < n (n >= 16); src[r][t] must be readable for
// 0 <= t < n + kw - 1.
// The rows are transposed in 16 x 16 blocks (each vector then holds one column of the 16 rows),
// the taps run as plain FMAs on those columns, and the sums are transposed back: ~0.5 shuffles
// per output instead of row_taps's one valignd per tap and 16 outputs, which shares Intel's
// port 5 with the FMAs (kw = 31 on the 16-core Xeon host: 0.79-1.14 ns an output, row_taps).
constexpr int row_group = 16;
// From this many taps the separable method groups its row passes (below it row_taps's valignd
// loop is as fast or faster; measured at kw = 7..127 on the Xeon host and a Zen 5 VM)
constexpr int row_group_min_taps = 20;
bool row_group_available();
void row_taps16(const float* const* src, const float* k, int kw, long long n, float* const* out);
void row_taps16(const std::uint8_t* const* src, const float* k, int kw, long long n, float* const* out);
void row_taps16(const std::uint16_t* const* src, const float* k, int kw, long long n, float* const* out);

// Narrow pixels in and out, vectorised like taps_rows: float from uint8/uint16, and back
// rounded half to even and saturated (saturate_round's function, NaN to 0).
void widen_row(const std::uint8_t* in, long long n, float* out);
void widen_row(const std::uint16_t* in, long long n, float* out);
void widen_row(const std::uint8_t* in, long long n, std::int16_t* out);  // the fixed point's rows (separable_vnni.hpp)
void narrow_row(const float* in, long long n, std::uint8_t* out);
void narrow_row(const float* in, long long n, std::uint16_t* out);

// The value outside the image for zero/constant boundaries, in the pixel type's range.
inline float outside_value(const problem& p, pixel px) {
  if (p.options.semantics.border == boundary::zero) return 0.f;
  const float v = p.options.semantics.constant_value;
  return px == pixel::u8 ? float(saturate_round<std::uint8_t>(v))
         : px == pixel::u16 ? float(saturate_round<std::uint16_t>(v)) : v;
}

// ext[t] for t < n + kw - 1 (header comment), as float (or int16 for the uint8 fixed point);
// src_row null: the row lies outside (zero or constant boundary) and every value is `outside`.
template <typename T, typename E = float>
void extend_row(const T* src_row, long long width, long long first, long long count, boundary b, E outside, E* ext) {
  if (!src_row) {
    std::fill(ext, ext + count, outside);
    return;
  }
  // first + t in [0, width) for t in [lo, hi)
  const long long lo = std::clamp(-first, 0LL, count), hi = std::clamp(width - first, lo, count);
  for (long long t = 0; t < lo; ++t) {
    const int c = border_index(first + t, (int)width, b);
    ext[t] = c < 0 ? outside : E(src_row[c]);
  }
  if constexpr (std::is_same_v<T, E>) std::copy(src_row + first + lo, src_row + first + hi, ext + lo);
  else widen_row(src_row + first + lo, hi - lo, ext + lo);
  for (long long t = hi; t < count; ++t) {
    const int c = border_index(first + t, (int)width, b);
    ext[t] = c < 0 ? outside : E(src_row[c]);
  }
}

// The extended row where the taps read it: straight from a float image when the span lies
// inside the image (no copy), else built in `ext` by extend_row.
template <typename T>
const float* source_row(const T* src_row, long long width, long long first, long long count, boundary b,
                        float outside, float* ext) {
  if constexpr (std::is_same_v<T, float>)
    if (src_row && first >= 0 && first + count <= width) return src_row + first;
  extend_row(src_row, width, first, count, b, outside, ext);
  return ext;
}

template <typename T>
void store_row(const float* v, long long n, T* out) {
  if constexpr (std::is_same_v<T, float>) std::copy(v, v + n, out);
  else narrow_row(v, n, out);
}

inline int cpu_threads(const problem& p) {
  return p.options.threads > 0 ? p.options.threads : (int)std::max(1u, std::thread::hardware_concurrency());
}

// The units of the planes: bands of `band` output rows x strips of `strip` output columns.
struct row_units {
  long long out_h, out_w;
  int band, strip;
  long long bands() const { return (out_h + band - 1) / band; }
  long long strips() const { return (out_w + strip - 1) / strip; }
  long long per_plane() const { return bands() * strips(); }

  struct span {
    long long plane, y0, y1, x0, n;  // output rows [y0, y1), columns [x0, x0 + n)
  };
  span at(long long u) const {
    const long long plane = u / per_plane(), r = u % per_plane();
    const long long y0 = (r / strips()) * band, x0 = (r % strips()) * strip;
    return {plane, y0, std::min(out_h, y0 + band), x0, std::min<long long>(strip, out_w - x0)};
  }
};

// The distance between a ring's rows: n floats rounded up to a cache line, one line more
// where that is a multiple of 1 KB, so that kh rows never fall into a few L1 sets (rows of a
// 4096-wide image 16 KB apart map to the same sets: 4096^2 fp32 direct K = 15 read in place
// took 121 ms, 69 ms from a ring of 4112-float rows).
inline long long ring_stride(long long n) {
  const long long lines = (n + 15) / 16 * 16;
  return lines % 256 == 0 ? lines + 16 : lines;
}

// Units for a ring of kh rows per thread (the direct method's extended source rows, the
// separable method's filtered rows): the bands and strips that finish soonest on the call's
// threads by a count of the work. A unit of `band` output rows x `strip` columns builds
// band + kh - 1 ring rows (the kh - 1 that start a band are built twice) at `ring_cost`
// multiply-adds a column (the separable method's row pass: kw; the direct method's extended
// rows: ~1) and sums `band` output rows at `out_cost` a column, plus 48 columns' worth of both
// a ring row (a row's start and ends: on the 2-core Zen 5 VM, one thread, 4096^2 uint8
// separable K = 31, a row of a 256-column strip cost ~38 ns more than its multiply-adds, ~53
// columns' worth); the units run in ceil(units / threads) rounds. Strips at most as wide as the
// ring allows in ~512 KB of the core's L2 (the whole row for small kernels: long sequential
// reads and writes of the image), at least 256 columns where the image has them; bands of at
// least max(8, kh) rows and at most `longest_band` (the direct method keeps its max(64, 4 kh));
// `per_thread` units a thread or more where the image allows (the tail's balance: threads do
// not all run at one speed). The direct method keeps its 4, the separable takes 8 (H100 host,
// 16 threads, three rounds of processes, separable K = 31: eight a thread 4096^2 uint8
// 3.35-4.31 ms, fp32 3.84-4.63, 12 MP uint8 6.08-8.14; four 3.62-4.43, 3.71-6.49, 5.89-8.60;
// two 3.43-5.59, 4.25-6.77, 6.59-8.86). Before, every ring took bands of max(64, 4 kh) rows and
// ~256 KB strips: 4096^2 uint8 separable K = 31 built 24% of its row pass twice (124-row bands).
inline row_units ring_units(const problem& p, double ring_cost, double out_cost, long long longest_band, int per_thread) {
  const long long out_h = p.map.out_h, out_w = p.map.out_w;
  if (out_h <= 0 || out_w <= 0) return row_units{out_h, out_w, 1, 1};  // no units
  auto ceil_div = [](long long a, long long b) { return (a + b - 1) / b; };
  const long long fit = std::max<long long>(512, (512 << 10) / (4 * (long long)(p.kh + p.kw)) / 64 * 64);
  const long long threads = cpu_threads(p);
  const double row_start = 48 * (ring_cost + out_cost);
  const long long least = std::min<long long>(out_h, std::max(8, p.kh));
  const long long widest = std::min(out_w, fit);
  // n strips of ceil(out_w / n) columns (rounded up to whole cache lines where that keeps n), from
  // the fewest the ring allows to the most of 256 columns or more; n bands of ceil(out_h / n) rows
  // (ceil(out_h / band) of them: at most n), at least `least` and at most `longest_band` rows
  const long long min_strips = ceil_div(out_w, widest);
  const long long max_strips = std::max(min_strips, std::min(out_w / 256, min_strips + 63));
  const long long max_bands = std::max<long long>(1, out_h / least);
  const long long first_bands = std::min(max_bands, ceil_div(out_h, std::max(longest_band, least)));
  auto bands_of = [&](long long n) { return ceil_div(out_h, ceil_div(out_h, n)); };
  const long long want = std::min(per_thread * threads, p.planes * bands_of(max_bands) * max_strips);
  row_units best{out_h, out_w, (int)least, (int)widest};  // (the loop's first candidate replaces it)
  double best_score = std::numeric_limits<double>::infinity();
  bool best_enough = false;
  for (long long ns = min_strips; ns <= max_strips; ++ns) {
    long long strip = ceil_div(out_w, ns);
    if (const long long lines = ceil_div(strip, 64) * 64; lines <= widest && ceil_div(out_w, lines) == ns) strip = lines;
    const long long most_bands = std::min(max_bands, std::max<long long>(1, ceil_div(8 * want, p.planes * ns)));
    for (long long nb = first_bands; nb <= std::max(first_bands, most_bands); ++nb) {
      const long long band = ceil_div(out_h, nb), units = p.planes * bands_of(nb) * ns;
      const double ring_rows = double(band + p.kh - 1);
      const double cost = (ring_cost * ring_rows + out_cost * double(band)) * double(strip) + ring_rows * row_start;
      const double score = double(ceil_div(units, threads)) * cost;
      const bool enough = units >= want;
      if ((enough && !best_enough) || (enough == best_enough && score < best_score)) {
        best = row_units{out_h, out_w, (int)band, (int)strip};
        best_score = score;
        best_enough = enough;
      }
    }
  }
  return best;
}

// f(in, out) with the buffers typed as the call's pixels.
template <typename F>
void with_pixels(const void* in, void* out, pixel px, F&& f) {
  switch (px) {
    case pixel::f32: f(static_cast<const float*>(in), static_cast<float*>(out)); break;
    case pixel::u8: f(static_cast<const std::uint8_t*>(in), static_cast<std::uint8_t*>(out)); break;
    case pixel::u16: f(static_cast<const std::uint16_t*>(in), static_cast<std::uint16_t*>(out)); break;
  }
}

}  // namespace gpuconv::conv
