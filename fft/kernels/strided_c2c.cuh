// Kernel layer: batched 1D complex FFTs along the middle axis of [outer][n][inner] arrays,
// without transposes: the column pass of the 3D transform (along H with inner = W/2+1, along
// D with inner = H*(W/2+1)). A block takes `columns_per_block` consecutive columns (the
// columns are numbered across `outer`, so no block idles on a short last group of an odd
// inner); thread (c, t) = (threadIdx.x mod C, threadIdx.x / C) holds values t + T*m of column
// c, so the C lanes that share t read C consecutive complex values (C*8 bytes, whole
// sectors) for every m. A column's T threads then sit in different warps: block_fft_t with
// rows_across_warps synchronises the block between its passes.
// As in complex_1d.cuh, a pointwise multiply can run between a forward and an inverse
// transform of the same column while it is in registers (the convolution's spectrum).
#pragma once
#include "../block/stockham.cuh"

namespace gpuconv::fft {

template <int n_>
struct strided_c2c_policy {
  static_assert(is_pow2(n_) && n_ >= 2 && n_ <= 4096, "strided_c2c_policy: n must be a power of two in [2, 4096]");
  static constexpr int n = n_;
  // complex_1d_policy's shapes: whole columns of up to 16 values in one thread, 16 per thread
  // up to 1024, 32 beyond
  static constexpr int items_per_thread = n <= 16 ? n : (n >= 2048 ? 32 : 16);
  static constexpr int threads_per_column = n / items_per_thread;
  // 4096 complex values per block (the exchange buffers at ~35 KB of static shared memory);
  // register-only columns: 128 per block
  static constexpr int columns_per_block = threads_per_column == 1 ? 128 : 4096 / n;
  static constexpr int block_threads = columns_per_block * threads_per_column;
  // a column's exchange buffer (n + n/16 values) plus one value, so that the C columns of a
  // warp start on different banks
  static constexpr int column_shared_elems = threads_per_column == 1 ? 0 : n + n / 16 + 1;
  static constexpr int shared_memory_bytes = threads_per_column == 1 ? 16 : columns_per_block * column_shared_elems * 8;
};

// No pointwise step: a plain forward or inverse transform.
struct strided_no_pointwise {};

// Multiplies value k of column (o, ci) by spectrum[k * inner + ci]: one [n][inner] set shared
// by every outer index (every tile of a batch).
struct strided_multiply {
  const complex_t<float>* spectrum;
};

template <int n, bool inverse, typename Pointwise>
__global__ void __launch_bounds__(strided_c2c_policy<n>::block_threads)
c2c_strided_kernel(const complex_t<float>* in, complex_t<float>* out, long long columns, long long inner,
                   const complex_t<float>* __restrict__ table, Pointwise pointwise) {
  using policy = strided_c2c_policy<n>;
  constexpr int C = policy::columns_per_block, T = policy::threads_per_column, P = policy::items_per_thread;
  __shared__ __align__(16) unsigned char shared[policy::shared_memory_bytes];
  using fwd_t = block_fft_t<n, T, false, twiddle_load_ro, true>;
  using inv_t = block_fft_t<n, T, true, twiddle_load_ro, true>;
  const int c = threadIdx.x % C, t = threadIdx.x / C;
  auto* column_shared = reinterpret_cast<complex_t<float>*>(shared) + c * policy::column_shared_elems;
  const long long groups = (columns + C - 1) / C;
  for (long long group = blockIdx.x; group < groups; group += gridDim.x) {
    const long long column = group * C + c;
    const bool valid = column < columns;
    const long long o = valid ? column / inner : 0, ci = valid ? column - o * inner : 0;
    const long long base = o * n * inner + ci;  // value k at base + k * inner
    array_t<complex_t<float>, P> v;
    static_for<P>([&](auto m) {
      const long long k = t + T * m.value;
      v[m.value] = valid ? load_ro(in + base + k * inner) : complex_t<float>{0.f, 0.f};
    });
    if constexpr (std::is_same_v<Pointwise, strided_no_pointwise>) {
      block_fft_t<n, T, inverse, twiddle_load_ro, true>::run(v, column_shared, t, table);
    } else {
      fwd_t::run(v, column_shared, t, table);
      if (valid)
        static_for<P>([&](auto m) {
          const long long k = t + T * m.value;
          v[m.value] = v[m.value] * load_ro(pointwise.spectrum + k * inner + ci);
        });
      if constexpr (T > 1) __syncthreads();  // the forward's last shared reads are done before the inverse writes
      inv_t::run(v, column_shared, t, table);
    }
    if (valid)
      static_for<P>([&](auto m) {
        const long long k = t + T * m.value;
        out[base + k * inner] = v[m.value];
      });
    if constexpr (T > 1) __syncthreads();  // the exchange buffers are free for the next group
  }
}

}  // namespace gpuconv::fft
