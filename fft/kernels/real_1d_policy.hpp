// Compile-time launch policies of the batched 1D real transforms, one per size n.
// Host code sizes grids and shared memory from these traits; kernels use the same
// constants in __launch_bounds__.
#pragma once
#include "../thread/config.hpp"

// Tuning switches, set per build for experiments (scripts/gpu-check.sh --variants).
#ifndef GPUCONV_REAL_1D_MIN_BLOCKS
#define GPUCONV_REAL_1D_MIN_BLOCKS 1
#endif
#ifndef GPUCONV_REAL_1D_PREFETCH
#define GPUCONV_REAL_1D_PREFETCH 1
#endif
#ifndef GPUCONV_REAL_1D_LARGE_ITEMS  // values per thread from n = GPUCONV_REAL_1D_LARGE_FROM
#define GPUCONV_REAL_1D_LARGE_ITEMS 32
#endif
// n = 4096 (rows over several warps) on its own: values a thread and the register cap's blocks
// a multiprocessor (scripts/fft1d-variants.sh times settings against each other). H200, session
// 46, with the per-pass twiddle tables: 16 values a thread (radix 16, 16, 8), one row a block and
// three blocks an SM (166 / 168 registers) 0.85x / 0.85-0.88x cuFFT against 32 values' 0.78 /
// 0.77-0.80x (255 registers, two rows a block); four blocks (128 registers) spilled in C2R and
// lost there (0.79-0.82x); before the tables 16 values had lost by 24-32%. (Those four blocks
// were also all that one-row blocks could get while the passes synced on a named barrier per row:
// a barrier id the compiler cannot bound reserves all 16; ncu, session 48.)
#ifndef GPUCONV_REAL_1D_4096_ITEMS
#define GPUCONV_REAL_1D_4096_ITEMS 16
#endif
#ifndef GPUCONV_REAL_1D_4096_MIN_BLOCKS  // C2R's (R2C's below)
#define GPUCONV_REAL_1D_4096_MIN_BLOCKS 3
#endif
// R2C at n = 4096 without the register prefetch, at 5 blocks an SM (96 registers): 0.85-0.86x
// cuFFT against 0.84x with it at 3 (H200, session 48): five blocks need the passes on barrier 0
// (block_fft_t::sync). C2R keeps the prefetch at 3 blocks: without it at 5, 0.79-0.81x.
#ifndef GPUCONV_REAL_1D_4096_R2C_MIN_BLOCKS
#define GPUCONV_REAL_1D_4096_R2C_MIN_BLOCKS 5
#endif
#ifndef GPUCONV_REAL_1D_4096_R2C_PREFETCH
#define GPUCONV_REAL_1D_4096_R2C_PREFETCH 0
#endif
// The one-lane-a-row kernels (n <= 64) have no loads in flight while a warp transforms, so the
// bytes in flight an SM come from the number of warps: at n = 64 (113 / 95 registers, 14-17 warps
// an SM) DRAM ran at 78-80% of its peak against 86% at n = 32 (24-34 warps; Nsight Compute, H200,
// session 46). A cap of 6 blocks of 128 threads (80 registers, no spills) took n = 64 from 0.58 /
// 0.57 ms to 0.54 / 0.545 (1.23 -> 1.32x, 1.30 -> 1.36x cuFFT); the smaller n stay under the cap.
#ifndef GPUCONV_REAL_1D_LANE_MIN_BLOCKS  // register cap of the one-lane-a-row kernels: blocks an SM
#define GPUCONV_REAL_1D_LANE_MIN_BLOCKS 6
#endif
#ifndef GPUCONV_REAL_1D_WIDE_PAD  // 1: rows of 32 values a thread pad shared memory by one slot per 32
#define GPUCONV_REAL_1D_WIDE_PAD 1
#endif
#ifndef GPUCONV_REAL_1D_PASS_TABLES  // rows of at least this many threads read per-pass twiddle tables (0: none)
#define GPUCONV_REAL_1D_PASS_TABLES 32
#endif
// n = 1024 at 16 values a thread (32 threads a row) since session 47: R2C prefetching into
// registers (218, 8 warps an SM) and C2R staging by cp.async (126, two blocks an SM) 0.90 / 0.90x
// cuFFT against 32 values' 0.88 / 0.87x (H200, scripts/fft1d-variants.sh, docs/benchmarks.md).
#ifndef GPUCONV_REAL_1D_LARGE_FROM
#define GPUCONV_REAL_1D_LARGE_FROM 2048
#endif
// The sizes n whose persistent kernels (rows within a warp) stage the next group's input by
// cp.async, as a sum of the n: R2C, and C2R (rows of n/2+1 complex: 8-byte copies). Since
// session 52 only R2C at n = 128 runs persistent among them (the flat sizes below take the rest).
#ifndef GPUCONV_REAL_1D_ASYNC_SIZES
#define GPUCONV_REAL_1D_ASYNC_SIZES (128 + 256 + 512)
#endif
#ifndef GPUCONV_REAL_1D_ASYNC_C2R_SIZES
#define GPUCONV_REAL_1D_ASYNC_C2R_SIZES (128 + 1024)
#endif
// The sizes n (a sum; R2C, and C2R) whose rows over several threads run 16 values a thread and
// one group of rows a block, the grid as many blocks as groups, instead of persistent blocks:
// nothing loaded ahead (no register prefetch, no staging), so the register cap can be near
// cuFFT's (48-64 at 16 values a thread) and the loads in flight come from the warps an SM holds.
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
#ifndef GPUCONV_REAL_1D_FLAT_C2R_SIZES
#define GPUCONV_REAL_1D_FLAT_C2R_SIZES (128 + 256 + 512 + 1024 + 2048 + 4096)
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
// 1: the flat kernels whose rows lie within a warp pair each value with its mirror partner by
// shuffles into a second array of values a thread (as the persistent ones do); 0: through the
// row's shared buffer, as rows over several warps do (at n = 1024 under a 64-register cap:
// 8 bytes of spills against 168-320, 0.96x cuFFT against 0.49x; H200, session 51).
#ifndef GPUCONV_REAL_1D_FLAT_SHUFFLE_PARTNERS
#define GPUCONV_REAL_1D_FLAT_SHUFFLE_PARTNERS 0
#endif
#ifndef GPUCONV_REAL_1D_ASYNC_BLOCKS  // blocks a multiprocessor the async kernels' registers allow
#define GPUCONV_REAL_1D_ASYNC_BLOCKS 2
#endif

namespace gpuconv::fft {

// inverse_: the C2R kernel's policy (it differs from R2C's in how the input is staged)
template <int n_, bool inverse_ = false>
struct real_1d_policy {
  static_assert(is_pow2(n_) && n_ >= 4 && n_ <= 4096, "real_1d_policy: n must be a power of two in [4, 4096]");
  static constexpr int n = n_;
  static constexpr int half = n / 2;                       // complex FFT length N
  static constexpr int input_length = n;                   // R2C: reals per row in
  static constexpr int output_length = half + 1;           // R2C: complex per row out
  // Rows up to 64 points live in one thread's registers; longer rows use 16 values per
  // thread (32 from n = 2048: two passes of radix 32, one exchange through shared memory, and
  // the row stays inside one warp; n = 4096 on its own switch; the flat kernels 16) and
  // Stockham passes through shared memory. Measured on the H100 and the H200: docs/benchmarks.md.
  static constexpr bool flat =
      half > 32 && ((inverse_ ? GPUCONV_REAL_1D_FLAT_C2R_SIZES : GPUCONV_REAL_1D_FLAT_SIZES) & n) != 0;
  static constexpr int threads_per_row =
      half <= 32     ? 1
      : flat         ? half / 16
      : n == 4096    ? half / GPUCONV_REAL_1D_4096_ITEMS
      : n >= GPUCONV_REAL_1D_LARGE_FROM ? half / GPUCONV_REAL_1D_LARGE_ITEMS
                                        : half / 16;
  static constexpr int items_per_thread = half / threads_per_row;
  // several threads per row: 4096/P threads keep the exchange buffer at 34.8 KB (the R2C
  // kernels' staging beside it takes as much again)
  // (rows over several warps: one row a block; two rows lost, 0.74-0.75x at 4096, session 46)
  static constexpr int block_threads =
      threads_per_row == 1 ? 128
      : threads_per_row > 32 ? threads_per_row
      : flat ? (GPUCONV_REAL_1D_FLAT_THREADS > threads_per_row ? GPUCONV_REAL_1D_FLAT_THREADS : threads_per_row)
                             : (4096 / items_per_thread > threads_per_row ? 4096 / items_per_thread : threads_per_row);
  static constexpr int rows_per_block = block_threads / threads_per_row;
  // one-lane-per-row R2C: rows of 128 bytes and more are loaded through shared memory
  static constexpr bool stage_real_input = threads_per_row == 1 && n >= 32;
  // one-lane-per-row kernels stage each warp's rows through shared memory
  static constexpr int warp_stage_bytes =
      32 * ((output_length * 8) > ((n + 4) * 4) ? (output_length * 8) : ((n + 4) * 4));
  // several-threads-per-row kernels run persistent blocks (grid from the occupancy), but for
  // the flat ones (a block a group of rows)
  static constexpr bool persistent = threads_per_row > 1 && !flat;
  // the real transforms' mirror partners through shared memory (else by shuffles, T <= 32)
  static constexpr bool shared_partners = threads_per_row > 32 || (flat && !GPUCONV_REAL_1D_FLAT_SHUFFLE_PARTNERS);
  // Persistent blocks whose rows lie within a warp can stage the next group's input into
  // shared memory by cp.async while they transform this one (each warp its own rows: no block
  // barrier), so the loads in flight take no registers and two blocks fit a multiprocessor.
  // H200, against the register prefetch: R2C 1-4% faster at n = 128..512, ~2% slower at 2048;
  // C2R, whose rows of n/2 + 1 complex take 8-byte copies, ~3% faster at n = 128 and 3-9% slower
  // at 256..2048 (session 43, 32 values a thread from 1024). With 16 values at n = 1024 (session
  // 47) C2R staged is 3-4% faster and R2C 2% slower. The others (and n = 4096, rows over several
  // warps) prefetch into registers (docs/benchmarks.md).
  static constexpr bool async_input =
      persistent && threads_per_row <= 32 &&
      ((inverse_ ? GPUCONV_REAL_1D_ASYNC_C2R_SIZES : GPUCONV_REAL_1D_ASYNC_SIZES) & n) != 0;
  // register cap through __launch_bounds__: without it the compiler hoists the next group's
  // loads and the twiddle loads far ahead and uses ~180 registers (one block per SM)
  static constexpr int flat_blocks =
      65536 / (block_threads * (inverse_ ? GPUCONV_REAL_1D_FLAT_C2R_REGS : GPUCONV_REAL_1D_FLAT_REGS));
  static constexpr int min_blocks_per_sm =
      threads_per_row == 1 ? GPUCONV_REAL_1D_LANE_MIN_BLOCKS
      : flat        ? (flat_blocks > 1 ? flat_blocks : 1)
      : async_input ? GPUCONV_REAL_1D_ASYNC_BLOCKS
      : n == 4096   ? (inverse_ ? GPUCONV_REAL_1D_4096_MIN_BLOCKS : GPUCONV_REAL_1D_4096_R2C_MIN_BLOCKS)
                    : GPUCONV_REAL_1D_MIN_BLOCKS;
  static_assert(block_threads % threads_per_row == 0, "real_1d_policy: a block holds whole rows");
  // persistent blocks load the next group into registers while transforming this one
  static constexpr bool prefetch = persistent && !async_input && GPUCONV_REAL_1D_PREFETCH &&
                                   (n != 4096 || inverse_ || GPUCONV_REAL_1D_4096_R2C_PREFETCH);
  // R2C rows spread over 2..16 lanes store through the warp's shared buffer: their output
  // rows (n/2+1 complex) start at odd 8-byte offsets, so short per-row segments would
  // write partial sectors
  static constexpr bool stage_complex_output = threads_per_row > 1 && threads_per_row <= 16;
  static constexpr int exchange_bytes =
      threads_per_row == 1 ? (block_threads / 32) * warp_stage_bytes
                           : rows_per_block * (half + half / 16) * 8;
  // async_input: each row's input staged at a stride of half + threads_per_row complex (== T
  // mod 16: the rows a half-warp reads at once start on distinct bank pairs; >= half + 1, the
  // C2R rows' length), after the exchange buffers
  static constexpr int stage_stride = half + threads_per_row;
  // async_input: one group's staging buffer
  static constexpr int stage_bytes = async_input ? rows_per_block * stage_stride * 8 : 0;
  // dynamic shared memory a block takes (over 48 KB with async_input)
  static constexpr int shared_memory_bytes = exchange_bytes + stage_bytes;
  // the Stockham passes' shared padding: one slot per 16 values, per 32 at 32 values a thread
  // (the first pass's stores t*P + r then fall on distinct banks)
  static constexpr int pad_shift = (GPUCONV_REAL_1D_WIDE_PAD && items_per_thread >= 32) ? 5 : 4;
  // the passes' twiddles from per-pass tables, a warp's loads contiguous (the plan appends them):
  // H200, n = 4096 0.67 -> 0.78x cuFFT, 2048 +1-2%; at 1024 (16 threads a row) up to 1% slower,
  // at 256 (8 threads) 2-4%: there a gather spans fewer lines (docs/benchmarks.md, session 45)
  static constexpr bool pass_tables = GPUCONV_REAL_1D_PASS_TABLES > 0 && threads_per_row >= GPUCONV_REAL_1D_PASS_TABLES;
};

}  // namespace gpuconv::fft
