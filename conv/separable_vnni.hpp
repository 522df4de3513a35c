// The CPU backend's separable method on uint8 images in 16-bit fixed point, for hosts with
// AVX-512 VNNI (vpdpwssd: 32 multiply-adds of int16 pairs into int32 an instruction, against 16
// for a float FMA). On the 16-core H100 host at 16 threads the FMA units reach 604 G multiply-adds
// a second and vpdpwssd 1234 (docs/benchmarks.md, session 36). The passes here do half the
// instructions of the float ones but gained less than that: 8-20% at 4-8 threads, 10-20% at K =
// 63 on 16 in session 36, when their loops spent ~4 scalar instructions a vpdpwssd on the same
// ports (looking up rows and weights, GCC's register moves); without them (session 40) 20-35% at
// K = 11-23 on 16 threads (fixed_min_taps below). vpdpwssd issues ~1.75 a cycle on this CPU
// family, as the FMA 2: the gain is in the instructions, not the ports.
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
// fixed costs (the int16 source row, the pair rows) outweigh the halved multiply-adds. Session 36
// measured 48 on the 16-core H100 host; session 40's loops (no scalar work in them) moved it. On
// the 16-core H200 host (same CPU model), uint8 gaussians, processes alternating, three rounds,
// ms, fixed point / float passes (docs/benchmarks.md, session 40):
//   threads  case      K = 7                    K = 11                   K = 15                   K = 23
//   16       4096^2    0.64-0.80 / 0.67-0.79    0.83-0.99 / 1.03-1.25    0.97-1.08 / 1.27-1.60    1.36-1.50 / 1.76-1.93
//   16       12 MP     1.47-1.62 / 1.45-1.53    1.64-2.00 / 2.15-2.50    1.97-2.30 / 2.56-3.13    2.45-3.07 / 3.62-4.35
//   8        4096^2    1.35-1.43 / 0.99-1.35    1.33-1.57 / 1.96-2.10    1.72-1.99 / 2.13-2.62    2.08-2.50 / 2.97-3.86
//   1        4096^2    8.1-11.6 / 6.7-9.3       10.5-13.6 / 10.6-15.2    10.6-15.3 / 14.4-22.1    12.9-21.6 / 18.4-26.8
// so K = 11 (22 taps) and longer take it, K = 7 (14) does not.
constexpr int fixed_min_taps = 20;

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
