// Kernel layer of the convolution: the single-pass fused tile kernel.
//
// One block convolves TWO overlap-save tiles at once. The kernel k is real, so convolution
// is linear over complex data with real coefficients:
//   (a + i b) (*) k = (a (*) k) + i (b (*) k),
// which lets one complex T x T FFT carry two real tiles (a in the real part, b in the
// imaginary part) with no R2C/C2R packing. Per block, all on chip:
//   load a and b (boundary rule applied here, no padded copy of the image)
//   -> column FFTs (block_fft_t over T/P threads per column) -> transpose through shared
//   memory -> row FFTs -> multiply by the kernel's full spectrum (precomputed, scaled by
//   1/T^2, stored [kx][ky]) -> inverse row FFTs -> transpose back -> inverse column FFTs
//   -> write the valid outputs of a (real part) and of b (imaginary part).
// The image is read once (plus the halos, mostly from L2) and the output written once.
//
// Shared memory: T lines of T + T/16 + 1 complex values (block_fft_t's padded line, odd).
// The same buffer is the per-line scratch of block_fft_t and the transpose buffer; barriers
// separate every change of role. Columns are transformed first, so that the loads and
// stores run along rows of the image.
//
// in_t/out_t: float, uint8_t or uint16_t. Narrow outputs are rounded to nearest (ties to
// even, as OpenCV's saturate_cast) and saturated, in registers.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "../fft/block/stockham.cuh"
#include "pixel.cuh"
#include "tile_map.hpp"

#ifndef GPUCONV_FUSED_MIN_BLOCKS_128  // the register budget of 128- and 256-thread blocks
#define GPUCONV_FUSED_MIN_BLOCKS_128 8  // 10: 48 registers and spills, 0-10% slower
#endif
#ifndef GPUCONV_FUSED_MIN_BLOCKS_512  // (128-tiles take 140 KB of shared memory: one block per SM anyway)
#define GPUCONV_FUSED_MIN_BLOCKS_512 1
#endif
#ifndef GPUCONV_FUSED_MIN_BLOCKS_256  // 3: 80 registers, no spills (2: 128 registers, 5-9% slower)
#define GPUCONV_FUSED_MIN_BLOCKS_256 3
#endif

namespace gpuconv::conv {

// items_: values of one line a thread holds; lines_: lines a thread works on one after the
// other (2 halves the threads, keeping the registers of a 16-point line per FFT: a
// 128-tile at 1024 threads x 64 registers spills, at 512 threads x 2 lines it need not).
template <int tile_, int items_, int lines_ = 1>
struct fused_policy {
  static_assert(fft::is_pow2(tile_) && fft::is_pow2(items_) && items_ <= tile_ && tile_ >= 32 &&
                    (lines_ == 1 || lines_ == 2 || lines_ == 4),
                "fused_policy: tiles of 32 or more, powers of two; 1, 2 or 4 lines per thread");
  static constexpr int tile = tile_;
  static constexpr int items_per_thread = items_;
  static constexpr int lines_per_thread = lines_;
  static constexpr int threads_per_line = tile_ / items_;
  static constexpr int lanes = tile_ / lines_;  // lines in flight at once, one per lane
  static_assert(lanes >= 32, "fused_policy: a warp spans lines");
  static constexpr int block_threads = lanes * threads_per_line;
  // complex values per line in shared memory: block_fft_t's padded line (T + T/16) rounded
  // up to odd, so that 16 lanes on 16 consecutive lines hit 16 distinct 8-byte banks
  static constexpr int line_stride = tile_ + tile_ / 16 + 1;
  // the lines, then the two tile origins of the pair (detail::tile_origin, 6 x 8 bytes each)
  static constexpr int shared_memory_bytes = tile_ * line_stride * 8 + 2 * 48;
  // register budget: the blocks per SM that the registers must allow (the compiler left to
  // itself keeps per-pair index values live across the FFTs and drops a block or more)
  static constexpr int min_blocks = shared_memory_bytes > 100 * 1024 ? 1 : block_threads <= 128 ? GPUCONV_FUSED_MIN_BLOCKS_128 : block_threads <= 256 ? GPUCONV_FUSED_MIN_BLOCKS_256 : GPUCONV_FUSED_MIN_BLOCKS_512;
};

// The shapes per tile of the kernels built on this layout (the 2D fused tile kernel, fused.cu,
// and the 3D slice path, slices3d.cu). Values per thread: a 32-tile keeps 8 (128 threads),
// larger tiles 16 (256 threads for 64; for 128, two lines per thread, 512 threads). The macros
// exist for tuning builds (scripts/gpu-check.sh --variant).
#ifndef GPUCONV_FUSED_ITEMS_32
#define GPUCONV_FUSED_ITEMS_32 8
#endif
#ifndef GPUCONV_FUSED_ITEMS_64
#define GPUCONV_FUSED_ITEMS_64 16
#endif
#ifndef GPUCONV_FUSED_ITEMS_128
#define GPUCONV_FUSED_ITEMS_128 16
#endif
#ifndef GPUCONV_FUSED_LINES_32
#define GPUCONV_FUSED_LINES_32 1
#endif
#ifndef GPUCONV_FUSED_LINES_64
#define GPUCONV_FUSED_LINES_64 1
#endif
#ifndef GPUCONV_FUSED_LINES_128
#define GPUCONV_FUSED_LINES_128 2
#endif
template <int tile>
struct fused_policy_for;
template <> struct fused_policy_for<32> { using type = fused_policy<32, GPUCONV_FUSED_ITEMS_32, GPUCONV_FUSED_LINES_32>; };
template <> struct fused_policy_for<64> { using type = fused_policy<64, GPUCONV_FUSED_ITEMS_64, GPUCONV_FUSED_LINES_64>; };
template <> struct fused_policy_for<128> { using type = fused_policy<128, GPUCONV_FUSED_ITEMS_128, GPUCONV_FUSED_LINES_128>; };

template <typename F>
void dispatch_fused_tile(int tile, F&& f) {
  switch (tile) {
    case 32: f(std::integral_constant<int, 32>{}); return;
    case 64: f(std::integral_constant<int, 64>{}); return;
    case 128: f(std::integral_constant<int, 128>{}); return;
    default: throw std::invalid_argument("fused_tiles: tile " + std::to_string(tile) + " is not 32, 64 or 128");
  }
}


namespace detail {

// Where tile g starts: its input and output planes, its first output pixel and the input
// coordinates of its element (0, 0) (before the boundary rule).
struct tile_origin {
  long long in_plane, out_plane;
  long long out_y, out_x;
  long long in_y, in_x;
};

// tile_map::locate in 32-bit divisions: a launch holds fewer than 2^31 tiles
// (fused_tiles::run checks), and 64-bit division is a long software routine on the GPU.
__device__ GPUCONV_INLINE tile_origin origin_of(const tile_map& m, long long g) {
  const unsigned gu = (unsigned)g, per_kernel = (unsigned)m.tiles_per_kernel, per_plane = (unsigned)m.tiles_per_plane;
  const unsigned k = gu / per_kernel, r = gu - k * per_kernel;
  const unsigned plane = r / per_plane, t = r - plane * per_plane;
  const unsigned ty = t / (unsigned)m.tiles_x, tx = t - ty * (unsigned)m.tiles_x;
  const long long oy = (long long)ty * m.valid_h, ox = (long long)tx * m.valid_w;
  return {plane, (long long)plane * m.kernels + k, oy, ox, oy + m.oy - (m.kh - 1), ox + m.ox - (m.kw - 1)};
}

// The two tiles of pair `pair` of kernel `kernel`: tiles pair up within a kernel of the bank
// (both halves need the same spectrum), the second absent when the kernel's count is odd.
struct pair_tiles {
  long long first_tile;  // global tile index of the first (real part)
  bool has_b;            // the second (imaginary part) exists
};

__device__ GPUCONV_INLINE pair_tiles pair_at(const tile_map& m, long long kernel, long long pair) {
  return {kernel * m.tiles_per_kernel + 2 * pair, 2 * pair + 1 < m.tiles_per_kernel};
}

// Threads 0 and 1 compute where the pair's tiles sit and leave it in shared memory, so that
// the per-pair index values are not held in registers across the FFTs; the caller
// synchronises before reading.
__device__ GPUCONV_INLINE void publish_origins(const tile_map& m, const pair_tiles& p, tile_origin* origins) {
  if (threadIdx.x < 2 && (threadIdx.x == 0 || p.has_b)) origins[threadIdx.x] = origin_of(m, p.first_tile + threadIdx.x);
}

// The fused kernels' loop over the tile pairs of map m, every thread of the block calling: the
// block's pairs (a grid stride apart), each with its tiles' origins in shared memory and the
// block synchronised, then f(has_b, spectrum) (spectrum: the pair's kernel's T x T spectrum in
// `spectra`), then a barrier before the next pair reuses shared memory.
template <int T, typename F>
__device__ GPUCONV_INLINE void for_each_pair(const tile_map& m, const fft::complex_t<float>* spectra,
                                             tile_origin* origins, F&& f) {
  const long long pairs_per_kernel = (m.tiles_per_kernel + 1) / 2, pairs = pairs_per_kernel * m.kernels;
  for (long long pair = blockIdx.x; pair < pairs; pair += gridDim.x) {
    const long long kernel = pair / pairs_per_kernel;
    const pair_tiles p = pair_at(m, kernel, pair - kernel * pairs_per_kernel);
    const bool has_b = p.has_b;
    const fft::complex_t<float>* spectrum = spectra + kernel * T * T;
    publish_origins(m, p, origins);
    __syncthreads();
    f(has_b, spectrum);
    __syncthreads();  // shared memory is reused by the next pair
  }
}

// Rows y0 + t + offset(j) (j < I; before the boundary rule; offset(j) does not depend on t, and
// t + offset(j) < n, the tile's side) of one column of an image, as floats: `column` points at
// its row 0, rows `width` values apart, `height` rows; `outside` where the rule leaves the
// image (zero and constant boundaries).
template <int I, typename Offset, typename in_t>
__device__ GPUCONV_INLINE void load_column_at(const in_t* __restrict__ column, long long y0, int t, int n, Offset offset,
                                              long long width, long long height, boundary border, float outside,
                                              float (&x)[I]) {
  const long long r0 = y0 + t;
  if (y0 >= 0 && y0 + n - 1 < height) {  // the whole tile column is inside
#pragma unroll
    for (int j = 0; j < I; ++j) x[j] = static_cast<float>(__ldg(column + (r0 + offset(j)) * width));
  } else {
#pragma unroll
    for (int j = 0; j < I; ++j) {
      const int r = border_index(r0 + offset(j), (int)height, border);
      x[j] = r < 0 ? outside : static_cast<float>(__ldg(column + (long long)r * width));
    }
  }
}

// Column `v` of the tile at o, rows t + offset(j) (j < I; offset(j) independent of t, t + offset(j)
// < n, the tile's side), as floats; 0 when there is no tile. The rows come from the tile's row
// table (`rows`: its own T entries, detail::pair_row_tables) or, where rows is null, are
// computed (load_column_at). Neighbouring lanes hold neighbouring columns, so each load is one
// coalesced row segment.
template <int I, typename Offset, typename in_t>
__device__ GPUCONV_INLINE void load_column_rows(const in_t* __restrict__ in, const tile_map& m, bool present,
                                                const tile_origin& o, int v, int t, int n, Offset offset, const int* rows,
                                                float (&x)[I]) {
  if (!present) {
#pragma unroll
    for (int j = 0; j < I; ++j) x[j] = 0.f;
    return;
  }
  const int c = border_index(o.in_x + v, (int)m.width, m.border);
  const float outside = m.border == boundary::constant ? m.constant_value : 0.f;
  if (c < 0) {
#pragma unroll
    for (int j = 0; j < I; ++j) x[j] = outside;
    return;
  }
  const in_t* column = in + o.in_plane * m.height * m.width + c;
  if (!rows) {
    load_column_at<I>(column, o.in_y, t, n, offset, m.width, m.height, m.border, outside, x);
    return;
  }
#pragma unroll
  for (int j = 0; j < I; ++j) {
    const int r = rows[t + offset(j)];
    x[j] = r < 0 ? outside : static_cast<float>(__ldg(column + (long long)r * m.width));
  }
}

// Rows t + TL*j (j < I), the power-of-two tiles' layout, without a table.
template <int I, int TL, typename in_t>
__device__ GPUCONV_INLINE void load_column(const in_t* __restrict__ in, const tile_map& m, bool present,
                                           const tile_origin& o, int v, int t, float (&x)[I]) {
  load_column_rows<I>(in, m, present, o, v, t, I * TL, [](int j) { return TL * j; }, static_cast<const int*>(nullptr),
                      x);
}

// Writes the valid outputs of column `v` of the tile at o from x[j] (rows t + offset(j)), their
// output rows from the tile's row table (`rows`, detail::pair_row_tables) or, where rows is
// null, computed.
template <int I, typename Offset, typename out_t>
__device__ GPUCONV_INLINE void store_column_rows(out_t* __restrict__ out, const tile_map& m, bool present,
                                                 const tile_origin& o, int v, int t, Offset offset, const int* rows,
                                                 const float (&x)[I]) {
  if (!present) return;
  const int b = v - (m.kw - 1);
  if (b < 0) return;
  const long long xo = o.out_x + b;
  if (xo >= m.out_w) return;
  out_t* column = out + o.out_plane * m.out_h * m.out_w + xo;
  if (rows) {
#pragma unroll
    for (int j = 0; j < I; ++j) {
      const int y = rows[t + offset(j)];
      if (y >= 0) column[(long long)y * m.out_w] = store_pixel<out_t>(x[j]);
    }
    return;
  }
#pragma unroll
  for (int j = 0; j < I; ++j) {
    const int a = t + offset(j) - (m.kh - 1);
    const long long y = o.out_y + a;
    if (a >= 0 && y < m.out_h) column[y * m.out_w] = store_pixel<out_t>(x[j]);
  }
}

// Rows t + TL*j (j < I), without a table.
template <int I, int TL, typename out_t>
__device__ GPUCONV_INLINE void store_column(out_t* __restrict__ out, const tile_map& m, bool present,
                                            const tile_origin& o, int v, int t, const float (&x)[I]) {
  store_column_rows<I>(out, m, present, o, v, t, [](int j) { return TL * j; }, static_cast<const int*>(nullptr), x);
}

// The pair's row tables: for each of its two tiles and tile row i, the input row the boundary
// rule reads ([T * tile + i], -1 outside the image), then the output row it writes
// ([2 T + T * tile + i], -1: none). A tile that crosses the image's top or bottom edge (all of them on small
// images) then takes a shared read an element where border_index would take 64-bit arithmetic
// and a switch on the rule; a pair inside the image goes without (no tables, no barrier).
constexpr int row_table_bytes(int tile) { return 4 * tile * 4; }

// Whether either tile of the pair reads rows past the image or writes rows past the output (the
// same for every thread of the block: the origins are in shared memory).
template <int T>
__device__ GPUCONV_INLINE bool pair_crosses_rows(const tile_map& m, const tile_origin* origins, bool has_b) {
  auto crosses = [&](const tile_origin& o) {
    return o.in_y < 0 || o.in_y + T > m.height || o.out_y + (T - (m.kh - 1)) > m.out_h;
  };
  return crosses(origins[0]) || (has_b && crosses(origins[1]));
}

// The pair's row tables (row_table_bytes at in_rows, out_rows = in_rows + 2 T), every thread of
// the block calling; the caller synchronises before their use.
template <int T>
__device__ GPUCONV_INLINE void publish_row_tables(const tile_map& m, const tile_origin* origins, bool has_b, int* in_rows) {
  int* out_rows = in_rows + 2 * T;
  for (int i = threadIdx.x; i < 2 * T; i += blockDim.x) {
    const int which = i / T, row = i - which * T;
    if (which == 1 && !has_b) continue;
    const tile_origin& o = origins[which];
    in_rows[i] = border_index(o.in_y + row, (int)m.height, m.border);
    const int a = row - (m.kh - 1);
    out_rows[i] = a >= 0 && o.out_y + a < m.out_h ? (int)(o.out_y + a) : -1;
  }
}

// The fused kernels' step for a pair, every thread of the block calling: where the pair crosses
// the image's top or bottom edge, its row tables published at `scratch` (row_table_bytes), the
// block synchronised, and scratch returned; else null (no tables, no barrier). tile_input_rows
// and tile_output_rows pick a tile's table out of it (null without tables; written as the
// kernels measured in session 69 had it inline, which they compile to the same PTX).
template <int T>
__device__ GPUCONV_INLINE const int* pair_row_tables(const tile_map& m, const tile_origin* origins, bool has_b,
                                                     int* scratch) {
  const int* tables = nullptr;
  if (pair_crosses_rows<T>(m, origins, has_b)) {
    publish_row_tables<T>(m, origins, has_b, scratch);
    __syncthreads();
    tables = scratch;
  }
  return tables;
}
template <int T>
__device__ GPUCONV_INLINE const int* tile_input_rows(const int* tables, int which) {
  return which == 0 ? tables : tables ? tables + T : nullptr;
}
template <int T>
__device__ GPUCONV_INLINE const int* tile_output_rows(const int* tables, int which) {
  const int* out = tables ? tables + 2 * T : nullptr;
  return which == 0 ? out : out ? out + T : nullptr;
}

}  // namespace detail

namespace detail {

// The 2D transform of a tile held one line a lane (policy's layout: line first + lanes*h of a
// thread, values t + TL*j), through the shared lines (T lines of stride line_stride); every
// thread of the block calls it. On entry v[h][j] = x(y = t + TL*j, x = line); on exit
// v[h][j] = X(ky = line, kx = t + TL*j): column FFTs, a transpose through shared memory, row
// FFTs. The shared lines must be free on entry (the caller synchronises after their last use).
template <typename policy, typename forward_t, int I = policy::items_per_thread, int L = policy::lines_per_thread>
__device__ GPUCONV_INLINE void tile_forward_2d(fft::array_t<fft::complex_t<float>, I> (&v)[L], fft::complex_t<float>* shared,
                                               int first, int t, const fft::complex_t<float>* table) {
  constexpr int TL = policy::threads_per_line, lanes = policy::lanes, stride = policy::line_stride;
  auto line_of = [&](int h) { return first + lanes * h; };
  auto line_shared = [&](int h) { return shared + line_of(h) * stride; };
  // columns: v[h][j] = X(ky = t + TL*j, x = line)
  fft::static_for<L>([&](auto h) { forward_t::run(v[h.value], line_shared(h.value), t, table); });
  __syncthreads();
  fft::static_for<L>([&](auto h) {  // [x][ky]
    fft::static_for<I>([&](auto j) { line_shared(h.value)[t + TL * j.value] = v[h.value][j.value]; });
  });
  __syncthreads();
  fft::static_for<L>([&](auto h) {  // now the line is ky
    fft::static_for<I>([&](auto j) { v[h.value][j.value] = shared[(t + TL * j.value) * stride + line_of(h.value)]; });
  });
  __syncthreads();
  // rows: v[h][j] = X(ky = line, kx = t + TL*j)
  fft::static_for<L>([&](auto h) { forward_t::run(v[h.value], line_shared(h.value), t, table); });
}

// The inverse: on entry v[h][j] = X(ky = line, kx = t + TL*j), on exit v[h][j] = y(t + TL*j,
// x = line): inverse row FFTs, a transpose, inverse column FFTs (unnormalised). The shared
// lines must be free on entry.
template <typename policy, typename inverse_t, int I = policy::items_per_thread, int L = policy::lines_per_thread>
__device__ GPUCONV_INLINE void tile_inverse_2d(fft::array_t<fft::complex_t<float>, I> (&v)[L], fft::complex_t<float>* shared,
                                               int first, int t, const fft::complex_t<float>* table) {
  constexpr int TL = policy::threads_per_line, lanes = policy::lanes, stride = policy::line_stride;
  auto line_of = [&](int h) { return first + lanes * h; };
  auto line_shared = [&](int h) { return shared + line_of(h) * stride; };
  // rows back: v[h][j] = (ky = line, x = t + TL*j)
  fft::static_for<L>([&](auto h) { inverse_t::run(v[h.value], line_shared(h.value), t, table); });
  __syncthreads();
  fft::static_for<L>([&](auto h) {  // [x][ky]
    fft::static_for<I>([&](auto j) { shared[(t + TL * j.value) * stride + line_of(h.value)] = v[h.value][j.value]; });
  });
  __syncthreads();
  fft::static_for<L>([&](auto h) {  // now the line is x
    fft::static_for<I>([&](auto j) { v[h.value][j.value] = line_shared(h.value)[t + TL * j.value]; });
  });
  __syncthreads();
  // columns back: v[h][j] = y(t + TL*j, line)
  fft::static_for<L>([&](auto h) { inverse_t::run(v[h.value], line_shared(h.value), t, table); });
}

}  // namespace detail

// The kernel's shared memory: the policy's (the lines, the two origins), then the pair's row
// tables (detail::row_table_bytes).
template <typename policy>
constexpr int fused_tile_shared_bytes = policy::shared_memory_bytes + detail::row_table_bytes(policy::tile);

// Thread layout: line = threadIdx.x % lanes (+ lanes for a thread's second line), t =
// threadIdx.x / lanes. Each line (a column of the tile first, then a row) is spread over
// T/I threads of the same t-stride, one line per lane: loads and stores of a warp cover 32 neighbouring pixels, twiddles (which depend on
// t alone) are broadcasts, and shared accesses of a warp fall on 32 consecutive lines of
// odd stride, free of bank conflicts. The price: block_fft_t synchronises the block.
template <typename policy, typename in_t, typename out_t>
__global__ void __launch_bounds__(policy::block_threads, policy::min_blocks)
fused_tile_kernel(const in_t* __restrict__ in, out_t* __restrict__ out, tile_map m,
                  const fft::complex_t<float>* __restrict__ spectra, const fft::complex_t<float>* __restrict__ table) {
  using cf = fft::complex_t<float>;
  constexpr int T = policy::tile, TL = policy::threads_per_line, I = policy::items_per_thread;
  constexpr int L = policy::lines_per_thread, lanes = policy::lanes;
  constexpr int stride = policy::line_stride;
#ifdef GPUCONV_FUSED_HOIST  // tuning builds: let the compiler keep twiddles and spectrum in registers
  using twiddle_load = fft::twiddle_load_ro;
#else
  using twiddle_load = fft::twiddle_load_late;
#endif
  using forward_t = fft::block_fft_t<T, TL, false, twiddle_load, true>;
  using inverse_t = fft::block_fft_t<T, TL, true, twiddle_load, true>;
  extern __shared__ __align__(16) unsigned char shared_raw[];
  cf* shared = reinterpret_cast<cf*>(shared_raw);
  // where the pair's two tiles sit, computed once per pair by two threads and read back
  // from shared memory where needed (not kept in registers across the FFTs)
  auto* origins = reinterpret_cast<detail::tile_origin*>(shared_raw + T * stride * 8);
  int* table_scratch = reinterpret_cast<int*>(shared_raw + policy::shared_memory_bytes);  // the pair's row tables

  // this thread's lines: first + lanes * h, h < L
  const int first = threadIdx.x % lanes, t = threadIdx.x / lanes;
  auto line_of = [&](int h) { return first + lanes * h; };
  const long long pairs_per_kernel = (m.tiles_per_kernel + 1) / 2, pairs = pairs_per_kernel * m.kernels;
  // (detail::for_each_pair's loop, written out: through it the 64- and 128-tile kernels compile
  // to other code, not measured)
  for (long long pair = blockIdx.x; pair < pairs; pair += gridDim.x) {
    const long long kernel = pair / pairs_per_kernel;
    const detail::pair_tiles p = detail::pair_at(m, kernel, pair - kernel * pairs_per_kernel);
    const bool has_b = p.has_b;
    const cf* spectrum = spectra + kernel * T * T;
    detail::publish_origins(m, p, origins);
    __syncthreads();
    // a pair across the image's top or bottom edge: its row tables (one barrier), else none
    const int* tables = detail::pair_row_tables<T>(m, origins, has_b, table_scratch);
    fft::array_t<cf, I> v[L];
    fft::static_for<L>([&](auto h) {
      float a[I], b[I];
      auto rows = [](int j) { return TL * j; };
      detail::load_column_rows<I>(in, m, true, origins[0], line_of(h.value), t, T, rows, detail::tile_input_rows<T>(tables, 0), a);
      detail::load_column_rows<I>(in, m, has_b, origins[1], line_of(h.value), t, T, rows, detail::tile_input_rows<T>(tables, 1), b);
      fft::static_for<I>([&](auto j) { v[h.value][j.value] = {a[j.value], b[j.value]}; });
    });
    // v[h][j] = X(ky = line, kx = t + TL*j), times the kernel's spectrum [kx][ky] (neighbouring
    // lanes read neighbouring values), then back: v[h][j] = y(t + TL*j, x = line)
    detail::tile_forward_2d<policy, forward_t>(v, shared, first, t, table);
    fft::static_for<L>([&](auto h) {
      fft::static_for<I>([&](auto j) {
        v[h.value][j.value] = v[h.value][j.value] * twiddle_load::load(spectrum + (t + TL * j.value) * T + line_of(h.value));
      });
    });
    __syncthreads();  // the forward pass's shared reads are done before the inverse writes
    detail::tile_inverse_2d<policy, inverse_t>(v, shared, first, t, table);
    fft::static_for<L>([&](auto h) {
      float a[I], b[I];
      fft::static_for<I>([&](auto j) {
        a[j.value] = v[h.value][j.value].re;
        b[j.value] = v[h.value][j.value].im;
      });
      auto rows = [](int j) { return TL * j; };
      detail::store_column_rows<I>(out, m, true, origins[0], line_of(h.value), t, rows, detail::tile_output_rows<T>(tables, 0), a);
      detail::store_column_rows<I>(out, m, has_b, origins[1], line_of(h.value), t, rows, detail::tile_output_rows<T>(tables, 1), b);
    });
    __syncthreads();  // the line scratch is reused by the next pair
  }
}

}  // namespace gpuconv::conv
