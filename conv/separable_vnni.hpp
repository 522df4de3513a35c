// The CPU backend's separable method on uint8 images in 16-bit fixed point, for hosts with
// AVX-512 VNNI (vpdpwssd: 32 multiply-adds of int16 pairs into int32 an instruction, against 16
// for a float FMA). On the 16-core H100 host at 16 threads the FMA units reach 604 G multiply-adds
// a second and vpdpwssd 1234 (docs/benchmarks.md, session 36). The passes here do half the
// instructions of the float ones but gain less than that: 8-20% at 4-8 threads, 10-20% at K = 63
// on 16 (fixed_min_taps below); at 8 threads they issue ~8-9 G vpdpwssd a second of the probe's
// 22, so something else (not profiled there) bounds them.
//
// Both passes keep the float path's order of taps and its geometry (cpu_rows.hpp); what changes
// is the arithmetic:
//   row pass     t = round(sum_i rq_i x_i / 2^(sr - si))       x: the uint8 source, rq_i = round(g_i 2^sr)
//   column pass  out = sat8(round(sum_a cq_a t_a / 2^(sc + si)))                  cq_a = round(h_a 2^sc)
// with g the row taps in reading order (g_i = row[kw - 1 - i]) and h the column taps (h_a =
// column[kh - 1 - a]); t, a filtered row scaled by 2^si, fits int16, and every sum fits int32.
// t is rounded half up, out half to even as the float path stores it (exact ties, such as a box
// filter's on integer pixels, keep the float path's levels).
// fixed_factors picks the scales from the factors and bounds the fixed point's worst error
// against the exact sum before the last rounding (`error_bound`, in levels); a kernel whose bound
// exceeds max_error, or that does not fit, keeps the float path. With a bound below 0.5 the
// result is within 1 level of the float path's everywhere (it rounds the same exact value, off by
// less than a level); the tests check the bound against the double reference.
//
// Layout: the row pass makes int16 rows; two consecutive rows t(q), t(q + 1) are interleaved
// into a pair row P(q) (per 32 pixels: the unpacklo and unpackhi of the two, 16 int32 lanes
// each), and the column pass sums P(r), P(r + 2), ... with (h_0, h_1), (h_2, h_3), ... as one
// vpdpwssd each; the even and odd outputs of the row pass come from the pairs of the source row
// as stored (x[2u], x[2u + 1]) the same way.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "method.hpp"

namespace gpuconv::conv {

struct fixed_rank1 {
  // row taps as int16 pairs packed in int32 (low half: the even source pixel): outputs at even
  // offsets take row_even[m] on the pair at 2m, odd ones row_odd[m] (the tap before shifted in);
  // kw / 2 + 1 pairs each (an even kw's last even pair is 0)
  std::vector<std::int32_t> row_even, row_odd;
  std::vector<std::int32_t> column;  // (h_2m, h_2m+1) pairs, h_kh = 0
  int row_shift = 0;                 // sr - si
  int out_shift = 0;                 // sc + si
  double error_bound = 0;            // levels, before the final rounding
};

// Where the fixed point is close enough (error_bound <= max_error) and fits; nullopt otherwise
// (non-finite or huge taps, a gain past 128 in the row factor, ...).
constexpr double fixed_max_error = 0.25;
std::optional<fixed_rank1> fixed_factors(const float* column, int kh, const float* row, int kw,
                                         double max_error = fixed_max_error);

// From this many taps (kh + kw) the separable method takes the fixed point; below it the passes'
// fixed costs (the int16 source row, the pair rows) outweigh the halved multiply-adds. Measured on
// the 16-core H100 host, 4096^2 gaussians, alternating processes against the float passes
// (GPUCONV_CPU_ISA=avx512), two rounds, ms (docs/benchmarks.md, session 36):
//   threads    K = 15 fixed / float      K = 31                    K = 63
//   16         2.11 1.61 / 2.06 1.82     3.17 2.89 / 3.45 2.82     4.52 4.13 / 5.66 4.55
//   8          3.29 2.83 / 3.65 3.28     4.50 4.08 / 5.09 5.11     8.53 6.98 / 8.95 9.09
//   4          5.56 4.98 / 5.59 5.27     8.15 7.57 / 8.79 8.54     12.13 11.58 / 15.25 15.56
//   1          12.95 19.17 / 15.49 18.10 20.49 30.91 / 27.06 32.44 51.40 54.49 / 47.36 46.75
// and on one thread of a Zen 5 VM: K = 15 11.3 against 13.0, 31 17.2-17.6 against 25.4-30.9, 63
// 31.4-33.9 against 47.8 (K = 3: 7.5 against 4.3).
constexpr int fixed_min_taps = 48;

// Every kernel's of a bank (the separable method's factors, one after another), or none where
// one kernel has none or the kernels are short (fixed_min_taps): the plan then keeps the float
// path for the whole bank.
std::vector<fixed_rank1> fixed_bank(const rank1_factors& f, int count, int kh, int kw);

// The passes below run where fft::host::selected_host_vnni() (fft/host/isa.hpp: the host has
// AVX-512 VNNI; GPUCONV_CPU_ISA=avx512 keeps AVX-512 without them, avx2 / baseline drop them too).
// Rows are padded to whole blocks of 32 pixels: int16 rows of vnni_width(n) values, pair rows of
// vnni_width(n) int32.
inline long long vnni_width(long long n) { return (n + 31) / 32 * 32; }
// The source values a row pass reads: n + kw - 1 taps' worth, padded (values past n + kw - 1 are
// read for the padded outputs only)
inline long long vnni_ext_length(long long n, int kw) { return vnni_width(n) + kw + 64; }

// t[x] for x < vnni_width(n): the row pass on ext (vnni_ext_length(n, kw) values)
void vnni_row(const std::int16_t* ext, const fixed_rank1& f, long long n, std::int16_t* t);
// P = the pair row of rows a (first) and b, vnni_width(n) int32
void vnni_pairs(const std::int16_t* a, const std::int16_t* b, long long n, std::int32_t* pairs);
// `count` (1..8) output rows: row j from pair rows pairs[j + 2m], m < (kh + 1) / 2, to out +
// j * out_stride (n pixels)
void vnni_column(const std::int32_t* const* pairs, const fixed_rank1& f, int count, long long n, std::uint8_t* out,
                 long long out_stride);

}  // namespace gpuconv::conv
