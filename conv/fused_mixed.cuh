// Kernel layer of the convolution: the fused tile kernel on mixed tile sides (n = R M, R = 3 or
// 5, M a power of two: 80 = 5 x 16), and the layout it shares with the 3D slice path's mixed
// slices (slices3d.cu, 160 = 5 x 32).
//
// A batch of small images loses most of a power-of-two tile to padding: a 64^2 image with a
// 15 x 15 kernel needs four 32-tiles (18 outputs a side each) or four 64-tiles (50), 16,384
// tile pixels for 4,096 outputs, where one 80-tile (66 outputs a side) takes 6,400.
//
// The tile lives in shared memory as a row-major n x (n + 1) complex array (two real tiles, one
// in each part, as fused_tile.cuh's kernel packs them) and a thread holds one line's values at a
// time: each line's transform (block_mixed_fft_t) exchanges through the line's own elements (a
// column at a stride of n + 1, a row at 1) and its result goes back into them. No transpose: the
// row transforms read the array across. Lanes work on neighbouring lines (columns: neighbouring
// addresses; rows: an odd stride), so neither direction needs padding against bank conflicts.
// Values of a line: thread t holds elements time_index(t, q) before a forward transform and
// freq_index(t, q) after it (mixed_layout).
#pragma once
#include <type_traits>

#include "../fft/block/mixed.cuh"
#include "fused_tile.cuh"

namespace gpuconv::conv {

// n: the side; TL: threads a line (n / TL / R values of each of the R sub-transforms a thread);
// L: lines a thread, one after the other; min_blocks: __launch_bounds__'s blocks an SM for the
// fused kernel (the slice kernels take one block an SM whatever it says).
template <int n, int TL, int L, int min_blocks_ = 1, bool batch = false>
struct mixed_tile_policy {
  static constexpr int R = fft::odd_part(n), M = n / R;
  static constexpr int tile = n, lines_per_thread = L, lanes = n / L, threads_per_line = TL;
  static_assert(n % L == 0 && lanes >= 32, "mixed_tile_policy: a warp spans lines");
  static constexpr int block_threads = lanes * TL;
  static_assert(block_threads <= 1024, "mixed_tile_policy: too many threads");
  static constexpr int min_blocks = min_blocks_;
  static constexpr int stride = n + 1;  // odd: rows of neighbouring lanes on distinct banks
  // the array, then two 48-byte records (the pair's tile origins: detail::tile_origin, slice_origin)
  static constexpr int shared_memory_bytes = n * stride * 8 + 2 * 48;
  using layout = fft::mixed_layout<R, M, TL>;
  static constexpr int items = layout::items;
  using column_fft = fft::block_mixed_fft_t<R, M, TL, fft::twiddle_load_late, true, stride, batch>;
  using row_fft = fft::block_mixed_fft_t<R, M, TL, fft::twiddle_load_late, true, 1, batch>;
};

namespace detail {

// The two column stages of a mixed tile in shared memory (shared: the n x (n + 1) array), every
// thread of the block calling. Forward: columns x = first + lanes * h, rows time_index(t, q)
// given by load(x, v) (v[q] = the tile pair's value (time_index(t, q), x)), transformed, X(ky,
// x) left in the column's elements ky; the caller synchronises before the array's next use.
template <typename policy, typename Load>
__device__ GPUCONV_INLINE void mixed_columns_forward(fft::complex_t<float>* shared, int first, int t,
                                                     const fft::complex_t<float>* table, Load load) {
  using layout = typename policy::layout;
#pragma unroll 1
  for (int h = 0; h < policy::lines_per_thread; ++h) {
    const int x = first + policy::lanes * h;
    fft::array_t<fft::complex_t<float>, policy::items> v;
    load(x, v);
    policy::column_fft::forward(v, shared + x, t, table);
    __syncthreads();  // the transform's last reads of the column are done
    fft::static_for<policy::items>([&](auto q) { shared[layout::freq_index(t, q.value) * policy::stride + x] = v[q.value]; });
  }
}

// Row ky's forward transform along x: the row's elements x (the column stage's X(ky, x); the
// caller synchronised after writing them) in, v[q] = X(ky, kx = freq_index(t, q)) out, exchanging
// through the row's own elements.
template <typename policy>
__device__ GPUCONV_INLINE void mixed_row_forward(fft::complex_t<float>* shared, int ky, int t,
                                                 const fft::complex_t<float>* table,
                                                 fft::array_t<fft::complex_t<float>, policy::items>& v) {
  using layout = typename policy::layout;
  fft::static_for<policy::items>([&](auto q) { v[q.value] = shared[ky * policy::stride + layout::time_index(t, q.value)]; });
  __syncthreads();  // the row is read before its exchanges overwrite it
  policy::row_fft::forward(v, shared + ky * policy::stride, t, table);
}

// Inverse: columns x, X(ky, x) in the column's elements ky (the caller synchronised after
// writing them), transformed back, store(x, re, im) given re[q], im[q] = the real and imaginary
// parts of y(time_index(t, q), x).
template <typename policy, typename Store>
__device__ GPUCONV_INLINE void mixed_columns_inverse(fft::complex_t<float>* shared, int first, int t,
                                                     const fft::complex_t<float>* table, Store store) {
  using layout = typename policy::layout;
  constexpr int I = policy::items;
#pragma unroll 1
  for (int h = 0; h < policy::lines_per_thread; ++h) {
    const int x = first + policy::lanes * h;
    fft::array_t<fft::complex_t<float>, I> v;
    fft::static_for<I>([&](auto q) { v[q.value] = shared[layout::freq_index(t, q.value) * policy::stride + x]; });
    __syncthreads();  // the column is read before its exchanges overwrite it
    policy::column_fft::inverse(v, shared + x, t, table);
    float re[I], im[I];
    fft::static_for<I>([&](auto q) {
      re[q.value] = v[q.value].re;
      im[q.value] = v[q.value].im;
    });
    store(x, re, im);
  }
}

}  // namespace detail

template <typename policy>
struct is_mixed_tile : std::false_type {};
template <int n, int TL, int L, int B, bool batch>
struct is_mixed_tile<mixed_tile_policy<n, TL, L, B, batch>> : std::true_type {};

// The 2D fused path's mixed side 80 (ptxas, sm_90): 4 threads a line and 2 lines a thread (160
// threads), the five 16-point sub-transforms' exchanges together (batch: one barrier pair a pass,
// five times the shared loads in flight), 168 registers and two blocks an SM. Measured on the H100
// (1024 x 64^2, K = 9..17, zero boundary, session 69; docs/notes-conv.md "The 80-tiles run"): 0.045
// ms with the row tables; 4 threads, one line (320 threads, 102-register cap, ~490 bytes of
// spills) 0.098-0.104; 8 threads, two lines (96 registers) 0.055 with the tables, 0.059-0.062 without.
using fused_mixed_80 = mixed_tile_policy<80, 4, 2, 2, true>;

// The fused kernel's shared memory: the policy's (the array, the two origins), then the pair's
// row tables (detail::row_table_bytes).
template <typename policy>
constexpr int fused_mixed_shared_bytes = policy::shared_memory_bytes + detail::row_table_bytes(policy::tile);

// One block convolves two overlap-save tiles of map m (as fused_tile_kernel: a in the real part,
// b in the imaginary part; the spectrum [kx][ky] scaled by 1 / n^2). Per pair: columns x
// (loaded, forward transform, frequencies ky written back); rows ky (forward, times the
// spectrum, inverse: spatial x written back); columns x (inverse, valid outputs stored).
// Thread layout: line = first + lanes * h (h < L), first = threadIdx.x mod lanes, t =
// threadIdx.x / lanes. The twiddle table: block_mixed_fft_t's (fft::column_twiddle_table(n)).
template <typename policy, typename in_t, typename out_t>
__global__ void __launch_bounds__(policy::block_threads, policy::min_blocks)
fused_mixed_kernel(const in_t* __restrict__ in, out_t* __restrict__ out, tile_map m,
                   const fft::complex_t<float>* __restrict__ spectra, const fft::complex_t<float>* __restrict__ table) {
  using cf = fft::complex_t<float>;
  constexpr int T = policy::tile, I = policy::items, L = policy::lines_per_thread, lanes = policy::lanes;
  constexpr int S = policy::stride;
  using layout = typename policy::layout;
  extern __shared__ __align__(16) unsigned char shared_raw[];
  cf* shared = reinterpret_cast<cf*>(shared_raw);
  auto* origins = reinterpret_cast<detail::tile_origin*>(shared_raw + T * S * 8);
  int* table_scratch = reinterpret_cast<int*>(shared_raw + policy::shared_memory_bytes);  // the pair's row tables

  const int first = threadIdx.x % lanes, t = threadIdx.x / lanes;
  auto rows = [](int q) { return layout::time_index(0, q); };  // time_index(t, q) = t + rows(q)
  detail::for_each_pair<T>(m, spectra, origins, [&](bool has_b, const cf* spectrum) {
    // a pair across the image's top or bottom edge: its row tables (one barrier), else none
    const int* tables = detail::pair_row_tables<T>(m, origins, has_b, table_scratch);
    // columns x: rows time_index(t, q) loaded, X(ky, x) left in the column's elements ky
    detail::mixed_columns_forward<policy>(shared, first, t, table, [&](int x, fft::array_t<cf, I>& v) {
      float a[I], b[I];
      detail::load_column_rows<I>(in, m, true, origins[0], x, t, T, rows, detail::tile_input_rows<T>(tables, 0), a);
      detail::load_column_rows<I>(in, m, has_b, origins[1], x, t, T, rows, detail::tile_input_rows<T>(tables, 1), b);
      fft::static_for<I>([&](auto q) { v[q.value] = {a[q.value], b[q.value]}; });
    });
    __syncthreads();
    // rows ky: X(ky, kx) times the spectrum [kx][ky] (neighbouring lanes, neighbouring ky), the
    // inverse along the row, (ky, x) left in the row's elements x
#pragma unroll 1
    for (int h = 0; h < L; ++h) {
      const int ky = first + lanes * h;
      fft::array_t<cf, I> v;
      detail::mixed_row_forward<policy>(shared, ky, t, table, v);
      fft::static_for<I>([&](auto q) {
        v[q.value] = v[q.value] * fft::twiddle_load_late::load(spectrum + layout::freq_index(t, q.value) * T + ky);
      });
      __syncthreads();  // the forward transform's last reads of the row are done
      policy::row_fft::inverse(v, shared + ky * S, t, table);
      __syncthreads();  // the inverse's last reads of the row are done
      fft::static_for<I>([&](auto q) { shared[ky * S + layout::time_index(t, q.value)] = v[q.value]; });
    }
    __syncthreads();
    // columns x: y(time_index(t, q), x), the valid outputs written
    detail::mixed_columns_inverse<policy>(shared, first, t, table, [&](int x, const float(&a)[I], const float(&b)[I]) {
      detail::store_column_rows<I>(out, m, true, origins[0], x, t, rows, detail::tile_output_rows<T>(tables, 0), a);
      detail::store_column_rows<I>(out, m, has_b, origins[1], x, t, rows, detail::tile_output_rows<T>(tables, 1), b);
    });
  });
}

}  // namespace gpuconv::conv
