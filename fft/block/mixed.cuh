// Block layer: an n = R * M point complex FFT (R = 3 or 5, M a power of two) of one column
// spread over T threads, R * M / T values each (fft/thread/mixed_radix.hpp's layout): the
// R-point DFTs and the W_n twiddles in registers, and R M-point block_fft_t transforms, each
// through its own exchange buffer of the column's shared memory.
//
// line_stride > 0: the column is a line of a 2D array in shared memory, element i at
// i * line_stride (block_fft_t's line_stride), and sub-transform k1 exchanges through the line's
// own elements k1 M .. k1 M + M - 1 (the caller synchronises between its reads of the line
// and the transform, and between the transform and its writes).
//
// batch_exchanges: the R sub-transforms pass by pass together (block_fft_t::run_rows), one
// exchange (barrier pair) a pass for all R instead of R of them.
//
// Twiddle table: W_{2M}^e (e < 2M, block_fft_t's) followed by W_n^e (e < n);
// mixed_twiddle_table builds it. The inverse is unnormalised.
#pragma once
#include "../thread/mixed_radix.hpp"
#include "stockham.cuh"

namespace gpuconv::fft {

template <int R, int M, int T, typename twiddle_load = twiddle_load_ro, bool rows_across_warps = false,
          int line_stride = 0, bool batch_exchanges = false>
struct block_mixed_fft_t {
  using layout = mixed_layout<R, M, T>;
  static constexpr int n = R * M, Pm = M / T, items_per_thread = R * Pm;
  static constexpr int table_n = 2 * M + n;
  using value_t = complex_t<float>;
  using items_t = array_t<value_t, items_per_thread>;
  template <bool inverse>
  using sub_t = block_fft_t<M, T, inverse, twiddle_load, rows_across_warps, 4, false, line_stride>;
  // complex values of shared memory one column needs: an exchange buffer per M-point transform
  // (where the column is a line of a 2D array: the offset of sub-transform k1's elements is
  // k1 * sub_shared_elems)
  static constexpr int sub_shared_elems = line_stride > 0 ? M * line_stride : sub_t<false>::row_shared_elems;
  static constexpr int column_shared_elems = R * sub_shared_elems;

  // On entry v[q] = x[time_index(t, q)]; on exit v[q] = X[freq_index(t, q)].
  static __device__ GPUCONV_INLINE void forward(items_t& v, value_t* column_shared, int t, const value_t* table) {
    layout::template forward_odd<float>(v, t, [&](int e) { return twiddle_load::load(table + 2 * M + e); });
    sub_transforms<false>(v, column_shared, t, table);
  }
  // On entry v[q] = X[freq_index(t, q)]; on exit v[q] = x[time_index(t, q)] (times n).
  static __device__ GPUCONV_INLINE void inverse(items_t& v, value_t* column_shared, int t, const value_t* table) {
    sub_transforms<true>(v, column_shared, t, table);
    layout::template inverse_odd<float>(v, t, [&](int e) { return twiddle_load::load(table + 2 * M + e); });
  }

 private:
  // The R sub-transforms in groups of Q (batch_exchanges: all R at once, else one at a time),
  // each group through run_rows.
  template <bool inverse>
  static __device__ GPUCONV_INLINE void sub_transforms(items_t& v, value_t* column_shared, int t, const value_t* table) {
    constexpr int Q = batch_exchanges ? R : 1;
    static_for<R / Q>([&](auto g) {
      array_t<typename sub_t<inverse>::items_t, Q> y;
      static_for<Q>([&](auto q) {
        static_for<Pm>([&](auto m) { y[q.value][m.value] = v[(g.value * Q + q.value) * Pm + m.value]; });
      });
      sub_t<inverse>::template run_rows<Q, sub_shared_elems>(y, column_shared + g.value * Q * sub_shared_elems, t, table);
      static_for<Q>([&](auto q) {
        static_for<Pm>([&](auto m) { v[(g.value * Q + q.value) * Pm + m.value] = y[q.value][m.value]; });
      });
    });
  }
};

}  // namespace gpuconv::fft
