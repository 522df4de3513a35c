// Compile-time launch policies of the batched 1D real transforms, one per size n.
// Host code sizes grids and shared memory from these traits; kernels use the same
// constants in __launch_bounds__.
#pragma once
#include "../thread/config.hpp"

namespace gpuconv::fft {

template <int n_>
struct real_1d_policy {
  static_assert(is_pow2(n_) && n_ >= 4 && n_ <= 4096, "real_1d_policy: n must be a power of two in [4, 4096]");
  static constexpr int n = n_;
  static constexpr int half = n / 2;                       // complex FFT length N
  static constexpr int input_length = n;                   // R2C: reals per row in
  static constexpr int output_length = half + 1;           // R2C: complex per row out
  // Rows up to 64 points live in one thread's registers; longer rows use 16 values per
  // thread and Stockham passes through shared memory.
  static constexpr int threads_per_row = half <= 32 ? 1 : half / 16;
  static constexpr int items_per_thread = half / threads_per_row;
  static constexpr int block_threads = threads_per_row == 1 ? 128 : 256;
  static constexpr int rows_per_block = block_threads / threads_per_row;
  // one-lane-per-row kernels stage each warp's rows through shared memory
  static constexpr int warp_stage_bytes =
      32 * ((output_length * 8) > ((n + 4) * 4) ? (output_length * 8) : ((n + 4) * 4));
  static constexpr int shared_memory_bytes =
      threads_per_row == 1 ? (block_threads / 32) * warp_stage_bytes
                           : rows_per_block * (half + half / 16) * 8;
};

}  // namespace gpuconv::fft
