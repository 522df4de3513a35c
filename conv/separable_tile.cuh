// Block level of the separable path (separable.cu): the shared-tile kernel and the box kernels'
// phases, each a device function, so that the __global__ entries are the phases with a barrier
// between them (and tests/conv/test_window_emulation.cpp runs the same phases on the CPU).
//
// Shared tile (kernels up to tile_max_side a side): the window of (tile_h + kh - 1) x (tile_w +
// kw - 1) extended pixels, the row walk over its rows into tile_h + kh - 1 rows of tile_w row sums
// (in rounds of tile_h rows), the column walk over those into the tile's outputs. The image is
// read once (the halo from L2) and the output written once: 8 B a pixel in fp32.
//
// Box kernels (constant factors): sums in double, O(1) work per output whatever K.
//   row pass     a block per segment of box_policy::width outputs of one row: its window of
//                width + kw - 1 pixels into shared memory, the window's prefix sums P in
//                double (each thread's chunk summed, the chunks' totals scanned across the
//                block, each chunk's P from its offset), then out(c) = factor (P[c + kw] - P[c])
//                stored coalesced.
//   column pass  a thread per column and run of rows, reading the intermediate down the column
//                (lanes on consecutive columns: coalesced): the first output's kh rows, then add
//                the row entering and subtract the one leaving.
#pragma once
#include <algorithm>
#include <cstddef>

#include "window_tile.cuh"
#include "window_walks.cuh"

namespace gpuconv::conv {

constexpr int tile_max_side = 32;

struct tile_layout {
  int stride_in, stride_mid, window_rows, mid_rows, row_taps, column_taps;
  std::size_t bytes;
};

// shared: row taps (round_up(kw, 4)), column taps (4 kh), the window (mid_rows + R - 1 rows:
// the row walk's last round reads R rows from its first), the row sums (mid_rows); both tap
// counts are multiples of 4, so float4 rows stay aligned
HOST_DEVICE inline tile_layout tile_layout_for(int tile_h, int tile_w, int kh, int kw) {
  tile_layout l;
  l.stride_in = tile_w + round4(kw) + 4;
  l.stride_mid = tile_w + 4;
  l.mid_rows = tile_h + kh - 1;
  l.window_rows = l.mid_rows + window_policy::rows_per_thread - 1;
  l.row_taps = round4(kw);
  l.column_taps = 4 * kh;
  l.bytes = (std::size_t(l.row_taps) + l.column_taps + std::size_t(l.window_rows) * l.stride_in +
             std::size_t(l.mid_rows) * l.stride_mid) * 4;
  return l;
}

// The shared tile's block shape for an out_h x out_w output: the direct path's (tx, ty), fewer
// rows of threads while the tile exceeds the direct path's shared-memory limit.
struct tile_shape {
  window_shape shape;  // tx, ty, tile_w (tile_h and tiles_y: from ty)
  tile_layout layout;
  long long tiles_y, tiles_x;
};
// A block of window_shape_for's shape (fewer rows of threads while its tile exceeds the shared
// memory). Short grids: while the grid of `planes` planes would still have at most max_blocks
// blocks with half the rows of threads a block, they halve (down to 4: 32 output rows a block,
// whose row pass also walks the kh - 1 halo rows; planes or max_blocks 0: the rule off).
// separable_tiles passes one block a multiprocessor (separable_tile_fill): one 512-thread block a
// 128^2 plane left 32 x 128^2 on 32 of the H100's 132 multiprocessors (0.018-0.021 ms at K =
// 13..25; 4 rows of threads, 128 blocks: 0.012-0.015), while grids that fill the GPU once lost to
// the halo rows when halved past it (1 x 1080 x 1920 at K = 29, 255 blocks: 0.028 ms, 510 blocks
// of half the rows: 0.043).
inline tile_shape tile_shape_for(long long out_h, long long out_w, int kh, int kw, long long planes = 0,
                                 long long max_blocks = 0) {
  window_shape s = window_shape_for(out_h, out_w, kh, kw);
  auto blocks = [&](int ty) {
    const long long rows = (long long)ty * window_policy::rows_per_thread;
    return planes * ((out_h + rows - 1) / rows) * s.tiles_x;
  };
  while (s.ty > 4) {
    const int half = std::max(4, (s.ty + 1) / 2);
    if (planes <= 0 || max_blocks <= 0 || blocks(half) > max_blocks) break;
    s.ty = half;
  }
  tile_layout l = tile_layout_for(s.ty * window_policy::rows_per_thread, s.tile_w, kh, kw);
  while (l.bytes > (std::size_t)window_policy::max_shared_bytes && s.ty > 1)
    l = tile_layout_for(--s.ty * window_policy::rows_per_thread, s.tile_w, kh, kw);
  s.tile_h = s.ty * window_policy::rows_per_thread;
  return {s, l, (out_h + s.tile_h - 1) / s.tile_h, (out_w + s.tile_w - 1) / s.tile_w};
}

struct tile_args {
  window_map m;
  int kh, kw;
  const float* row_taps;     // direct_tiles::padded of the 1 x kw row factors
  const float* column_taps;  // direct_tiles::padded of the kh x 1 column factors
  divider tiles_x, tiles_per_plane;
  bool vector_store;
};

// Phase 1: the taps and the window.
template <typename in_t>
__device__ GPUCONV_INLINE void tile_load(const in_t* __restrict__ in, const tile_args& a, float* shared) {
  constexpr int R = window_policy::rows_per_thread, C = window_policy::columns_per_thread;
  const int tile_w = blockDim.x * C;
  const tile_layout l = tile_layout_for(blockDim.y * R, tile_w, a.kh, a.kw);
  const window_block blk = locate_block(a.tiles_x, a.tiles_per_plane);
  const int threads = blockDim.x * blockDim.y, tid = threadIdx.y * blockDim.x + threadIdx.x;
  for (int e = tid; e < l.row_taps; e += threads) shared[e] = a.row_taps[e];
  for (int e = tid; e < l.column_taps; e += threads) shared[l.row_taps + e] = a.column_taps[e];
  load_tile(in + blk.plane * a.m.height * a.m.width, a.m, blk.y0 + a.m.oy - (a.kh - 1), blk.x0 + a.m.ox - (a.kw - 1),
            l.mid_rows, tile_w + a.kw - 1, l.stride_in, shared + l.row_taps + l.column_taps);
}

// Phase 2: the row pass, mid row q, column c = sum_j r(j) window(q, c + kw - 1 - j).
__device__ GPUCONV_INLINE void tile_rows(const tile_args& a, float* shared) {
  constexpr int R = window_policy::rows_per_thread, C = window_policy::columns_per_thread;
  const int tile_h = blockDim.y * R;
  const tile_layout l = tile_layout_for(tile_h, blockDim.x * C, a.kh, a.kw);
  const float* window = shared + l.row_taps + l.column_taps;
  float* mid = shared + l.row_taps + l.column_taps + l.window_rows * l.stride_in;
  window_acc<R> acc;
  for (int r0 = threadIdx.y * R; r0 < l.mid_rows; r0 += tile_h) {
#pragma unroll
    for (int i = 0; i < R; ++i)
#pragma unroll
      for (int c = 0; c < C; ++c) acc[i][c] = 0.f;
    row_walk(window + r0 * l.stride_in + threadIdx.x * C, l.stride_in, shared, a.kw, acc);
#pragma unroll
    for (int i = 0; i < R; ++i)
      if (r0 + i < l.mid_rows)
        *reinterpret_cast<float4*>(mid + (r0 + i) * l.stride_mid + threadIdx.x * C) =
            make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
  }
}

// Phase 3: the column pass, out(y0 + a, c) = sum_i c(i) mid(a + kh - 1 - i, c), and the store.
template <typename out_t>
__device__ GPUCONV_INLINE void tile_columns(out_t* __restrict__ out, const tile_args& a, const float* shared) {
  constexpr int R = window_policy::rows_per_thread, C = window_policy::columns_per_thread;
  const tile_layout l = tile_layout_for(blockDim.y * R, blockDim.x * C, a.kh, a.kw);
  const float* mid = shared + l.row_taps + l.column_taps + l.window_rows * l.stride_in;
  window_acc<R> acc;
#pragma unroll
  for (int i = 0; i < R; ++i)
#pragma unroll
    for (int c = 0; c < C; ++c) acc[i][c] = 0.f;
  column_walk(mid + threadIdx.y * R * l.stride_mid + threadIdx.x * C, l.stride_mid, shared + l.row_taps, a.kh, acc);
  const window_block blk = locate_block(a.tiles_x, a.tiles_per_plane);
  store_tile(acc, out, a.m, blk.plane, blk.y0, blk.x0, a.vector_store);
}

struct box_policy {
  static constexpr int threads = 256;         // row pass: one row segment a block
  static constexpr int width = 2048;          // row pass: outputs a block (of one row)
  static constexpr int scan_steps = 8;        // row pass: log2(threads), the totals' scan
  static constexpr int column_threads = 128;  // column pass: columns a block
  static constexpr int column_run = 256;      // column pass: outputs a thread down its column
  static constexpr int max_side = 1024;       // beyond: the FMA walks
};

// The row pass's shared memory: the window (width + kw - 1 floats, rounded to an even count),
// its prefix sums P (one double more than the window: P[v] = sum of window values 0 .. v - 1)
// and two buffers of the threads' totals (doubles) for their scan.
HOST_DEVICE constexpr int box_window(int kw) { return box_policy::width + kw - 1; }
HOST_DEVICE constexpr int box_prefix_offset(int kw) { return (box_window(kw) + 1) / 2 * 2; }  // floats
HOST_DEVICE constexpr std::size_t box_shared_bytes(int kw) {
  return std::size_t(box_prefix_offset(kw)) * 4 + std::size_t(box_window(kw) + 1 + 2 * box_policy::threads) * 8;
}

struct box_args {
  window_map m;  // the row pass's map (kh = 1)
  int kw;
  float factor;
  divider tiles_x, tiles_per_plane;  // segments of box_policy::width outputs a row; rows x tiles_x
};

// The block's segment: plane, row (y0) and first output column (x0) (split_block: a multiply and
// a shift for each division).
__device__ GPUCONV_INLINE window_block box_block(const box_args& a) {
  const block_tile bt = split_block(blockIdx.x, a.tiles_per_plane, a.tiles_x);
  return {bt.plane, bt.row, (long long)bt.column * box_policy::width};
}

// The segment's outputs and window values (the last segment of a row is shorter).
__device__ GPUCONV_INLINE int box_outputs(const box_args& a, const window_block& blk) {
  const long long left = a.m.out_w - blk.x0;
  return left < box_policy::width ? int(left) : box_policy::width;
}

// The row pass sums by prefix sums in double: out(c) = factor (P[c + kw] - P[c]), P the window's
// running sum, a thread's chunk of the window summed alone, the chunks' totals scanned across
// the block (scan_steps phases), then each chunk's P from its offset. Work per output does not
// grow with kw, and every thread works in every phase. H100, box:255 on 4096^2 (ncu): 120 us for
// this pass (63 M warp instructions, 72% of warps active) against 221 us (91 M, 18%) for the
// earlier running sums, which gave a thread 32 outputs and kw additions to start them, in
// blocks of 4 warps.
__device__ GPUCONV_INLINE double* box_prefix(const box_args& a, float* shared) {
  return reinterpret_cast<double*>(shared + box_prefix_offset(a.kw));
}
__device__ GPUCONV_INLINE double* box_totals(const box_args& a, float* shared, int buffer) {
  return box_prefix(a, shared) + box_window(a.kw) + 1 + buffer * box_policy::threads;
}
// A thread's chunk [lo, hi) of the window's n values.
__device__ GPUCONV_INLINE void box_chunk(int n, int& lo, int& hi) {
  const int per = (n + box_policy::threads - 1) / box_policy::threads;
  lo = int(threadIdx.x) * per;
  hi = lo + per < n ? lo + per : n;
}

// Row pass, phase 1: the window of the block's row segment (the boundary rule along y for the
// row, along x for the columns outside it).
template <typename in_t>
__device__ GPUCONV_INLINE void box_rows_load(const in_t* __restrict__ in, const box_args& a, float* shared) {
  const window_block blk = box_block(a);
  const int n = box_outputs(a, blk) + a.kw - 1;
  const int width = int(a.m.width);
  const int r = border_index(blk.y0 + a.m.oy, int(a.m.height), a.m.border);
  const float outside = a.m.border == boundary::zero ? 0.f : a.m.constant_value;
  const long long x_first = blk.x0 + a.m.ox - (a.kw - 1);
  const in_t* row = in + (blk.plane * a.m.height + (r < 0 ? 0 : r)) * a.m.width;
  for (int c = threadIdx.x; c < n; c += box_policy::threads) {
    const long long x = x_first + c;
    const int xi = x >= 0 && x < width ? int(x) : border_index(x, width, a.m.border);
    shared[c] = r < 0 || xi < 0 ? outside : float(row[xi]);
  }
}

// Row pass, phase 2: each thread's chunk total.
__device__ GPUCONV_INLINE void box_rows_total(const box_args& a, float* shared) {
  int lo, hi;
  box_chunk(box_outputs(a, box_block(a)) + a.kw - 1, lo, hi);
  double s = 0;
  for (int v = lo; v < hi; ++v) s += shared[v];
  box_totals(a, shared, 0)[threadIdx.x] = s;
}

// Row pass, phases 3 .. 2 + scan_steps: step k of the totals' inclusive scan (Hillis-Steele,
// buffer k % 2 into the other).
__device__ GPUCONV_INLINE void box_rows_scan(const box_args& a, float* shared, int k) {
  const double* from = box_totals(a, shared, k & 1);
  double* to = box_totals(a, shared, (k + 1) & 1);
  const int t = threadIdx.x, d = 1 << k;
  to[t] = t >= d ? from[t - d] + from[t] : from[t];
}

// Row pass, next phase: each chunk's prefix sums from the totals before it.
__device__ GPUCONV_INLINE void box_rows_prefix(const box_args& a, float* shared) {
  const int n = box_outputs(a, box_block(a)) + a.kw - 1;
  int lo, hi;
  box_chunk(n, lo, hi);
  if (lo >= n) return;
  const double* inclusive = box_totals(a, shared, box_policy::scan_steps & 1);
  double* p = box_prefix(a, shared);
  double s = threadIdx.x > 0 ? inclusive[threadIdx.x - 1] : 0.0;
  for (int v = lo; v < hi; ++v) {
    p[v] = s;
    s += shared[v];
  }
  if (hi == n) p[n] = s;
}

// Row pass, last phase: the sums out, coalesced.
__device__ GPUCONV_INLINE void box_rows_store(float* __restrict__ out, const box_args& a, float* shared) {
  const window_block blk = box_block(a);
  const int outputs = box_outputs(a, blk);
  const double* p = box_prefix(a, shared);
  float* dst = out + ((blk.plane * a.m.out_step + a.m.out_offset) * a.m.out_h + blk.y0) * a.m.out_w + blk.x0;
  for (int c = threadIdx.x; c < outputs; c += box_policy::threads)
    dst[c] = float(double(a.factor) * (p[c + a.kw] - p[c]));
}

// Column pass (one phase). m: its map (height = the intermediate's rows, width = out_w, 'valid'
// along y); out(y) sums intermediate rows y .. y + kh - 1. (Loading the rows in batches of 8
// before adding them, the same additions in the same order, took H100 box:255 on 4096^2 151 us
// instead of this loop's 89: more instructions and no fewer stalls.)
template <typename out_t>
__device__ GPUCONV_INLINE void box_column(const float* __restrict__ tmp, out_t* __restrict__ out, const window_map& m,
                                          int kh, float factor, const divider& per_plane,
                                          const divider& column_blocks) {
  const block_tile bt = split_block(blockIdx.x, per_plane, column_blocks);  // runs x column_blocks a plane
  const long long plane = bt.plane, run = bt.row;
  const long long x = (long long)bt.column * box_policy::column_threads + threadIdx.x;
  if (x >= m.out_w) return;
  const long long y0 = run * box_policy::column_run;
  const long long y1 = y0 + box_policy::column_run < m.out_h ? y0 + box_policy::column_run : m.out_h;
  const float* column = tmp + plane * m.height * m.width + x;
  double sum = 0;
  for (int i = 0; i < kh; ++i) sum += column[(y0 + i) * m.width];
  out_t* dst = out + (plane * m.out_step + m.out_offset) * m.out_h * m.out_w + x;
#pragma unroll 4
  for (long long y = y0; y < y1; ++y) {
    dst[y * m.out_w] = store_pixel<out_t>(float(double(factor) * sum));
    if (y + 1 < y1) sum += double(column[(y + kh) * m.width]) - double(column[y * m.width]);
  }
}

}  // namespace gpuconv::conv
