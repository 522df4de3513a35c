// Kernel layer: batched 1D complex-to-complex FFTs over contiguous rows of n values.
//
// Used by the 2D transforms on transposed data (a column pass is a row pass after a
// transpose). A pointwise operation can run between a forward and an inverse transform of
// the same row while it is still in registers: that is the convolution's spectrum multiply.
#pragma once
#include "../block/stockham.cuh"

namespace gpuconv::fft {

template <int n_>
struct complex_1d_policy {
  static_assert(is_pow2(n_) && n_ >= 2 && n_ <= 4096, "complex_1d_policy: n must be a power of two in [2, 4096]");
  static constexpr int n = n_;
  // rows of up to 16 values in one thread, 16 per thread up to 1024, 32 per thread beyond (the
  // real transforms' half-length FFT, real_1d_policy, takes 32 from 512)
  static constexpr int items_per_thread = n <= 16 ? n : (n >= 2048 ? 32 : 16);
  static constexpr int threads_per_row = n / items_per_thread;
  static constexpr int block_threads = threads_per_row == 1 ? 128 : (4096 / items_per_thread > threads_per_row ? 4096 / items_per_thread : threads_per_row);
  static constexpr int rows_per_block = block_threads / threads_per_row;
  static constexpr int shared_memory_bytes = threads_per_row == 1 ? 16 : rows_per_block * (n + n / 16) * 8;
  // the row's Stockham passes, forward or inverse. The real transforms' per-pass twiddle tables,
  // wide padding and per-row barriers were tried here too and ran even on the 2D plan's columns
  // and the 3D FFT's rows (H200, sessions 46-47, docs/benchmarks.md), so these keep the plain ones.
  template <bool inverse>
  using passes_t = block_fft_t<n, threads_per_row, inverse>;
};

// No pointwise step: a plain forward or inverse transform.
struct no_pointwise {};

// Multiplies row r's spectrum by spectrum[(r mod rows_per_set) * n + k] (the same set of
// rows for every batch entry), as the convolution does with its kernel's spectrum.
struct multiply_by_spectrum {
  const complex_t<float>* spectrum;
  long long rows_per_set;
};

template <int n, bool inverse, typename Pointwise>
__global__ void __launch_bounds__(complex_1d_policy<n>::block_threads)
c2c_1d_kernel(const complex_t<float>* __restrict__ in, complex_t<float>* out, long long rows,
              const complex_t<float>* __restrict__ table, Pointwise pointwise) {
  using policy = complex_1d_policy<n>;
  constexpr int T = policy::threads_per_row, P = policy::items_per_thread;
  __shared__ __align__(16) unsigned char shared[policy::shared_memory_bytes];
  using fwd_t = typename policy::template passes_t<false>;
  using inv_t = typename policy::template passes_t<true>;
  // block_fft_t's table is W_{2N}^e (N = n here): the real transforms' table of length 2n
  const int local_row = threadIdx.x / T, t = threadIdx.x % T;
  auto* row_shared = reinterpret_cast<complex_t<float>*>(shared) + local_row * fwd_t::row_shared_elems;
  const long long groups = (rows + policy::rows_per_block - 1) / policy::rows_per_block;
  for (long long group = blockIdx.x; group < groups; group += gridDim.x) {
    const long long row = group * policy::rows_per_block + local_row;
    const bool valid = row < rows;
    array_t<complex_t<float>, P> v;
    static_for<P>([&](auto m) {
      v[m.value] = valid ? load_ro(in + row * n + t + T * m.value) : complex_t<float>{0.f, 0.f};
    });
    if constexpr (std::is_same_v<Pointwise, no_pointwise>) {
      policy::template passes_t<inverse>::run(v, row_shared, t, table);
    } else {
      fwd_t::run(v, row_shared, t, table);
      const complex_t<float>* s = pointwise.spectrum + (valid ? (row % pointwise.rows_per_set) * n : 0);
      static_for<P>([&](auto m) { v[m.value] = v[m.value] * load_ro(s + t + T * m.value); });
      fwd_t::sync();  // pass reads done before the inverse writes
      inv_t::run(v, row_shared, t, table);
    }
    if (valid) static_for<P>([&](auto m) { out[row * n + t + T * m.value] = v[m.value]; });
    fwd_t::sync();
  }
}

}  // namespace gpuconv::fft
