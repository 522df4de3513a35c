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
#ifndef GPUCONV_REAL_1D_LARGE_ITEMS  // values per thread for n >= 2048
#define GPUCONV_REAL_1D_LARGE_ITEMS 32
#endif
#ifndef GPUCONV_REAL_1D_LARGE_ROW_BLOCKS  // 1: one row per block for rows over several warps
#define GPUCONV_REAL_1D_LARGE_ROW_BLOCKS 0
#endif

namespace gpuconv::fft {

template <int n_>
struct real_1d_policy {
  static_assert(is_pow2(n_) && n_ >= 4 && n_ <= 4096, "real_1d_policy: n must be a power of two in [4, 4096]");
  static constexpr int n = n_;
  static constexpr int half = n / 2;                       // complex FFT length N
  static constexpr int input_length = n;                   // R2C: reals per row in
  static constexpr int output_length = half + 1;           // R2C: complex per row out
  // Rows up to 64 points live in one thread's registers; longer rows use 16 values per
  // thread (32 from n = 2048: two radix-32 passes keep n = 2048 inside one warp) and
  // Stockham passes through shared memory. Measured on the H100: docs/benchmarks.md.
  static constexpr int threads_per_row =
      half <= 32 ? 1 : (n >= 2048 ? half / GPUCONV_REAL_1D_LARGE_ITEMS : half / 16);
  static constexpr int items_per_thread = half / threads_per_row;
  // several threads per row: 4096/P threads keep the exchange buffer at 34.8 KB (static
  // shared memory stops at 48 KB)
  static constexpr int block_threads =
      threads_per_row == 1 ? 128
                           : ((threads_per_row > 32 && GPUCONV_REAL_1D_LARGE_ROW_BLOCKS)
                                  ? threads_per_row
                                  : (4096 / items_per_thread > threads_per_row ? 4096 / items_per_thread : threads_per_row));
  static constexpr int rows_per_block = block_threads / threads_per_row;
  // one-lane-per-row R2C: rows of 128 bytes and more are loaded through shared memory
  static constexpr bool stage_real_input = threads_per_row == 1 && n >= 32;
  // one-lane-per-row kernels stage each warp's rows through shared memory
  static constexpr int warp_stage_bytes =
      32 * ((output_length * 8) > ((n + 4) * 4) ? (output_length * 8) : ((n + 4) * 4));
  // several-threads-per-row kernels run persistent blocks (grid from the occupancy)
  static constexpr bool persistent = threads_per_row > 1;
  // register cap through __launch_bounds__: without it the compiler hoists the next group's
  // loads and the twiddle loads far ahead and uses ~180 registers (one block per SM)
  static constexpr int min_blocks_per_sm = persistent ? GPUCONV_REAL_1D_MIN_BLOCKS : 1;
  static_assert(block_threads % threads_per_row == 0, "real_1d_policy: a block holds whole rows");
  // persistent blocks load the next group into registers while transforming this one
  static constexpr bool prefetch = persistent && GPUCONV_REAL_1D_PREFETCH;
  // R2C rows spread over 2..16 lanes store through the warp's shared buffer: their output
  // rows (n/2+1 complex) start at odd 8-byte offsets, so short per-row segments would
  // write partial sectors
  static constexpr bool stage_complex_output = threads_per_row > 1 && threads_per_row <= 16;
  static constexpr int shared_memory_bytes =
      threads_per_row == 1 ? (block_threads / 32) * warp_stage_bytes
                           : rows_per_block * (half + half / 16) * 8;
};

}  // namespace gpuconv::fft
