// Kernel layer: batched 1D R2C and C2R in the cuFFT plan-many layout.
// R2C reads rows of n reals and writes rows of n/2+1 complex; C2R the reverse. Each thin
// __global__ entry calls the block- or warp-level pieces; the real-to-complex pre- and
// post-processing is the thread layer's (fft/thread/real.hpp).
#pragma once
#include "../block/stockham.cuh"
#include "../thread/real.hpp"
#include "../warp/exchange.cuh"
#include "../warp/staging.cuh"
#include "real_1d_policy.hpp"

namespace gpuconv::fft {

// ---- one row per lane: the whole transform in registers --------------------------------

template <int n>
__device__ GPUCONV_INLINE void r2c_rows_in_registers(const float* in, complex_t<float>* out,
                                                      long long batch, unsigned char* shared) {
  using policy = real_1d_policy<n>;
  constexpr int L = policy::output_length;
  const int warp = threadIdx.x / 32, lane = threadIdx.x & 31;
  const long long first_row = (long long)blockIdx.x * policy::rows_per_block + warp * 32;
  const long long row = first_row + lane;
  const int rows = (int)min(32LL, max(0LL, batch - first_row));

  array_t<float, n> x;
  if (row < batch) {
    const float4* src = reinterpret_cast<const float4*>(in + row * n);
    static_for<n / 4>([&](auto i) {
      constexpr int ii = decltype(i)::value;
      float4 q = __ldg(src + ii);
      x[4 * ii] = q.x; x[4 * ii + 1] = q.y; x[4 * ii + 2] = q.z; x[4 * ii + 3] = q.w;
    });
  } else {
    static_for<n>([&](auto i) { x[i.value] = 0.f; });
  }
  const auto X = rfft_t<float, n>{}(x);
  auto* stage = reinterpret_cast<complex_t<float>*>(shared + warp * policy::warp_stage_bytes);
  warp_store_complex_rows<L>(X, stage, out + first_row * L, rows);
}

template <int n>
__device__ GPUCONV_INLINE void c2r_rows_in_registers(const complex_t<float>* in, float* out,
                                                      long long batch, unsigned char* shared) {
  using policy = real_1d_policy<n>;
  constexpr int L = policy::output_length;
  const int warp = threadIdx.x / 32;
  const long long first_row = (long long)blockIdx.x * policy::rows_per_block + warp * 32;
  const int rows = (int)min(32LL, max(0LL, batch - first_row));
  unsigned char* stage = shared + warp * policy::warp_stage_bytes;

  const auto X = warp_load_complex_rows<L>(reinterpret_cast<complex_t<float>*>(stage), in + first_row * L, rows);
  const auto x = irfft_t<float, n>{}(X);
  __syncwarp();  // every lane has read its row before the buffer is reused
  warp_store_real_rows<n>(x, reinterpret_cast<float4*>(stage), out + first_row * n, rows);
}

// ---- rows over several threads: Stockham passes ----------------------------------------

template <int n>
__device__ GPUCONV_INLINE void r2c_rows_in_block(const float* in, complex_t<float>* out, long long batch,
                                                  const complex_t<float>* table, unsigned char* shared) {
  using policy = real_1d_policy<n>;
  constexpr int T = policy::threads_per_row, P = policy::items_per_thread, N = policy::half;
  using fft = block_fft_t<N, T, false>;
  const int local_row = threadIdx.x / T, t = threadIdx.x % T;
  const long long row = (long long)blockIdx.x * policy::rows_per_block + local_row;
  const bool valid = row < batch;
  auto* row_shared = reinterpret_cast<complex_t<float>*>(shared) + local_row * fft::row_shared_elems;

  const auto* z = reinterpret_cast<const complex_t<float>*>(in + row * n);
  typename fft::items_t v;
  static_for<P>([&](auto m) { v[m.value] = valid ? load_ro(z + t + T * m.value) : complex_t<float>{0.f, 0.f}; });
  fft::run(v, row_shared, t, table);

  typename fft::items_t partner;
  if constexpr (T <= 32) {
    partner = mirror_partners<T, P>(v, t);
  } else {
    __syncthreads();  // the last pass has finished reading shared memory
    static_for<P>([&](auto m) { row_shared[fft::padded(t + T * m.value)] = v[m.value]; });
    __syncthreads();
    static_for<P>([&](auto m) { partner[m.value] = row_shared[fft::padded((N - t - T * m.value) & (N - 1))]; });
  }
  if (!valid) return;
  complex_t<float>* dst = out + row * (N + 1);
  static_for<P>([&](auto m) {
    const int k = t + T * m.value;
    dst[k] = r2c_post(v[m.value], partner[m.value], load_ro(table + k));
  });
  if (t == 0) dst[N] = r2c_post(v[0], v[0], load_ro(table + N));
}

template <int n>
__device__ GPUCONV_INLINE void c2r_rows_in_block(const complex_t<float>* in, float* out, long long batch,
                                                  const complex_t<float>* table, unsigned char* shared) {
  using policy = real_1d_policy<n>;
  constexpr int T = policy::threads_per_row, P = policy::items_per_thread, N = policy::half;
  using fft = block_fft_t<N, T, true>;
  const int local_row = threadIdx.x / T, t = threadIdx.x % T;
  const long long row = (long long)blockIdx.x * policy::rows_per_block + local_row;
  const bool valid = row < batch;
  auto* row_shared = reinterpret_cast<complex_t<float>*>(shared) + local_row * fft::row_shared_elems;

  const complex_t<float>* src = in + row * (N + 1);
  typename fft::items_t v;
  static_for<P>([&](auto m) {
    const int k = t + T * m.value;
    complex_t<float> xk{0.f, 0.f}, xnk{0.f, 0.f};
    if (valid) {
      xk = load_ro(src + k);
      xnk = load_ro(src + N - k);
    }
    if (k == 0) { xk.im = 0.f; xnk.im = 0.f; }  // X[0] and X[N] are real in a Hermitian spectrum
    v[m.value] = c2r_pre(xk, xnk, load_ro(table + k));
  });
  fft::run(v, row_shared, t, table);
  if (!valid) return;
  auto* dst = reinterpret_cast<complex_t<float>*>(out + row * n);
  static_for<P>([&](auto m) { dst[t + T * m.value] = v[m.value]; });
}

// ---- entry points ------------------------------------------------------------------------

template <int n>
__global__ void __launch_bounds__(real_1d_policy<n>::block_threads)
r2c_1d_kernel(const float* __restrict__ in, complex_t<float>* __restrict__ out, long long batch,
              const complex_t<float>* __restrict__ table) {
  __shared__ __align__(16) unsigned char shared[real_1d_policy<n>::shared_memory_bytes];
  if constexpr (real_1d_policy<n>::threads_per_row == 1) {
    r2c_rows_in_registers<n>(in, out, batch, shared);
  } else {
    r2c_rows_in_block<n>(in, out, batch, table, shared);
  }
}

template <int n>
__global__ void __launch_bounds__(real_1d_policy<n>::block_threads)
c2r_1d_kernel(const complex_t<float>* __restrict__ in, float* __restrict__ out, long long batch,
              const complex_t<float>* __restrict__ table) {
  __shared__ __align__(16) unsigned char shared[real_1d_policy<n>::shared_memory_bytes];
  if constexpr (real_1d_policy<n>::threads_per_row == 1) {
    c2r_rows_in_registers<n>(in, out, batch, shared);
  } else {
    c2r_rows_in_block<n>(in, out, batch, table, shared);
  }
}

}  // namespace gpuconv::fft
