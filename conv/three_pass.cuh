// Kernel layer of the convolution: the three kernels of the three-pass tile path.
//
// For kernels too large for the fused tile kernel (fused_tile.cuh, tiles up to 128), tiles
// of 256..1024 are convolved in three passes, two real tiles at a time as the real and
// imaginary parts of one complex T x T tile (as in the fused kernel):
//   A  rows_forward_kernel: load R rows of the pair from the image (boundary rule in the
//      loader, no padded copy), row FFTs in registers and shared memory (block_fft_t),
//      store transposed: work[pair][kx][y], R consecutive y (R x 8 bytes) per kx;
//   B  columns_kernel over the now contiguous columns: FFT along y, multiply by the kernel
//      spectrum [kx][ky] (scaled by 1/T^2), inverse FFT, in place (the rows pass C skips
//      are not stored);
//   C  rows_inverse_kernel: load R rows of the pair back (the transpose of A's store),
//      inverse row FFTs, write the valid pixels of both tiles (narrow types rounded and
//      saturated in registers). Only the rows that hold valid outputs are transformed.
// The image is read once and the output written once; the pair's spectrum (T^2 x 8 bytes)
// goes out and back twice between the passes (16 bytes per padded pixel), all pairs in one
// chunk unless the memory cap (or, in tuning builds, the L2 size) asks for several.
#pragma once
#include <cstdint>
#include <type_traits>

#include "fused_tile.cuh"

// Tuning builds: the resident threads per SM the row kernels' register budget allows.
#ifndef GPUCONV_THREE_PASS_THREADS
#define GPUCONV_THREE_PASS_THREADS 1024
#endif
#ifndef GPUCONV_THREE_PASS_COLUMN_THREADS
#define GPUCONV_THREE_PASS_COLUMN_THREADS 512
#endif
#ifndef GPUCONV_THREE_PASS_COLUMN_LINES  // lines a column block transforms (0: as the row kernels; 8
                                          // measured 1-10% faster than 16 for 256/512-tiles)
#define GPUCONV_THREE_PASS_COLUMN_LINES 8
#endif

namespace gpuconv::conv {

// rows_: tile rows a block transforms (its store to work[pair][kx][y] writes runs of rows_
// complex values); items_: values of a row per thread.
template <int tile_, int rows_, int items_ = 16>
struct three_pass_policy {
  static_assert(items_ == 8 || items_ == 16, "three_pass_policy: 8 or 16 values per thread");
  static_assert(tile_ == 256 || tile_ == 512 || tile_ == 1024, "three_pass_policy: tiles of 256, 512 or 1024");
  static_assert(rows_ == 4 || rows_ == 8 || rows_ == 16, "three_pass_policy: 4, 8 or 16 rows per block");
  static constexpr int tile = tile_;
  static constexpr int rows = rows_;
  static constexpr int items_per_thread = items_;
  static constexpr int threads_per_row = tile_ / items_per_thread;
  static constexpr int block_threads = rows_ * threads_per_row;
  static constexpr int row_stride = tile_ + tile_ / 16;  // block_fft_t's padded row
  // the transposed staging [kx][row], rows + 1 apart (odd: conflict-free for both sides)
  static constexpr int stage_stride = rows_ + 1;
  static constexpr int exchange_elems = rows_ * row_stride > tile_ * stage_stride ? rows_ * row_stride : tile_ * stage_stride;
  // the exchange/staging buffer, then the pair's two tile origins (detail::tile_origin)
  static constexpr int shared_memory_bytes = exchange_elems * 8 + 2 * 48;
  // register budget: GPUCONV_THREE_PASS_THREADS resident threads per SM (1024: 64
  // registers a thread)
  static constexpr int min_blocks = GPUCONV_THREE_PASS_THREADS / block_threads > 0 ? GPUCONV_THREE_PASS_THREADS / block_threads : 1;
  // the column kernel (two transforms) at GPUCONV_THREE_PASS_COLUMN_THREADS: 512 threads,
  // 128 registers (at 64 it spills 76-424 bytes)
  static constexpr int column_min_blocks =
      GPUCONV_THREE_PASS_COLUMN_THREADS / block_threads > 0 ? GPUCONV_THREE_PASS_COLUMN_THREADS / block_threads : 1;
};

namespace detail {

// Row y of the tile at o, columns t + TR*j (j < I), as floats; 0 when there is no tile.
template <int I, int TR, typename in_t>
__device__ GPUCONV_INLINE void load_row(const in_t* __restrict__ in, const tile_map& m, bool present,
                                        const tile_origin& o, int y, int t, float (&x)[I]) {
  if (!present) {
#pragma unroll
    for (int j = 0; j < I; ++j) x[j] = 0.f;
    return;
  }
  const float outside = m.border == boundary::constant ? m.constant_value : 0.f;
  const int r = border_index(o.in_y + y, (int)m.height, m.border);
  if (r < 0) {
#pragma unroll
    for (int j = 0; j < I; ++j) x[j] = outside;
    return;
  }
  const in_t* row = in + (o.in_plane * m.height + r) * m.width;
  const long long c0 = o.in_x + t;
  if (o.in_x >= 0 && o.in_x + I * TR - 1 < m.width) {  // the whole tile row is inside
#pragma unroll
    for (int j = 0; j < I; ++j) x[j] = static_cast<float>(__ldg(row + c0 + TR * j));
  } else {
#pragma unroll
    for (int j = 0; j < I; ++j) {
      const int c = border_index(c0 + TR * j, (int)m.width, m.border);
      x[j] = c < 0 ? outside : static_cast<float>(__ldg(row + c));
    }
  }
}

// Writes the valid outputs of row y of the tile at o from x[j] (columns t + TR*j).
template <int I, int TR, typename out_t>
__device__ GPUCONV_INLINE void store_row(out_t* __restrict__ out, const tile_map& m, bool present,
                                         const tile_origin& o, int y, int t, const float (&x)[I]) {
  if (!present) return;
  const int a = y - (m.kh - 1);
  if (a < 0) return;
  const long long yo = o.out_y + a;
  if (yo >= m.out_h) return;
  out_t* row = out + (o.out_plane * m.out_h + yo) * m.out_w;
#pragma unroll
  for (int j = 0; j < I; ++j) {
    const int b = t + TR * j - (m.kw - 1);
    const long long xo = o.out_x + b;
    if (b >= 0 && xo < m.out_w) row[xo] = store_pixel<out_t>(x[j]);
  }
}

// Moves the block's runs between the work layout and the staging: for each kx < T, the R
// values at global + kx*T (16-byte aligned: R is even and the runs start at multiples of R)
// and shared + kx*S. 16-byte global accesses, two values each, all issued before any is
// used; a half-warp's 8-byte shared accesses fall on distinct banks (S odd).
template <typename policy, bool to_global>
__device__ GPUCONV_INLINE void copy_runs(fft::complex_t<float>* global, fft::complex_t<float>* shared) {
  constexpr int T = policy::tile, R = policy::rows, S = policy::stage_stride, bt = policy::block_threads;
  constexpr int half = R / 2, per_thread = T * half / bt;
  static_assert(T * half % bt == 0, "copy_runs: whole iterations");
  fft::static_for<per_thread>([&](auto k) {
    const int i = (int)threadIdx.x + k.value * bt;
    const int kx = i / half, r = (i - kx * half) * 2;
    float4* g = reinterpret_cast<float4*>(global + (long long)kx * T + r);
    fft::complex_t<float>* sh = shared + kx * S + r;
    if constexpr (to_global) {
      *g = make_float4(sh[0].re, sh[0].im, sh[1].re, sh[1].im);
    } else {
      const float4 q = __ldg(g);
      sh[0] = {q.x, q.y};
      sh[1] = {q.z, q.w};
    }
  });
}

}  // namespace detail

// Pass A. Block b of the launch: pair first_pair + b / (T/R) of kernel `kernel`, tile rows
// y0 = (b mod (T/R)) * R .. y0 + R - 1. work holds the launch's pairs, T*T values each.
template <typename policy, typename in_t>
__global__ void __launch_bounds__(policy::block_threads, policy::min_blocks)
rows_forward_kernel(const in_t* __restrict__ in, tile_map m, long long kernel, long long first_pair,
                    fft::complex_t<float>* __restrict__ work, const fft::complex_t<float>* __restrict__ table) {
  using cf = fft::complex_t<float>;
  constexpr int T = policy::tile, R = policy::rows, TR = policy::threads_per_row, I = policy::items_per_thread;
  constexpr int S = policy::stage_stride;
  using forward_t = fft::block_fft_t<T, TR, false>;
  extern __shared__ __align__(16) unsigned char shared_raw[];
  cf* shared = reinterpret_cast<cf*>(shared_raw);
  auto* origins = reinterpret_cast<detail::tile_origin*>(shared_raw + policy::exchange_elems * 8);

  constexpr int groups = T / R;
  const long long local_pair = blockIdx.x / groups;
  const int y0 = (blockIdx.x % groups) * R;
  const detail::pair_tiles p = detail::pair_at(m, kernel, first_pair + local_pair);
  detail::publish_origins(m, p, origins);
  __syncthreads();

  const int row = threadIdx.x / TR, t = threadIdx.x % TR;
  fft::array_t<cf, I> v;
  {
    float a[I], b[I];
    detail::load_row<I, TR>(in, m, true, origins[0], y0 + row, t, a);
    detail::load_row<I, TR>(in, m, p.has_b, origins[1], y0 + row, t, b);
    fft::static_for<I>([&](auto j) { v[j.value] = {a[j.value], b[j.value]}; });
  }
  forward_t::run(v, shared + row * policy::row_stride, t, table);  // v[j] = Z(y0 + row, kx = t + TR*j)
  __syncthreads();  // the passes' shared reads are done before the staging writes
  fft::static_for<I>([&](auto j) { shared[(t + TR * j.value) * S + row] = v[j.value]; });
  __syncthreads();
  detail::copy_runs<policy, true>(work + local_pair * T * T + y0, shared);
}

// Pass B. Block b: lines (columns kx of the pairs) (B - 1 - b)*R .. + R - 1 of the launch's
// pairs (B blocks), line l at work + l*T: FFT along y, multiply by spectrum[kx][ky], inverse FFT, and
// store the values from y_first on (pass C reads no others). Twiddles and spectrum are
// loaded where used (twiddle_load_late): held across both transforms they would take the
// registers of a second block per SM.
template <typename policy>
__global__ void __launch_bounds__(policy::block_threads, policy::column_min_blocks)
columns_kernel(fft::complex_t<float>* __restrict__ work, const fft::complex_t<float>* __restrict__ spectrum, int y_first,
               const fft::complex_t<float>* __restrict__ table) {
  using cf = fft::complex_t<float>;
  constexpr int T = policy::tile, R = policy::rows, TR = policy::threads_per_row, I = policy::items_per_thread;
  using load = fft::twiddle_load_late;
  using forward_t = fft::block_fft_t<T, TR, false, load>;
  using inverse_t = fft::block_fft_t<T, TR, true, load>;
  extern __shared__ __align__(16) unsigned char shared_raw[];
  cf* shared = reinterpret_cast<cf*>(shared_raw);
  const int row = threadIdx.x / TR, t = threadIdx.x % TR;
  // blocks run roughly in index order: taking the lines last to first meets first the pairs
  // pass A wrote last, while they are still in L2 (and leaves in L2 the first pairs, which
  // pass C reads first)
  const long long line = (long long)(gridDim.x - 1 - blockIdx.x) * R + row;
  const int kx = (int)(line % T);
  cf* x = work + line * T;
  cf* row_shared = shared + row * policy::row_stride;
  fft::array_t<cf, I> v;
  fft::static_for<I>([&](auto j) { v[j.value] = x[t + TR * j.value]; });
  forward_t::run(v, row_shared, t, table);
  fft::static_for<I>([&](auto j) { v[j.value] = v[j.value] * load::load(spectrum + kx * T + t + TR * j.value); });
  forward_t::sync();  // the forward passes' shared reads are done before the inverse writes
  inverse_t::run(v, row_shared, t, table);
  fft::static_for<I>([&](auto j) {
    const int y = t + TR * j.value;
    if (y >= y_first) x[y] = v[j.value];
  });
}

// Pass C. Block b: pair first_pair + b / groups, tile rows y0 = y_first + (b mod groups) * R
// (the groups cover the rows from y_first, a multiple of R at or below kh - 1, to T).
template <typename policy, typename out_t>
__global__ void __launch_bounds__(policy::block_threads, policy::min_blocks)
rows_inverse_kernel(const fft::complex_t<float>* __restrict__ work, out_t* __restrict__ out, tile_map m, long long kernel,
                    long long first_pair, int y_first, int groups, const fft::complex_t<float>* __restrict__ table) {
  using cf = fft::complex_t<float>;
  constexpr int T = policy::tile, R = policy::rows, TR = policy::threads_per_row, I = policy::items_per_thread;
  constexpr int S = policy::stage_stride;
  using inverse_t = fft::block_fft_t<T, TR, true>;
  extern __shared__ __align__(16) unsigned char shared_raw[];
  cf* shared = reinterpret_cast<cf*>(shared_raw);
  auto* origins = reinterpret_cast<detail::tile_origin*>(shared_raw + policy::exchange_elems * 8);

  const long long local_pair = blockIdx.x / groups;
  const int y0 = y_first + (blockIdx.x % groups) * R;
  const detail::pair_tiles p = detail::pair_at(m, kernel, first_pair + local_pair);
  detail::publish_origins(m, p, origins);  // read after the barrier below
  detail::copy_runs<policy, false>(const_cast<cf*>(work) + local_pair * T * T + y0, shared);
  __syncthreads();
  const int row = threadIdx.x / TR, t = threadIdx.x % TR;
  fft::array_t<cf, I> v;
  fft::static_for<I>([&](auto j) { v[j.value] = shared[(t + TR * j.value) * S + row]; });
  __syncthreads();  // the staging is read before the passes write the same buffer
  inverse_t::run(v, shared + row * policy::row_stride, t, table);  // v[j] = (y0 + row, x = t + TR*j)
  float a[I], b[I];
  fft::static_for<I>([&](auto j) {
    a[j.value] = v[j.value].re;
    b[j.value] = v[j.value].im;
  });
  detail::store_row<I, TR>(out, m, true, origins[0], y0 + row, t, a);
  detail::store_row<I, TR>(out, m, p.has_b, origins[1], y0 + row, t, b);
}

}  // namespace gpuconv::conv
