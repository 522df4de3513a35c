// The separable method's uint8 fixed-point passes on AVX-512 VNNI (separable_vnni.hpp).
#include "separable_vnni.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <utility>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

// GCC 12's vpsrad / vpmovuswb intrinsics pass an _mm*_undefined_* operand that its own
// -Wmaybe-uninitialized then reports (the instructions' unmasked forms never read it)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace gpuconv::conv {

namespace {

std::int32_t pack_pair(long long lo, long long hi) {
  return std::int32_t((std::uint32_t(std::uint16_t(std::int16_t(hi))) << 16) | std::uint16_t(std::int16_t(lo)));
}

// round(v * 2^s) for each tap and the sum of the rounding errors' magnitudes
std::vector<long long> quantise(const std::vector<double>& v, int s, double& error_sum, long long& abs_sum) {
  std::vector<long long> q(v.size());
  error_sum = 0;
  abs_sum = 0;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const double scaled = std::ldexp(v[i], s);
    q[i] = std::llround(scaled);
    error_sum += std::abs(double(q[i]) - scaled);
    abs_sum += std::llabs(q[i]);
  }
  return q;
}

long long max_abs(const std::vector<long long>& q) {
  long long m = 0;
  for (long long v : q) m = std::max(m, std::llabs(v));
  return m;
}

}  // namespace

std::optional<fixed_rank1> fixed_factors(const float* column, int kh, const float* row, int kw, double max_error) {
  if (kh < 1 || kw < 1) return std::nullopt;
  // g: the row taps in reading order, h: the column taps from the top row down
  std::vector<double> g((std::size_t)kw), h((std::size_t)kh);
  double gmax = 0, gsum = 0, hmax = 0;
  for (int i = 0; i < kw; ++i) {
    g[(std::size_t)i] = row[kw - 1 - i];
    if (!std::isfinite(g[(std::size_t)i])) return std::nullopt;
    gmax = std::max(gmax, std::abs(g[(std::size_t)i]));
    gsum += std::abs(g[(std::size_t)i]);
  }
  for (int a = 0; a < kh; ++a) {
    h[(std::size_t)a] = column[kh - 1 - a];
    if (!std::isfinite(h[(std::size_t)a])) return std::nullopt;
    hmax = std::max(hmax, std::abs(h[(std::size_t)a]));
  }
  if (gmax == 0 || hmax == 0) return std::nullopt;
  constexpr double int16_top = 32767, int32_top = 2147483647.0, level_top = 255;
  const double ymax = level_top * gsum;  // the filtered rows' range
  // si: the filtered rows scaled by 2^si fit int16 with room for their rounding
  int si = (int)std::floor(std::log2(32000.0 / ymax));
  if (si < 0) return std::nullopt;
  // sr: the row taps as large as int16 and the row sums' int32 allow
  int sr = std::min(30, (int)std::floor(std::log2(int16_top / gmax)));
  std::vector<long long> rq;
  double row_err = 0;
  for (;; --sr) {
    if (sr < si) return std::nullopt;
    long long rsum = 0;
    rq = quantise(g, sr, row_err, rsum);
    const int sh = sr - si;
    if (max_abs(rq) <= int16_top && level_top * double(rsum) + std::ldexp(1.0, std::max(sh - 1, 0)) < int32_top) break;
  }
  const int row_shift = sr - si;
  // t's error in its own units: the taps' rounding on 255-level pixels, then t's own rounding
  const double e1 = level_top * row_err / std::ldexp(1.0, row_shift) + (row_shift > 0 ? 0.5 : 0.0);
  const double tmax = std::ldexp(ymax, si) + e1;
  if (tmax > int16_top) return std::nullopt;
  // sc: the column taps as large as int16, the column sums' int32 and a shift of <= 30 allow
  int sc = std::min(30 - si, (int)std::floor(std::log2(int16_top / hmax)));
  std::vector<long long> cq;
  double col_err = 0;
  long long csum = 0;
  for (;; --sc) {
    if (sc < 0) return std::nullopt;
    cq = quantise(h, sc, col_err, csum);
    if (max_abs(cq) <= int16_top && double(csum) * tmax + std::ldexp(1.0, sc + si) < int32_top) break;
  }
  fixed_rank1 f;
  f.row_shift = row_shift;
  f.out_shift = sc + si;
  // the column's taps on t's error, and the column taps' rounding on the exact rows (<= ymax)
  f.error_bound = double(csum) / std::ldexp(1.0, sc + si) * e1 + col_err / std::ldexp(1.0, sc) * ymax;
  if (!(f.error_bound <= max_error)) return std::nullopt;
  auto r_at = [&](long long i) { return i >= 0 && i < kw ? rq[(std::size_t)i] : 0LL; };
  auto c_at = [&](long long a) { return a < kh ? cq[(std::size_t)a] : 0LL; };
  for (int m = 0; m < (kw + 1) / 2; ++m) f.row_even.push_back(pack_pair(r_at(2 * m), r_at(2 * m + 1)));
  for (int m = 0; m < kw / 2 + 1; ++m) f.row_odd.push_back(pack_pair(r_at(2 * m - 1), r_at(2 * m)));
  f.row_even.resize(f.row_odd.size(), 0);  // an even kw's odd outputs have one pair more
  for (int m = 0; m < (kh + 1) / 2; ++m) f.column.push_back(pack_pair(c_at(2 * m), c_at(2 * m + 1)));
  return f;
}

std::vector<fixed_rank1> fixed_bank(const rank1_factors& f, int count, int kh, int kw) {
  std::vector<fixed_rank1> bank;
  if (kh + kw < fixed_min_taps) return bank;
  for (int k = 0; k < count; ++k) {
    auto q = fixed_factors(f.column.data() + (std::size_t)k * kh, kh, f.row.data() + (std::size_t)k * kw, kw);
    if (!q) return {};
    bank.push_back(std::move(*q));
  }
  return bank;
}

#if defined(__x86_64__)

#define GPUCONV_VNNI [[gnu::target("avx512f,avx512bw,avx512vl,avx512vnni")]]

namespace {

// The row pass's tap pair m for B blocks, d(b) its source pairs (from dword m of block b on):
// the even outputs' weight and the odd's
template <int B>
GPUCONV_VNNI inline __attribute__((always_inline)) void row_tap(const __m512i* d, int m, const fixed_rank1& f, __m512i* e,
                                                                __m512i* o) {
  const __m512i we = _mm512_set1_epi32(f.row_even.data()[m]), wo = _mm512_set1_epi32(f.row_odd.data()[m]);
#pragma GCC unroll 4
  for (int b = 0; b < B; ++b) {
    e[b] = _mm512_dpwssd_epi32(e[b], d[b], we);
    o[b] = _mm512_dpwssd_epi32(o[b], d[b], wo);
  }
}

// Tap pair 16 g + S: v[b] shifted down by S dwords with v[b + 1]'s first S following (valignd,
// where an unaligned load at 4 m bytes would split two cache lines)
template <int B, int S>
GPUCONV_VNNI inline __attribute__((always_inline)) void row_shifted(const __m512i* v, int g, const fixed_rank1& f,
                                                                    __m512i* e, __m512i* o) {
  __m512i d[B];
#pragma GCC unroll 4
  for (int b = 0; b < B; ++b) d[b] = S == 0 ? v[b] : _mm512_alignr_epi32(v[b + 1], v[b], S);
  row_tap<B>(d, 16 * g + S, f, e, o);
}

template <int B, int... S>
GPUCONV_VNNI inline __attribute__((always_inline)) void row_taps16(const __m512i* v, int g, const fixed_rank1& f,
                                                                   __m512i* e, __m512i* o,
                                                                   std::integer_sequence<int, S...>) {
  (row_shifted<B, S>(v, g, f, e, o), ...);
}

// t for blocks of B x 32 outputs: even outputs in e[b], odd ones in o[b], each lane one pair of
// the source as stored (whole groups of 16 tap pairs from aligned loads where ext + x is on a
// cache line, the rest from loads at each pair); rounded, shifted and interleaved back into 32
// int16 a block
template <int B>
GPUCONV_VNNI inline __attribute__((always_inline)) void row_blocks(const std::int16_t* ext, const fixed_rank1& f,
                                                                   std::int16_t* t) {
  __m512i e[B], o[B];
  for (int b = 0; b < B; ++b) e[b] = o[b] = _mm512_setzero_si512();
  const int mo = (int)f.row_odd.size(), groups = mo / 16;  // == row_even.size()
  for (int g = 0; g < groups; ++g) {
    __m512i v[B + 1];
#pragma GCC unroll 5
    for (int b = 0; b <= B; ++b) v[b] = _mm512_loadu_si512(ext + 32 * (b + g));
    row_taps16<B>(v, g, f, e, o, std::make_integer_sequence<int, 16>());
  }
  for (int m = 16 * groups; m < mo; ++m) {
    __m512i d[B];
#pragma GCC unroll 4
    for (int b = 0; b < B; ++b) d[b] = _mm512_loadu_si512(ext + 32 * b + 2 * m);
    row_tap<B>(d, m, f, e, o);
  }
  const int sh = f.row_shift;
  const __m512i bias = _mm512_set1_epi32(sh > 0 ? 1 << (sh - 1) : 0);
  const __m128i count = _mm_cvtsi32_si128(sh);
#pragma GCC unroll 4
  for (int b = 0; b < B; ++b) {
    const __m512i ev = _mm512_sra_epi32(_mm512_add_epi32(e[b], bias), count);
    const __m512i od = _mm512_sra_epi32(_mm512_add_epi32(o[b], bias), count);
    _mm512_storeu_si512(t + 32 * b, _mm512_mask_mov_epi16(ev, (__mmask32)0xAAAAAAAAu, _mm512_slli_epi32(od, 16)));
  }
}

GPUCONV_VNNI void row_impl(const std::int16_t* ext, const fixed_rank1& f, long long n, std::int16_t* t) {
  const long long w = vnni_width(n);
  long long x = 0;
  for (; x + 128 <= w; x += 128) row_blocks<4>(ext + x, f, t + x);
  for (; x < w; x += 32) row_blocks<1>(ext + x, f, t + x);
}

GPUCONV_VNNI void pairs_impl(const std::int16_t* a, const std::int16_t* b, long long n, std::int32_t* pairs) {
  const long long w = vnni_width(n);
  for (long long x = 0; x < w; x += 32) {
    const __m512i u = _mm512_loadu_si512(a + x), v = _mm512_loadu_si512(b + x);
    _mm512_storeu_si512(pairs + x, _mm512_unpacklo_epi16(u, v));
    _mm512_storeu_si512(pairs + x + 16, _mm512_unpackhi_epi16(u, v));
  }
}

GPUCONV_VNNI inline __attribute__((always_inline)) __m512i rounded_even(__m512i acc, __m512i bias, __m512i one,
                                                                       __m128i count) {
  const __m512i odd = _mm512_and_si512(_mm512_sra_epi32(acc, count), one);
  return _mm512_sra_epi32(_mm512_add_epi32(_mm512_add_epi32(acc, bias), odd), count);
}

template <int C>
GPUCONV_VNNI void column_impl(const std::int32_t* const* pairs, const fixed_rank1& f, long long n, std::uint8_t* out,
                              long long out_stride) {
  const int mc = (int)f.column.size(), s = f.out_shift;
  // round half to even, as the float path's stores: (acc + 2^(s-1) - 1 + ((acc >> s) & 1)) >> s
  const __m512i bias = _mm512_set1_epi32(s > 0 ? (1 << (s - 1)) - 1 : 0), one = _mm512_set1_epi32(s > 0 ? 1 : 0);
  const __m512i zero = _mm512_setzero_si512();
  const __m128i count = _mm_cvtsi32_si128(s);
  for (long long x = 0; x < n; x += 32) {
    __m512i lo[C], hi[C];
#pragma GCC unroll 8
    for (int j = 0; j < C; ++j) lo[j] = hi[j] = zero;
    for (int m = 0; m < mc; ++m) {
      const __m512i wv = _mm512_set1_epi32(f.column[(std::size_t)m]);
#pragma GCC unroll 8
      for (int j = 0; j < C; ++j) {
        const std::int32_t* p = pairs[j + 2 * m] + x;
        lo[j] = _mm512_dpwssd_epi32(lo[j], _mm512_loadu_si512(p), wv);
        hi[j] = _mm512_dpwssd_epi32(hi[j], _mm512_loadu_si512(p + 16), wv);
      }
    }
    const __mmask32 mask = n - x >= 32 ? ~(__mmask32)0 : (__mmask32)((1ULL << (n - x)) - 1);
#pragma GCC unroll 8
    for (int j = 0; j < C; ++j) {
      const __m512i a = rounded_even(lo[j], bias, one, count), b = rounded_even(hi[j], bias, one, count);
      // packs restores the pixel order (per 128-bit lane: unpacklo's four, then unpackhi's)
      const __m512i v = _mm512_max_epi16(_mm512_packs_epi32(a, b), zero);
      _mm256_mask_storeu_epi8(out + j * out_stride + x, mask, _mm512_cvtusepi16_epi8(v));
    }
  }
}

// Eight output rows, 16 pixels a half: at tap pair m the even outputs (rows 0, 2, 4, 6) read
// pair rows 2m, 2m + 2, 2m + 4, 2m + 6 and the odd ones 2m + 1, ..., 2m + 7, so each pair row is
// loaded once into a window of four registers a parity that moves by one row a step (the steps
// unrolled by four, the registers rotating by renaming): 2 loads for 8 vpdpwssd, where
// column_impl loads for each. The tap pairs run to a multiple of four (zero weights past mc, on
// the last valid pair row).
GPUCONV_VNNI void column8_impl(const std::int32_t* const* pairs, const fixed_rank1& f, long long n, std::uint8_t* out,
                               long long out_stride) {
  const int mc = (int)f.column.size(), mc4 = (mc + 3) / 4 * 4, s = f.out_shift;
  const int valid = 7 + 2 * (mc - 1) + 1;  // pair rows [0, valid) exist
  auto row = [&](int i) { return pairs[i < valid ? i : valid - 1]; };
  // what step m loads (pair rows 2m + 8, 2m + 9) and weighs, looked up once a call: clamping the
  // rows and testing m < mc in the loop, with GCC's register moves, took ~5 instructions a
  // vpdpwssd (375 for 64), on the ports the vpdpwssd need; now 56 for 32 (one thread, K = 31,
  // n = 4096: ~2.0 -> ~1.75 us a row; docs/benchmarks.md, session 40)
  thread_local std::vector<const std::int32_t*> next_rows;
  thread_local std::vector<std::int32_t> weights;
  next_rows.resize(2 * (std::size_t)mc4);
  weights.assign((std::size_t)mc4, 0);
  for (int m = 0; m < mc4; ++m) {
    next_rows[2 * (std::size_t)m] = row(2 * m + 8);
    next_rows[2 * (std::size_t)m + 1] = row(2 * m + 9);
    if (m < mc) weights[(std::size_t)m] = f.column[(std::size_t)m];
  }
  const std::int32_t* const* next = next_rows.data();
  const std::int32_t* weight = weights.data();
  const __m512i bias = _mm512_set1_epi32(s > 0 ? (1 << (s - 1)) - 1 : 0), one = _mm512_set1_epi32(s > 0 ? 1 : 0);
  const __m512i zero = _mm512_setzero_si512();
  const __m128i count = _mm_cvtsi32_si128(s);
  alignas(64) std::int32_t low[8][16];
  for (long long x = 0; x < n; x += 32) {
    for (int half = 0; half < 2; ++half) {
      const long long o = x + 16 * half;
      __m512i e0 = zero, e1 = zero, e2 = zero, e3 = zero, d0 = zero, d1 = zero, d2 = zero, d3 = zero;
      __m512i a0 = _mm512_loadu_si512(row(0) + o), a1 = _mm512_loadu_si512(row(2) + o), a2 = _mm512_loadu_si512(row(4) + o),
              a3 = _mm512_loadu_si512(row(6) + o);
      __m512i b0 = _mm512_loadu_si512(row(1) + o), b1 = _mm512_loadu_si512(row(3) + o), b2 = _mm512_loadu_si512(row(5) + o),
              b3 = _mm512_loadu_si512(row(7) + o);
#define GPUCONV_COLUMN8_STEP(M, W0, W1, W2, W3, V0, V1, V2, V3)                                            \
  {                                                                                                        \
    const __m512i wv = _mm512_set1_epi32(weight[M]);                                                       \
    e0 = _mm512_dpwssd_epi32(e0, W0, wv);                                                                  \
    e1 = _mm512_dpwssd_epi32(e1, W1, wv);                                                                  \
    e2 = _mm512_dpwssd_epi32(e2, W2, wv);                                                                  \
    e3 = _mm512_dpwssd_epi32(e3, W3, wv);                                                                  \
    d0 = _mm512_dpwssd_epi32(d0, V0, wv);                                                                  \
    d1 = _mm512_dpwssd_epi32(d1, V1, wv);                                                                  \
    d2 = _mm512_dpwssd_epi32(d2, V2, wv);                                                                  \
    d3 = _mm512_dpwssd_epi32(d3, V3, wv);                                                                  \
    W0 = _mm512_loadu_si512(next[2 * (M)] + o);                                                            \
    V0 = _mm512_loadu_si512(next[2 * (M) + 1] + o);                                                        \
  }
      for (int m = 0; m < mc4; m += 4) {
        GPUCONV_COLUMN8_STEP(m, a0, a1, a2, a3, b0, b1, b2, b3)
        GPUCONV_COLUMN8_STEP(m + 1, a1, a2, a3, a0, b1, b2, b3, b0)
        GPUCONV_COLUMN8_STEP(m + 2, a2, a3, a0, a1, b2, b3, b0, b1)
        GPUCONV_COLUMN8_STEP(m + 3, a3, a0, a1, a2, b3, b0, b1, b2)
        // the accumulators in the registers they entered in (GCC otherwise moves them each lap)
        __asm__("" : "+v"(e0), "+v"(e1), "+v"(e2), "+v"(e3), "+v"(d0), "+v"(d1), "+v"(d2), "+v"(d3));
      }
#undef GPUCONV_COLUMN8_STEP
      const __m512i acc[8] = {e0, d0, e1, d1, e2, d2, e3, d3};  // output rows 0..7
      const __mmask32 mask = n - x >= 32 ? ~(__mmask32)0 : (__mmask32)((1ULL << (n - x)) - 1);
#pragma GCC unroll 8
      for (int j = 0; j < 8; ++j) {
        const __m512i r = rounded_even(acc[j], bias, one, count);
        if (half == 0) {
          _mm512_store_si512(low[j], r);
        } else {
          // packs restores the pixel order (per 128-bit lane: unpacklo's four, then unpackhi's)
          const __m512i v = _mm512_max_epi16(_mm512_packs_epi32(_mm512_load_si512(low[j]), r), zero);
          _mm256_mask_storeu_epi8(out + j * out_stride + x, mask, _mm512_cvtusepi16_epi8(v));
        }
      }
    }
  }
}

}  // namespace

void vnni_row(const std::int16_t* ext, const fixed_rank1& f, long long n, std::int16_t* t) { row_impl(ext, f, n, t); }
void vnni_pairs(const std::int16_t* a, const std::int16_t* b, long long n, std::int32_t* pairs) {
  pairs_impl(a, b, n, pairs);
}
void vnni_column(const std::int32_t* const* pairs, const fixed_rank1& f, int count, long long n, std::uint8_t* out,
                 long long out_stride) {
  switch (count) {
    case 1: return column_impl<1>(pairs, f, n, out, out_stride);
    case 2: return column_impl<2>(pairs, f, n, out, out_stride);
    case 3: return column_impl<3>(pairs, f, n, out, out_stride);
    case 4: return column_impl<4>(pairs, f, n, out, out_stride);
    case 5: return column_impl<5>(pairs, f, n, out, out_stride);
    case 6: return column_impl<6>(pairs, f, n, out, out_stride);
    case 7: return column_impl<7>(pairs, f, n, out, out_stride);
    default: return column8_impl(pairs, f, n, out, out_stride);
  }
}

#else  // no x86-64: the float path everywhere (selected_host_vnni is false)

void vnni_row(const std::int16_t*, const fixed_rank1&, long long, std::int16_t*) { std::abort(); }
void vnni_pairs(const std::int16_t*, const std::int16_t*, long long, std::int32_t*) { std::abort(); }
void vnni_column(const std::int32_t* const*, const fixed_rank1&, int, long long, std::uint8_t*, long long) { std::abort(); }

#endif

}  // namespace gpuconv::conv
