// Kernel layer: batched 1D R2C and C2R in the cuFFT plan-many layout.
// R2C reads rows of n reals and writes rows of n/2+1 complex; C2R the reverse. Each thin
// __global__ entry calls the block- or warp-level pieces; the real-to-complex pre- and
// post-processing is the thread layer's (fft/thread/real.hpp).
#pragma once
#include "../block/stockham.cuh"
#include "../device/dependent_launch.cuh"
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
  unsigned char* stage = shared + warp * policy::warp_stage_bytes;

  array_t<float, n> x;
  if constexpr (policy::stage_real_input) {
    // Long rows: lane-strided loads would need each sector to stay in L1 across n/4
    // instructions; load the warp's span coalesced through shared memory instead.
    x = warp_load_real_rows<n>(reinterpret_cast<float4*>(stage), in + first_row * n, rows);
    __syncwarp();  // every lane has its row before the buffer takes the output
  } else if (row < batch) {
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
  warp_store_complex_rows<L>(X, reinterpret_cast<complex_t<float>*>(stage), out + first_row * L, rows);
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
//
// Flat kernels (real_1d_policy::flat) transform one group of rows_per_block rows a block. The
// persistent ones (R2C where not flat, C2R's staged kernels) loop over the groups (grid-stride)
// and stage the next group's rows into shared memory by cp.async while they transform the
// current one.

template <int n, bool inverse = false, bool staged = false>
struct block_rows_t {
  using policy = real_1d_policy<n, inverse, staged>;
  static constexpr int T = policy::threads_per_row, P = policy::items_per_thread, N = policy::half;
  using items_t = array_t<complex_t<float>, P>;

  int local_row = threadIdx.x / T, t = threadIdx.x % T;
  long long groups;

  __device__ explicit block_rows_t(long long batch) : groups((batch + policy::rows_per_block - 1) / policy::rows_per_block) {}
  __device__ long long row_of(long long group) const { return group * policy::rows_per_block + local_row; }

  // The flat kernels' mirror partners Z[(N - k) mod N] of each held k = t + T*m (v[m] = Z[k]),
  // through shared memory one value at a time (the persistent kernels' rows lie within a warp
  // and take a second array of P values by shuffles, mirror_partners; flat so at n = 1024 under
  // a 64-register cap: 168-320 bytes of spills against 8, 0.49x cuFFT against 0.96x; H200,
  // session 51): publish puts v[m] = Z[t + T*m] in the row's buffer, then partner<m>() reads
  // Z[(N - t - T*m) mod N]
  template <typename fft>
  __device__ GPUCONV_INLINE void publish(const items_t& v, complex_t<float>* row_shared) const {
    fft::sync();  // earlier reads of the buffer are done
    static_for<P>([&](auto m) { row_shared[fft::padded(t + T * m.value)] = v[m.value]; });
    fft::sync();
  }
  template <typename fft, int m>
  __device__ GPUCONV_INLINE complex_t<float> partner(const complex_t<float>* row_shared) const {
    return row_shared[fft::padded((N - t - T * m) & (N - 1))];
  }

  // v[m] = row[t + T*m] (zeros where !ok), from one pointer a thread so that the P loads take
  // immediate offsets: written as row + t + T*m, ptxas gave each load an address pair of its own
  // and a flat C2R at 72 registers spilled 32 bytes (none so; 0.90x -> 1.01x cuFFT at n = 1024,
  // R2C within 1%: H200, sessions 51-52)
  __device__ GPUCONV_INLINE void load_row(items_t& v, const complex_t<float>* row, bool ok) const {
    const complex_t<float>* mine = row + t;
    static_for<P>([&](auto m) { v[m.value] = ok ? load_ro(mine + T * m.value) : complex_t<float>{0.f, 0.f}; });
  }

  // the row's Stockham passes
  using passes_t =
      block_fft_t<N, T, inverse, twiddle_load_ro, false, policy::pad_shift, policy::pass_tables>;

  static __device__ GPUCONV_INLINE void end_group() { passes_t::sync(); }  // the buffer is free for the next group

  // persistent: the warp's rows of `group` (row length L complex in global memory, from `z`)
  // into its staging rows, without waiting (nothing past the batch or the last group)
  static constexpr int rows_per_warp = T <= 32 ? 32 / T : 1;
  template <int L>
  __device__ GPUCONV_INLINE void stage(complex_t<float>* staging, const complex_t<float>* z, long long group,
                                       long long batch) const {
    const long long first = group * policy::rows_per_block + (local_row / rows_per_warp) * rows_per_warp;
    const long long left = group < groups ? batch - first : 0;
    const int count = left <= 0 ? 0 : left < rows_per_warp ? int(left) : rows_per_warp;
    warp_stage_rows_async<L, policy::stage_stride>(staging + (local_row / rows_per_warp) * rows_per_warp * policy::stage_stride,
                                                   z + first * L, count);
  }
  // this thread's row in the staging buffer
  __device__ GPUCONV_INLINE const complex_t<float>* staged_row(const complex_t<float>* staging) const {
    return staging + local_row * policy::stage_stride;
  }

  // persistent: waits for `group` (staged one iteration ago), hands this thread's staged row
  // to read(row, in_batch), then stages the block's next group into the buffer. (A second
  // buffer, so that the group after next loads during this one's transform, lost on the H200:
  // docs/benchmarks.md, session 47.)
  template <int L, typename Read>
  __device__ GPUCONV_INLINE void take_staged(complex_t<float>* staging, const complex_t<float>* z, long long group,
                                             long long batch, Read&& read) const {
    warp_stage_wait();
    read(staged_row(staging), row_of(group) < batch);
    __syncwarp();  // the warp has read its rows: the buffer takes the next group
    stage<L>(staging, z, group + gridDim.x, batch);
  }
};

template <int n>
__device__ GPUCONV_INLINE void r2c_rows_in_block(const float* in, complex_t<float>* out, long long batch,
                                                  const complex_t<float>* table, unsigned char* shared) {
  using rows_t = block_rows_t<n>;
  constexpr int T = rows_t::T, P = rows_t::P, N = rows_t::N;
  using fft = typename rows_t::passes_t;
  const rows_t rows(batch);
  const int t = rows.t;
  auto* row_shared = reinterpret_cast<complex_t<float>*>(shared) + rows.local_row * fft::row_shared_elems;
  const auto* z = reinterpret_cast<const complex_t<float>*>(in);  // row r starts at z + r*N

  auto load = [&](typename rows_t::items_t& v, long long group) {
    const long long row = rows.row_of(group);
    const bool ok = group < rows.groups && row < batch;
    rows.load_row(v, z + row * N, ok);
  };
  auto* staging = reinterpret_cast<complex_t<float>*>(shared + rows_t::policy::exchange_bytes);
  typename rows_t::items_t v;
  if constexpr (rows_t::policy::persistent) rows.template stage<N>(staging, z, blockIdx.x, batch);
  for (long long group = blockIdx.x; group < rows.groups; group += gridDim.x) {
    if constexpr (rows_t::policy::persistent) {
      rows.template take_staged<N>(staging, z, group, batch, [&](const complex_t<float>* mine, bool ok) {
        static_for<P>([&](auto m) { v[m.value] = ok ? mine[t + T * m.value] : complex_t<float>{0.f, 0.f}; });
      });
    } else {
      load(v, group);
    }
    fft::run(v, row_shared, t, table);
    const long long row = rows.row_of(group);
    complex_t<float> x_last;  // lane 0: from Z[0]
    if constexpr (rows_t::policy::flat) {
      rows.template publish<fft>(v, row_shared);
      static_for<P>([&](auto m) {
        const auto p = rows.template partner<fft, decltype(m)::value>(row_shared);
        if constexpr (decltype(m)::value == 0) x_last = r2c_post(p, p, load_ro(table + N));
        v[m.value] = r2c_post(v[m.value], p, load_ro(table + t + T * m.value));
      });
    } else {
      static_assert(T <= 32, "r2c_rows_in_block: persistent rows lie within a warp (partners by shuffles)");
      const auto partner = mirror_partners<T, P>(v, t);
      static_for<P>([&](auto m) { v[m.value] = r2c_post(v[m.value], partner[m.value], load_ro(table + t + T * m.value)); });
      x_last = r2c_post(partner[0], partner[0], load_ro(table + N));
    }
    if constexpr (rows_t::policy::stage_complex_output) {
      static_assert(T <= N / 16, "the staging stride N + T must fit the row's exchange buffer");
      // the warp's rows are contiguous in global memory and in row_shared
      constexpr int rows_per_warp = 32 / T;
      const int warp_row0 = (rows.local_row / rows_per_warp) * rows_per_warp;
      const long long first = rows.row_of(group) - (rows.local_row - warp_row0);
      __syncwarp();  // the last pass's shared reads are done
      warp_store_striped_complex_rows<T, P>(v, x_last, reinterpret_cast<complex_t<float>*>(shared) +
                                                          warp_row0 * fft::row_shared_elems,
                                            out + first * (N + 1), (int)min((long long)rows_per_warp, max(0LL, batch - first)));
    } else if (row < batch) {
      complex_t<float>* dst = out + row * (N + 1);
      static_for<P>([&](auto m) { dst[t + T * m.value] = v[m.value]; });
      if (t == 0) dst[N] = x_last;
    }
    rows_t::end_group();
  }
}

template <int n, bool staged>
__device__ GPUCONV_INLINE void c2r_rows_in_block(const complex_t<float>* in, float* out, long long batch,
                                                  const complex_t<float>* table, unsigned char* shared) {
  using rows_t = block_rows_t<n, true, staged>;
  constexpr int T = rows_t::T, P = rows_t::P, N = rows_t::N;
  using fft = typename rows_t::passes_t;
  const rows_t rows(batch);
  const int t = rows.t;
  auto* row_shared = reinterpret_cast<complex_t<float>*>(shared) + rows.local_row * fft::row_shared_elems;
  auto* staging = reinterpret_cast<complex_t<float>*>(shared + rows_t::policy::exchange_bytes);

  if constexpr (rows_t::policy::persistent) rows.template stage<N + 1>(staging, in, blockIdx.x, batch);
  for (long long group = blockIdx.x; group < rows.groups; group += gridDim.x) {
    // v[m] = X[t + T*m] for every m, and X[N] (needed by lane 0 only)
    typename rows_t::items_t v;
    complex_t<float> x_last;
    if constexpr (rows_t::policy::persistent) {
      rows.template take_staged<N + 1>(staging, in, group, batch, [&](const complex_t<float>* mine, bool ok) {
        static_for<P>([&](auto m) { v[m.value] = ok ? mine[t + T * m.value] : complex_t<float>{0.f, 0.f}; });
        x_last = (ok && t == 0) ? mine[N] : complex_t<float>{0.f, 0.f};
      });
    } else {
      const long long row = rows.row_of(group);
      const bool ok = row < batch;
      const complex_t<float>* src = in + row * (N + 1);
      rows.load_row(v, src, ok);
      x_last = (ok && t == 0) ? load_ro(src + N) : complex_t<float>{0.f, 0.f};
    }
    if constexpr (rows_t::policy::flat) {
      if (t == 0) {
        v[0].im = 0.f;  // X[0] and X[N] are real in a Hermitian spectrum
        x_last.im = 0.f;
      }
      rows.template publish<fft>(v, row_shared);
      static_for<P>([&](auto m) {
        auto p = rows.template partner<fft, decltype(m)::value>(row_shared);  // X[N - k]; for k = 0 that is X[N]
        if constexpr (decltype(m)::value == 0) {
          if (t == 0) p = x_last;
        }
        v[m.value] = c2r_pre(v[m.value], p, load_ro(table + t + T * m.value));
      });
      fft::sync();  // partner reads are done before pass 1 writes
    } else {
      static_assert(T <= 32, "c2r_rows_in_block: persistent rows lie within a warp (partners by shuffles)");
      auto partner = mirror_partners<T, P>(v, t);  // X[N - k]; for k = 0 that is X[N]
      if (t == 0) {
        partner[0] = x_last;
        v[0].im = 0.f;  // X[0] and X[N] are real in a Hermitian spectrum
        partner[0].im = 0.f;
      }
      static_for<P>([&](auto m) { v[m.value] = c2r_pre(v[m.value], partner[m.value], load_ro(table + t + T * m.value)); });
    }
    fft::run(v, row_shared, t, table);
    const long long row = rows.row_of(group);
    if (row < batch) {
      auto* dst = reinterpret_cast<complex_t<float>*>(out + row * n);
      static_for<P>([&](auto m) { dst[t + T * m.value] = v[m.value]; });
    }
    rows_t::end_group();
  }
}

// ---- entry points ------------------------------------------------------------------------

template <int n>
__global__ void __launch_bounds__(real_1d_policy<n>::block_threads, real_1d_policy<n>::min_blocks_per_sm)
r2c_1d_kernel(const float* __restrict__ in, complex_t<float>* __restrict__ out, long long batch,
              const complex_t<float>* __restrict__ table) {
  extern __shared__ __align__(16) unsigned char shared[];  // real_1d_policy<n>::shared_memory_bytes
  dependents_may_launch();  // see dependent_launch.cuh: a no-op unless launched early
  wait_for_previous();
  if constexpr (real_1d_policy<n>::threads_per_row == 1) {
    r2c_rows_in_registers<n>(in, out, batch, shared);
  } else {
    r2c_rows_in_block<n>(in, out, batch, table, shared);
  }
}

// staged: the persistent kernel for small batches (real_1d_policy's staged_)
template <int n, bool staged = false>
__global__ void __launch_bounds__(real_1d_policy<n, true, staged>::block_threads,
                                  real_1d_policy<n, true, staged>::min_blocks_per_sm)
c2r_1d_kernel(const complex_t<float>* __restrict__ in, float* __restrict__ out, long long batch,
              const complex_t<float>* __restrict__ table) {
  extern __shared__ __align__(16) unsigned char shared[];  // real_1d_policy<n, true, staged>::shared_memory_bytes
  dependents_may_launch();  // see dependent_launch.cuh: a no-op unless launched early
  wait_for_previous();
  if constexpr (real_1d_policy<n>::threads_per_row == 1) {
    c2r_rows_in_registers<n>(in, out, batch, shared);
  } else {
    c2r_rows_in_block<n, staged>(in, out, batch, table, shared);
  }
}

}  // namespace gpuconv::fft
