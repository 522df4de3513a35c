// The per-thread arithmetic of plan3d's CUDA separable passes (separable3d.cu), written for
// both compilers: the kernels inline it, and tests/conv/test_separable3d_emulation.cpp runs it on
// the CPU against a double reference (every boundary, K, window position), so that its index
// arithmetic (the register carry between chunks, the values read as zero) is checked without a
// GPU.
#pragma once
#include <vector_types.h>

#include "../fft/thread/config.hpp"
#include "semantics.hpp"

namespace gpuconv::conv {

// The taps of a chunk: `rows` floats from a 16-byte aligned table, zero-padded to whole chunks
// (cuda3d_separable's constructor builds it).
template <int rows>
__device__ GPUCONV_INLINE void chunk_taps(const float* __restrict__ taps, float (&t)[rows]) {
  static_assert(rows % 4 == 0, "chunks of whole float4s");
#pragma unroll
  for (int j = 0; j < rows / 4; ++j) {
#if defined(__CUDA_ARCH__)
    const float4 v = __ldg(reinterpret_cast<const float4*>(taps) + j);
#else
    const float4 v = reinterpret_cast<const float4*>(taps)[j];
#endif
    t[4 * j] = v.x, t[4 * j + 1] = v.y, t[4 * j + 2] = v.z, t[4 * j + 3] = v.w;
  }
}

// One chunk of `rows` taps (taps[0 .. rows), in order) over its 2 rows - 1 window values:
// acc[r] += taps[j] x[r - j + rows - 1].
template <int rows>
__device__ GPUCONV_INLINE void chunk_sums(const float* __restrict__ taps, const float* x, float (&acc)[rows]) {
  float t[rows];
  chunk_taps<rows>(taps, t);
#pragma unroll
  for (int j = 0; j < rows; ++j)
#pragma unroll
    for (int r = 0; r < rows; ++r) acc[r] += t[j] * x[r - j + rows - 1];
}

// Values x[0 .. count) of a chunk's window from rows first .. first + count - 1 of a column
// (col[row * inner]); the first `skip` of them are 0 (rows below the window serve only zero taps
// and are not read: no value outside the window reaches a sum, and no row before the array is
// touched). Not edge: every row read is inside the column, through a pointer stepped by `inner`
// (two integer instructions an address). edge: each row through the boundary rule.
template <int count, typename idx_t, typename in_t>
__device__ GPUCONV_INLINE void load_rows(float* x, const in_t* __restrict__ col, idx_t inner, long long first, int skip,
                                          int n_src, boundary b, float outside, bool edge) {
  if (!edge) {
    const in_t* a = col + idx_t(first) * inner;
    if (skip <= 0) {
#pragma unroll
      for (int q = 0; q < count; ++q, a += inner) x[q] = float(*a);
    } else {
#pragma unroll
      for (int q = 0; q < count; ++q, a += inner) x[q] = q >= skip ? float(*a) : 0.f;
    }
  } else {
#pragma unroll
    for (int q = 0; q < count; ++q) {
      const int r = border_index(first + q, n_src, b);
      x[q] = q < skip ? 0.f : r < 0 ? outside : float(col[idx_t(r) * inner]);
    }
  }
}

// The sums of `rows` outputs whose first reads row `top` of a column (col[row * inner]): the taps
// `rows` at a time, each chunk's rows x rows multiply-adds over its 2 rows - 1 source values
// x[q] = row top - l0 - (rows - 1) + q (output r takes x[r - j + rows - 1] with tap l0 + j, zero
// past K). The next chunk's window is `rows` rows lower: its top rows - 1 values are this one's
// first ones (moved in registers), so a chunk after the first loads `rows` values (K = 31, 16
// rows: 47 loads instead of 62). Rows below top - (K - 1) are read as 0 (load_rows). edge: the
// window leaves the column, and each row goes through the boundary rule (the same sums, in the
// same order). idx_t: int where a column's offsets fit in 32 bits.
template <int rows, typename idx_t, typename in_t>
__device__ GPUCONV_INLINE void window_sums(const in_t* __restrict__ col, idx_t inner, long long top, int K, int n_src,
                                            boundary b, float outside, bool edge, const float* __restrict__ taps,
                                            float (&acc)[rows]) {
  constexpr int span = 2 * rows - 1;
  float x[span];
  long long first = top - (rows - 1);
  // the chunk at l0 has top - (K - 1) - first = l0 + rows - K values below the window
  load_rows<span, idx_t>(x, col, inner, first, rows - K, n_src, b, outside, edge);
  for (int l0 = 0;;) {
    chunk_sums<rows>(taps + l0, x, acc);
    l0 += rows;
    if (l0 >= K) break;
#pragma unroll
    for (int q = span - 1; q >= rows; --q) x[q] = x[q - rows];
    first -= rows;
    load_rows<rows, idx_t>(x, col, inner, first, l0 + rows - K, n_src, b, outside, edge);
  }
}

// The row pass's shared window: value v at slot(v + lead), four padding slots after every 32
// (row_taps_kernel).
__host__ __device__ constexpr int window_slot(int u) { return u + 4 * (u >> 5); }
// floats of one row's window (a multiple of four)
__host__ __device__ constexpr int window_floats(int seg, int K) { return (window_slot(seg + K + 32) + 3) / 4 * 4; }

// The row pass's sums for the thread at `base` of its segment (row_taps_kernel), from the
// segment's window staged in shared memory: window value v at w[window_slot(v + lead)], output
// base + r reading values base + r - l + K - 1. Chunks of `rows` taps, each chunk's 2 rows - 1
// values x[q] = value first + q, first = base + K - 1 - l0 - (rows - 1), read as float4s (lead
// puts first + lead on a multiple of 4); a chunk after the first reads the `rows` values it does
// not share with the chunk before (its top rows - 1 are that one's first ones, moved in
// registers). The last chunk's values below base serve only zero taps and are set to 0 (they
// may be another thread's, or stale).
template <int rows>
__device__ GPUCONV_INLINE void row_window_sums(const float* w, int base, int K, int lead, const float* __restrict__ taps,
                                              float (&acc)[rows]) {
  static_assert(rows == 8, "a chunk's 15 values as four float4s");
#pragma unroll
  for (int r = 0; r < rows; ++r) acc[r] = 0.f;
  int first = base + K - 1 - (rows - 1);  // x[q]: value first + q
  float x[2 * rows];
#pragma unroll
  for (int h = 0; h < rows / 2; ++h) {
    const float4 v = *reinterpret_cast<const float4*>(w + window_slot(first + lead + 4 * h));
    x[4 * h] = v.x, x[4 * h + 1] = v.y, x[4 * h + 2] = v.z, x[4 * h + 3] = v.w;
  }
  int l0 = 0;
  for (; l0 + rows < K; l0 += rows) {  // chunks with another after them
    chunk_sums<rows>(taps + l0, x, acc);
    // the next chunk's values are `rows` lower: its top rows - 1 are this chunk's first ones
#pragma unroll
    for (int q = 2 * rows - 2; q >= rows; --q) x[q] = x[q - rows];
    first -= rows;
#pragma unroll
    for (int h = 0; h < rows / 4; ++h) {
      const float4 v = *reinterpret_cast<const float4*>(w + window_slot(first + lead + 4 * h));
      x[4 * h] = v.x, x[4 * h + 1] = v.y, x[4 * h + 2] = v.z, x[4 * h + 3] = v.w;
    }
  }
  if (l0 + rows > K) {  // first < base: values below base serve only zero taps (and may be stale)
#pragma unroll
    for (int q = 0; q < rows; ++q) x[q] = first + q >= base ? x[q] : 0.f;
  }
  chunk_sums<rows>(taps + l0, x, acc);
}

}  // namespace gpuconv::conv
