// Kernel layer: batched 1D complex FFTs along the middle axis of [outer][n][inner] arrays,
// without transposes: the column pass of the 3D transform (along H with inner = W/2+1, along
// D with inner = H*(W/2+1)), and the 3D slice path's pass along D. A block takes
// `columns_per_block` consecutive columns (the columns are numbered across `outer`, so no
// block idles on a short last group of an odd inner); thread (c, t) = (threadIdx.x mod C,
// threadIdx.x / C) holds P values of column c, so the C lanes that share t read C consecutive
// complex values (C*8 bytes, whole sectors) for every value. A column's T threads then sit in
// different warps: the block transforms synchronise the block between their passes.
// Lengths: powers of two (block_fft_t: thread t holds values t + T*m) and n = R * M for R = 3
// or 5 (block_mixed_fft_t: R values of each of M/T points a thread, fft/thread/mixed_radix.hpp).
// As in complex_1d.cuh, a pointwise multiply can run between a forward and an inverse
// transform of the same column while it is in registers (the convolution's spectrum).
#pragma once
#include <algorithm>
#include <type_traits>

#include "../block/mixed.cuh"
#include "../block/stockham.cuh"
#include "../device/cuda_check.hpp"
#include "../device/dependent_launch.cuh"
#include "../device/shared_limit.hpp"

namespace gpuconv::fft {

// The default shape of a launch: columns a block (C) and values a thread (P). The lanes that
// share t read C contiguous complex values (C*8 bytes) for every m, at a stride of inner*8
// bytes: the passes over large volumes run at copy speed only from 16-32 columns (128-256 B)
// on. Measured on the H100 (`gpuconv-bench fft3d --passes`, each pass alone, % of a copy of
// the complex volume; the H pass's inner = w/2+1 is odd, so its spans straddle one more
// sector than they fill):
//   n = 512 (512^3):       H: C=8 P=16 60%, 16/16 71%, 32/16 78%, 32/32 87%; D: 57%, 88%, 84%, 95%
//   n = 1024 (256x1024^2): H: C=4 P=16 43%, 16/16 68%, 16/32 73%
//   n = 256 along D of 256x1024^2: C=16 P=16 86%, 32/16 93%
// Up to n = 128: 4096 complex values a block (~35 KB of exchange buffers; at 128^3 every shape
// of 16 columns or more is within a few percent). Register-only columns (n <= 16): 128 a block.
// Beyond 1024 (not measured): 4096 values a block, 32 a thread.
// Mixed lengths: 32 columns a block up to n = 192 and 16 beyond; 20 values a thread for R = 5
// (4 points of 5), 24 for R = 3 (8 points of 3); the W_n twiddles loaded late. Measured on the
// H100 (`gpuconv-bench fft3d --passes`: the slice path's pass along D, ps a value, C/P):
//   n = 80: 32/20 6.07 (88% of copy), 32/10 9.58; 96: 32/24 6.70 (81%), 32/12 7.52;
//   160: 32/20 7.89 (68%), 16/20 8.74, 16/10 9.66; 192: 32/24 7.97 (68%), 16/12 8.55, 32/12
//   8.82, 16/24 15.7 (34%); 320: 16/20 8.42 (64%; 8.67 with the twiddles read early), 32/20
//   8.58, 16/10 12.2; the powers of two 64 / 128 / 256: 5.98 / 7.06 / 7.90 (91% / 77% / 69%).
//   Loading the twiddles late changed nothing measurable but at 320.
constexpr int strided_default_columns(int n) {
  if (!is_pow2(n)) return n <= 192 ? 32 : 16;
  return n <= 16 ? 128 : n <= 128 ? 4096 / n : n <= 512 ? 32 : n == 1024 ? 16 : 4096 / n;
}
constexpr int strided_default_items(int n) {
  if (!is_pow2(n)) return odd_part(n) == 5 ? 20 : 24;
  return n <= 16 ? n : n <= 256 ? 16 : 32;
}
// Lengths the strided pass takes: powers of two in [2, 4096]; 3 or 5 times a power of two
// from 16 to 128 (48 .. 640).
constexpr bool strided_length(long long n) {
  return (is_pow2(n) && n >= 2 && n <= 4096) || (is_mixed_length(n) && pow2_part(n) <= 128);
}

// mixed_twiddles: how a mixed length's W_n twiddles are read (twiddle_load_late or _ro)
template <int n_, int columns_ = strided_default_columns(n_), int items_ = strided_default_items(n_),
          typename mixed_twiddles_ = twiddle_load_late>
struct strided_c2c_policy {
  using mixed_twiddles = mixed_twiddles_;
  static_assert(strided_length(n_), "strided_c2c_policy: n must be a power of two in [2, 4096] or 3 or 5 times one "
                                    "in [16, 128]");
  static constexpr int n = n_;
  static constexpr int radix = odd_part(n_);  // 1 for a power of two
  static constexpr int m = n_ / radix;
  static_assert(items_ % radix == 0 && is_pow2(items_ / radix) && items_ <= n_ && is_pow2(columns_),
                "strided_c2c_policy: bad shape");
  static constexpr int items_per_thread = items_;
  static constexpr int threads_per_column = n / items_per_thread;
  static constexpr int columns_per_block = columns_;
  static constexpr int block_threads = columns_per_block * threads_per_column;
  static_assert(block_threads <= 1024, "strided_c2c_policy: more than 1024 threads a block");
  // a column's exchange buffers (n + n/16 values; R of M + M/16 for a mixed length) plus one
  // value, so that the C columns of a warp start on different banks
  static constexpr int column_shared_elems = threads_per_column == 1 ? 0 : radix * (m + m / 16) + 1;
  // dynamic shared memory of a launch (over 48 KB: allow_dynamic_shared first)
  static constexpr int shared_memory_bytes = columns_per_block * column_shared_elems * 8;
  static_assert(shared_memory_bytes <= 227 * 1024, "strided_c2c_policy: exchange buffers over 227 KB");
};

// A column's transforms under a policy, and where its values sit: item q of thread t is
// element time_index(t, q) before a forward transform (and after an inverse one), spectrum
// element freq_index(t, q) after it (and before an inverse one).
template <typename policy, bool mixed = (policy::radix > 1)>
struct strided_column {
  static constexpr int T = policy::threads_per_column;
  template <bool inverse>
  using fft_t_ = block_fft_t<policy::n, T, inverse, twiddle_load_ro, true>;
  static __device__ GPUCONV_INLINE int time_index(int t, int q) { return t + T * q; }
  static __device__ GPUCONV_INLINE int freq_index(int t, int q) { return t + T * q; }
  template <bool inverse, typename V>
  static __device__ GPUCONV_INLINE void run(V& v, complex_t<float>* column_shared, int t, const complex_t<float>* table) {
    fft_t_<inverse>::run(v, column_shared, t, table);
  }
};
template <typename policy>
struct strided_column<policy, true> {
  using block_t = block_mixed_fft_t<policy::radix, policy::m, policy::threads_per_column,
                                    typename policy::mixed_twiddles, true>;
  static __device__ GPUCONV_INLINE int time_index(int t, int q) { return block_t::layout::time_index(t, q); }
  static __device__ GPUCONV_INLINE int freq_index(int t, int q) { return block_t::layout::freq_index(t, q); }
  template <bool inverse, typename V>
  static __device__ GPUCONV_INLINE void run(V& v, complex_t<float>* column_shared, int t, const complex_t<float>* table) {
    if constexpr (inverse) block_t::inverse(v, column_shared, t, table);
    else block_t::forward(v, column_shared, t, table);
  }
};

// No pointwise step: a plain forward or inverse transform.
struct strided_no_pointwise {};

// Multiplies value k of column (o, ci) by spectrum[k * inner + ci]: one [n][inner] set shared
// by every outer index (every tile of a batch). Only the values from store_first on are
// stored (a convolution whose next pass reads no others: the 3D slice path's valid slices).
struct strided_multiply {
  const complex_t<float>* spectrum;
  int store_first = 0;
};

// Launched with policy::block_threads threads and policy::shared_memory_bytes of dynamic shared
// memory. table: column_twiddle_table(n).
template <int n, bool inverse, typename Pointwise, typename policy = strided_c2c_policy<n>>
__global__ void __launch_bounds__(policy::block_threads)
c2c_strided_kernel(const complex_t<float>* in, complex_t<float>* out, long long columns, long long inner,
                   const complex_t<float>* __restrict__ table, Pointwise pointwise) {
  static_assert(policy::n == n, "c2c_strided_kernel: the policy is for another length");
  constexpr int C = policy::columns_per_block, T = policy::threads_per_column, P = policy::items_per_thread;
  constexpr bool plain = std::is_same_v<Pointwise, strided_no_pointwise>;
  using column_t = strided_column<policy>;
  extern __shared__ __align__(16) unsigned char shared[];
  dependents_may_launch();  // see dependent_launch.cuh: a no-op unless launched early
  wait_for_previous();
  const int c = threadIdx.x % C, t = threadIdx.x / C;
  auto* column_shared = reinterpret_cast<complex_t<float>*>(shared) + c * policy::column_shared_elems;
  // where item q is read and written: a plain inverse reads a spectrum and writes values, a
  // plain forward the other way round, a convolution values both ways
  auto in_index = [&](int q) { return plain && inverse ? column_t::freq_index(t, q) : column_t::time_index(t, q); };
  auto out_index = [&](int q) { return plain && !inverse ? column_t::freq_index(t, q) : column_t::time_index(t, q); };
  const long long groups = (columns + C - 1) / C;
  for (long long group = blockIdx.x; group < groups; group += gridDim.x) {
    const long long column = group * C + c;
    const bool valid = column < columns;
    const long long o = valid ? column / inner : 0, ci = valid ? column - o * inner : 0;
    const long long base = o * n * inner + ci;  // value k at base + k * inner
    array_t<complex_t<float>, P> v;
    static_for<P>([&](auto m) {
      const long long k = in_index(m.value);
      v[m.value] = valid ? load_ro(in + base + k * inner) : complex_t<float>{0.f, 0.f};
    });
    if constexpr (plain) {
      column_t::template run<inverse>(v, column_shared, t, table);
    } else {
      column_t::template run<false>(v, column_shared, t, table);
      if (valid)
        static_for<P>([&](auto m) {
          const long long k = column_t::freq_index(t, m.value);
          v[m.value] = v[m.value] * load_ro(pointwise.spectrum + k * inner + ci);
        });
      if constexpr (T > 1) __syncthreads();  // the forward's last shared reads are done before the inverse writes
      column_t::template run<true>(v, column_shared, t, table);
    }
    int store_first = 0;
    if constexpr (!plain) store_first = pointwise.store_first;
    if (valid)
      static_for<P>([&](auto m) {
        const long long k = out_index(m.value);
        if (k >= store_first) out[base + k * inner] = v[m.value];
      });
    if constexpr (T > 1) __syncthreads();  // the exchange buffers are free for the next group
  }
}

// Host side: the grid of a launch over `columns` columns (blocks loop over the groups of C
// columns), from the kernel's occupancy with its dynamic shared memory.
template <int n, typename policy = strided_c2c_policy<n>>
unsigned strided_grid(long long columns, int sms) {
  auto kernel = c2c_strided_kernel<n, false, strided_multiply, policy>;
  allow_dynamic_shared(kernel, policy::shared_memory_bytes);
  int per_sm = 0;
  check_cuda(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, policy::block_threads,
                                                           policy::shared_memory_bytes),
             "cudaOccupancyMaxActiveBlocksPerMultiprocessor(c2c_strided_kernel)");
  const long long groups = (columns + policy::columns_per_block - 1) / policy::columns_per_block;
  return (unsigned)std::max<long long>(1, std::min<long long>(groups, (long long)std::max(per_sm, 1) * sms * 8));
}

// early: a programmatic dependent launch (dependent_launch.cuh)
template <int n, bool inverse, typename Pointwise, typename policy = strided_c2c_policy<n>>
void launch_c2c_strided(const complex_t<float>* in, complex_t<float>* out, long long columns, long long inner,
                        unsigned grid, const complex_t<float>* table, Pointwise op, cudaStream_t stream,
                        bool early = false) {
  auto kernel = c2c_strided_kernel<n, inverse, Pointwise, policy>;
  allow_dynamic_shared(kernel, policy::shared_memory_bytes);
  launch_maybe_early(kernel, grid, policy::block_threads, policy::shared_memory_bytes, stream, early,
                     "c2c_strided_kernel", in, out, columns, inner, table, op);
}

}  // namespace gpuconv::fft
