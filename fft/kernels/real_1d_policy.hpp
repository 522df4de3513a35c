// Compile-time launch policies of the batched 1D real transforms, one per size n.
// Host code sizes grids and shared memory from these traits; kernels use the same
// constants in __launch_bounds__.
#pragma once
#include "../thread/config.hpp"

// Tuning switches, set per build for experiments (scripts/gpu-check.sh --variants).
// The one-lane-a-row kernels (n <= 64) have no loads in flight while a warp transforms, so the
// bytes in flight an SM come from the number of warps: at n = 64 (113 / 95 registers, 14-17 warps
// an SM) DRAM ran at 78-80% of its peak against 86% at n = 32 (24-34 warps; Nsight Compute, H200,
// session 46). A cap of 6 blocks of 128 threads (80 registers, no spills) took n = 64 from 0.58 /
// 0.57 ms to 0.54 / 0.545 (1.23 -> 1.32x, 1.30 -> 1.36x cuFFT); the smaller n stay under the cap.
#ifndef GPUCONV_REAL_1D_LANE_MIN_BLOCKS  // register cap of the one-lane-a-row kernels: blocks an SM
#define GPUCONV_REAL_1D_LANE_MIN_BLOCKS 6
#endif
#ifndef GPUCONV_REAL_1D_PASS_TABLES  // rows of at least this many threads read per-pass twiddle tables (0: none)
#define GPUCONV_REAL_1D_PASS_TABLES 32
#endif
// Rows over several threads (n >= 128) run 16 values a thread. C2R at every such n, and R2C at
// the sizes n in GPUCONV_REAL_1D_FLAT_SIZES (a sum; all from 2048 on), run "flat": one group of
// rows a block, the grid as many blocks as groups, nothing loaded ahead (no register prefetch, no
// staging), so the register cap can be near cuFFT's (48-64 at 16 values a thread) and the loads
// in flight come from the warps an SM holds. The other R2C sizes run persistent blocks (grid from
// the occupancy) that stage the next group's rows into shared memory by cp.async while they
// transform this one (each warp its own rows: no block barrier; the loads in flight take no
// registers) at GPUCONV_REAL_1D_ASYNC_BLOCKS blocks a multiprocessor; C2R has such a kernel too
// for small batches (GPUCONV_REAL_1D_STAGED_C2R_SIZES). (The register prefetch, 32 values a
// thread from n = 2048 and n = 4096's own settings lost to the flat kernels in session 52 and
// were removed; docs/notes-fft1d.md.)
// GPUCONV_REAL_1D_FLAT_REGS (_C2R_REGS): that cap (blocks an SM = 65536 / (block threads x cap));
// GPUCONV_REAL_1D_FLAT_THREADS: the block's threads where a row lies within a warp.
// H200, session 51, R2C at 72 registers and 128 threads against the persistent kernels: n = 1024
// 0.98-0.99x cuFFT (0.89-0.90x), 2048 0.95x (0.91-0.92x), 4096 0.95x (0.85x); 64 registers spilled
// less than 8 bytes and lost 2-6%. C2R flat lost at 72-96 registers (0.79-0.90x against the
// persistent kernels' 0.81-0.90x; spills of 8-32 bytes) until its loads took one address per
// thread (block_rows_t::load_row); then, session 52, at 72 registers: n = 1024 1.01-1.02x
// cuFFT (persistent 0.90-0.91x), 2048 0.91-0.93x (0.90x), 4096 0.91-0.95x (0.81-0.88x); 80
// registers 0.98-0.99x / 0.92-0.94x / 0.89-0.92x, 64 (spilling) 0.82-0.83x / 0.76-0.77x /
// 0.75-0.76x. R2C's cap, same session: 80 registers 1.00x / 1.00x / 0.94-0.95x against 72's
// 0.99x / 0.95-0.96x / 0.93-0.94x (88 as 80; 104 and 128: 0.65x at 4096). Flat at n = 128-512
// too (against the persistent kernels, three rounds): C2R 1.05-1.07x / 1.11-1.13x / 1.35x
// (1.00x / 1.02x / 1.23x), R2C 1.03x / 1.11x / 1.22x (1.05x / 1.01x / 1.19x): R2C at 128 stays
// persistent.
#ifndef GPUCONV_REAL_1D_FLAT_SIZES
#define GPUCONV_REAL_1D_FLAT_SIZES (256 + 512 + 1024 + 2048 + 4096)
#endif
#ifndef GPUCONV_REAL_1D_FLAT_REGS
#define GPUCONV_REAL_1D_FLAT_REGS 80
#endif
#ifndef GPUCONV_REAL_1D_FLAT_C2R_REGS
#define GPUCONV_REAL_1D_FLAT_C2R_REGS 72
#endif
#ifndef GPUCONV_REAL_1D_FLAT_THREADS
#define GPUCONV_REAL_1D_FLAT_THREADS 128
#endif
// C2R sizes n (a sum, within 128..1024) that also have a persistent kernel staging by cp.async,
// which the plan launches where the flat kernel's grid would fill at most one wave of the device
// (real_1d_plan). H200, session 53, the 3D FFT at 128^3 (its C2R row pass: 16384 rows of 128,
// 512 flat blocks against 924 resident), four interleaved runs: C2R 0.0220-0.0223 ms (1.00-1.01x
// cuFFT 3D) staged against 0.0236-0.0241 ms (0.90-0.96x) flat; with the plan's choice, three runs
// of 50: 0.0215 ms, 1.00-1.01x. At 2^21 rows flat won (1.05-1.07x cuFFT 1D against 1.00x;
// session 52). Other sizes not measured so.
#ifndef GPUCONV_REAL_1D_STAGED_C2R_SIZES
#define GPUCONV_REAL_1D_STAGED_C2R_SIZES 128
#endif
#ifndef GPUCONV_REAL_1D_ASYNC_BLOCKS  // blocks a multiprocessor the persistent kernels' registers allow
#define GPUCONV_REAL_1D_ASYNC_BLOCKS 2
#endif

namespace gpuconv::fft {

// inverse_: the C2R kernel's policy (flat, its register cap its own); staged_: C2R as persistent
// blocks staging by cp.async, for small batches (GPUCONV_REAL_1D_STAGED_C2R_SIZES)
template <int n_, bool inverse_ = false, bool staged_ = false>
struct real_1d_policy {
  static_assert(is_pow2(n_) && n_ >= 4 && n_ <= 4096, "real_1d_policy: n must be a power of two in [4, 4096]");
  static_assert(!staged_ || (inverse_ && n_ >= 128 && n_ <= 1024),
                "real_1d_policy: staged_ is C2R's, for rows over several threads within a warp");
  static constexpr int n = n_;
  static constexpr int half = n / 2;                       // complex FFT length N
  static constexpr int input_length = n;                   // R2C: reals per row in
  static constexpr int output_length = half + 1;           // R2C: complex per row out
  // Rows up to 64 points live in one thread's registers; longer rows take 16 values a thread
  // and Stockham passes through shared memory. Measured on the H100 and the H200:
  // docs/benchmarks.md.
  static constexpr bool flat = half > 32 && (inverse_ ? !staged_ : (GPUCONV_REAL_1D_FLAT_SIZES & n) != 0);
  static constexpr int threads_per_row = half <= 32 ? 1 : half / 16;
  static constexpr int items_per_thread = half / threads_per_row;
  // (rows over several warps: one row a block; two rows lost, 0.74-0.75x at 4096, session 46)
  static constexpr int block_threads =
      threads_per_row == 1 ? 128
      : threads_per_row > 32 ? threads_per_row
      : flat ? (GPUCONV_REAL_1D_FLAT_THREADS > threads_per_row ? GPUCONV_REAL_1D_FLAT_THREADS : threads_per_row)
             : 256;  // persistent: the exchange buffers 34.8 KB, the staging as much again
  static constexpr int rows_per_block = block_threads / threads_per_row;
  // one-lane-per-row R2C: rows of 128 bytes and more are loaded through shared memory
  static constexpr bool stage_real_input = threads_per_row == 1 && n >= 32;
  // one-lane-per-row kernels stage each warp's rows through shared memory
  static constexpr int warp_stage_bytes =
      32 * ((output_length * 8) > ((n + 4) * 4) ? (output_length * 8) : ((n + 4) * 4));
  // several-threads-per-row kernels that are not flat: persistent blocks staging by cp.async
  // (H200, against a register prefetch: R2C 1-4% faster at n = 128..512; session 43)
  static constexpr bool persistent = threads_per_row > 1 && !flat;
  static_assert(!persistent || threads_per_row <= 32,
                "real_1d_policy: only rows within a warp run persistent (GPUCONV_REAL_1D_FLAT_SIZES)");
  // register cap through __launch_bounds__: without it the compiler hoists the loads and the
  // twiddle loads far ahead and uses ~180 registers (one block per SM)
  static constexpr int flat_blocks =
      65536 / (block_threads * (inverse_ ? GPUCONV_REAL_1D_FLAT_C2R_REGS : GPUCONV_REAL_1D_FLAT_REGS));
  static constexpr int min_blocks_per_sm = threads_per_row == 1 ? GPUCONV_REAL_1D_LANE_MIN_BLOCKS
                                           : flat                ? (flat_blocks > 1 ? flat_blocks : 1)
                                                                 : GPUCONV_REAL_1D_ASYNC_BLOCKS;
  static_assert(block_threads % threads_per_row == 0, "real_1d_policy: a block holds whole rows");
  // R2C rows spread over 2..16 lanes store through the warp's shared buffer: their output
  // rows (n/2+1 complex) start at odd 8-byte offsets, so short per-row segments would
  // write partial sectors
  static constexpr bool stage_complex_output = threads_per_row > 1 && threads_per_row <= 16;
  static constexpr int exchange_bytes =
      threads_per_row == 1 ? (block_threads / 32) * warp_stage_bytes
                           : rows_per_block * (half + half / 16) * 8;
  // persistent: each row's input staged at a stride of half + threads_per_row complex (== T
  // mod 16: the rows a half-warp reads at once start on distinct bank pairs; >= half + 1, the
  // C2R rows' length), after the exchange buffers
  static constexpr int stage_stride = half + threads_per_row;
  // persistent: one group's staging buffer
  static constexpr int stage_bytes = persistent ? rows_per_block * stage_stride * 8 : 0;
  // dynamic shared memory a block takes (over 48 KB for the persistent kernels)
  static constexpr int shared_memory_bytes = exchange_bytes + stage_bytes;
  // the Stockham passes' shared padding: one slot per 16 values (the first pass's stores
  // t*P + r then fall on distinct banks)
  static constexpr int pad_shift = 4;
  // the passes' twiddles from per-pass tables, a warp's loads contiguous (the plan appends them):
  // H200, n = 4096 0.67 -> 0.78x cuFFT, 2048 +1-2%; at 1024 (16 threads a row) up to 1% slower,
  // at 256 (8 threads) 2-4%: there a gather spans fewer lines (docs/benchmarks.md, session 45)
  static constexpr bool pass_tables = GPUCONV_REAL_1D_PASS_TABLES > 0 && threads_per_row >= GPUCONV_REAL_1D_PASS_TABLES;
};

// n has a staged C2R kernel beside the flat one (GPUCONV_REAL_1D_STAGED_C2R_SIZES)
template <int n>
inline constexpr bool has_staged_c2r = n >= 128 && n <= 1024 && (GPUCONV_REAL_1D_STAGED_C2R_SIZES & n) != 0;

}  // namespace gpuconv::fft
