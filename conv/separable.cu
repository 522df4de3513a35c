// The separable path's passes (separable.hpp): per kernel of the bank and chunk of planes, the
// row pass into the float intermediate and the column pass into the output planes. Box kernels
// (every row factor equal and every column factor equal: box:K, blurs by a constant) run as
// running sums in double instead, O(1) work per output whatever K:
//   row pass     a block loads box_policy::rows extended rows of width + kw - 1 pixels into
//                shared memory (window_tile.cuh: boundary rule and pixel conversion in the
//                loader); each thread sums a segment of one row: the first output's kw pixels,
//                then add the pixel entering, subtract the one leaving; results go back through
//                shared memory for coalesced stores. Lanes are rows and the shared stride is
//                odd, so the lanes' reads fall in different banks.
//   column pass  a thread per column and run of rows, reading the intermediate down the column
//                (lanes on consecutive columns: coalesced), the same running sum.
// Each output is the factor times a double sum of float values: within one rounding of the
// exact sum, where the FMA walks accumulate K roundings.
#include "separable.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "../fft/device/cuda_check.hpp"
#include "pixel.cuh"
#include "window_tile.cuh"
#include "window_walks.cuh"

namespace gpuconv::conv {

namespace {

struct box_policy {
  static constexpr int rows = 32;            // row pass: rows a block (a warp's lanes: one row each)
  static constexpr int width = 128;          // row pass: outputs a row a block
  static constexpr int segment = 32;         // row pass: outputs a thread
  static constexpr int threads = rows * width / segment;
  static constexpr int column_threads = 128; // column pass: columns a block
  static constexpr int column_run = 256;     // column pass: outputs a thread down its column
  static constexpr int max_side = 1024;      // beyond: the FMA walks (the shared window would not fit)
};

// Shared floats per row of the row pass's window: >= width + kw (the last slide reads column
// width - 1 + kw; zero past the window), odd.
constexpr int box_stride(int kw) { return (box_policy::width + kw) | 1; }
constexpr std::size_t box_shared_bytes(int kw) {
  return std::size_t(box_policy::rows) * (box_stride(kw) + box_policy::width + 1) * 4;
}

template <typename in_t>
__global__ void __launch_bounds__(box_policy::threads, 1)
    box_rows_kernel(const in_t* __restrict__ in, float* __restrict__ out, const window_map m, const int kw,
                    const float factor, const long long tiles_x, const long long tiles_per_plane) {
  constexpr int rows = box_policy::rows, width = box_policy::width, segment = box_policy::segment;
  extern __shared__ float4 shared_raw[];
  const int stride = box_stride(kw);
  float* sm = reinterpret_cast<float*>(shared_raw);  // rows x stride: the extended pixels
  float* res = sm + rows * stride;                   // rows x (width + 1): the sums
  const long long b = blockIdx.x, plane = b / tiles_per_plane, t = b - plane * tiles_per_plane;
  const long long by = t / tiles_x, bx = t - by * tiles_x;
  const long long y0 = by * rows, x0 = bx * width;
  load_tile(in + plane * m.height * m.width, m, y0 + m.oy, x0 + m.ox - (kw - 1), rows, width + kw - 1, stride, sm);
  wait_copies();
  __syncthreads();
  // output x0 + c sums window columns c .. c + kw - 1
  const int row = threadIdx.x % rows, first = threadIdx.x / rows * segment;
  const float* src = sm + row * stride + first;
  double sum = 0;
  for (int j = 0; j < kw; ++j) sum += src[j];
  float* dst = res + row * (width + 1) + first;
#pragma unroll 4
  for (int c = 0; c < segment; ++c) {
    dst[c] = float(double(factor) * sum);
    sum += double(src[c + kw]) - double(src[c]);
  }
  __syncthreads();
  float* plane_out = out + (plane * m.out_step + m.out_offset) * m.out_h * m.out_w;
  for (int e = threadIdx.x; e < rows * width; e += box_policy::threads) {
    const int r = e / width, c = e % width;
    const long long y = y0 + r, x = x0 + c;
    if (y < m.out_h && x < m.out_w) plane_out[y * m.out_w + x] = res[r * (width + 1) + c];
  }
}

// m: the column pass's map (height = the intermediate's rows, width = out_w, 'valid' along y)
template <typename out_t>
__global__ void __launch_bounds__(box_policy::column_threads, 1)
    box_columns_kernel(const float* __restrict__ tmp, out_t* __restrict__ out, const window_map m, const int kh,
                       const float factor, const long long runs, const long long column_blocks) {
  const long long b = blockIdx.x, per_plane = runs * column_blocks, plane = b / per_plane, t = b - plane * per_plane;
  const long long run = t / column_blocks, cb = t - run * column_blocks;
  const long long x = cb * box_policy::column_threads + threadIdx.x;
  if (x >= m.out_w) return;
  const long long y0 = run * box_policy::column_run, y1 = std::min<long long>(y0 + box_policy::column_run, m.out_h);
  const float* column = tmp + plane * m.height * m.width + x;  // out(y) sums rows y .. y + kh - 1
  double sum = 0;
  for (int i = 0; i < kh; ++i) sum += column[(y0 + i) * m.width];
  out_t* dst = out + (plane * m.out_step + m.out_offset) * m.out_h * m.out_w + x;
#pragma unroll 4
  for (long long y = y0; y < y1; ++y) {
    dst[y * m.out_w] = store_pixel<out_t>(float(double(factor) * sum));
    if (y + 1 < y1) sum += double(column[(y + kh) * m.width]) - double(column[y * m.width]);
  }
}

// Both passes in one block, the intermediate in shared memory (kernels up to tile_max_side):
// the window of (tile_h + kh - 1) x (tile_w + kw - 1) extended pixels, the row walk over its
// rows into tile_h + kh - 1 rows of tile_w row sums (in rounds of tile_h rows), the column walk
// over those into the tile's outputs. The image is read once (the halo from L2) and the output
// written once: 8 B a pixel in fp32 instead of the two passes' 16.
constexpr int tile_max_side = 32;

struct tile_layout {
  int stride_in, stride_mid, window_rows, mid_rows, row_taps, column_taps;
  std::size_t bytes;
};

// shared: row taps (round_up(kw, 4)), column taps (4 kh), the window (mid_rows + R - 1 rows:
// the row walk's last round reads R rows from its first), the row sums (mid_rows)
HOST_DEVICE tile_layout tile_layout_for(int tile_h, int tile_w, int kh, int kw) {
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

template <typename in_t, typename out_t>
__global__ void __launch_bounds__(window_policy::max_threads, 1)
    separable_tile_kernel(const in_t* __restrict__ in, out_t* __restrict__ out, const window_map m, const int kh,
                          const int kw, const float* __restrict__ row_taps, const float* __restrict__ column_taps,
                          const long long tiles_x, const long long tiles_per_plane, const bool vector_store) {
  constexpr int R = window_policy::rows_per_thread, C = window_policy::columns_per_thread;
  extern __shared__ float4 shared_raw[];
  const int tile_h = blockDim.y * R, tile_w = blockDim.x * C;
  const tile_layout l = tile_layout_for(tile_h, tile_w, kh, kw);
  float* sm_row_taps = reinterpret_cast<float*>(shared_raw);
  float* sm_column_taps = sm_row_taps + l.row_taps;
  float* window = sm_column_taps + l.column_taps;  // both tap counts are multiples of 4: float4 rows stay aligned
  float* mid = window + l.window_rows * l.stride_in;
  const long long b = blockIdx.x, plane = b / tiles_per_plane, t = b - plane * tiles_per_plane;
  const long long by = t / tiles_x, bx = t - by * tiles_x;
  const long long y0 = by * tile_h, x0 = bx * tile_w;
  const int threads = blockDim.x * blockDim.y, tid = threadIdx.y * blockDim.x + threadIdx.x;
  for (int e = tid; e < l.row_taps; e += threads) sm_row_taps[e] = row_taps[e];
  for (int e = tid; e < l.column_taps; e += threads) sm_column_taps[e] = column_taps[e];
  load_tile(in + plane * m.height * m.width, m, y0 + m.oy - (kh - 1), x0 + m.ox - (kw - 1), l.mid_rows,
            tile_w + kw - 1, l.stride_in, window);
  wait_copies();
  __syncthreads();
  window_acc acc;
  // row pass: mid row q, column c = sum_j r(j) window(q, c + kw - 1 - j)
  for (int r0 = threadIdx.y * R; r0 < l.mid_rows; r0 += tile_h) {
#pragma unroll
    for (int a = 0; a < R; ++a)
#pragma unroll
      for (int c = 0; c < C; ++c) acc[a][c] = 0.f;
    row_walk(window + r0 * l.stride_in + threadIdx.x * C, l.stride_in, sm_row_taps, kw, acc);
#pragma unroll
    for (int a = 0; a < R; ++a)
      if (r0 + a < l.mid_rows)
        *reinterpret_cast<float4*>(mid + (r0 + a) * l.stride_mid + threadIdx.x * C) =
            make_float4(acc[a][0], acc[a][1], acc[a][2], acc[a][3]);
  }
  __syncthreads();
  // column pass: out(y0 + a, c) = sum_i c(i) mid(a + kh - 1 - i, c)
#pragma unroll
  for (int a = 0; a < R; ++a)
#pragma unroll
    for (int c = 0; c < C; ++c) acc[a][c] = 0.f;
  column_walk(mid + threadIdx.y * R * l.stride_mid + threadIdx.x * C, l.stride_mid, sm_column_taps, kh, acc);
  store_tile(acc, out, m, plane, y0, x0, vector_store);
}

// The factor of a constant run of n values, or 0 when they differ.
float constant_factor(const float* v, int n) {
  for (int i = 1; i < n; ++i)
    if (v[i] != v[0]) return 0.f;
  return v[0];
}

}  // namespace

separable_tiles::separable_tiles(const rank1_factors& f, int count, int kh, int kw)
    : count_(count), kh_(kh), kw_(kw), rows_(f.row, count, 1, kw), columns_(f.column, count, kh, 1) {
  if (!supports(kh, kw))
    throw std::invalid_argument("separable_tiles: a " + std::to_string(kh) + " x " + std::to_string(kw) +
                                " kernel's passes do not fit the shared tile");
  for (int k = 0; k < count; ++k) {
    const float c = constant_factor(f.column.data() + std::size_t(k) * kh, kh);
    const float r = constant_factor(f.row.data() + std::size_t(k) * kw, kw);
    const bool box = c != 0.f && r != 0.f && is_box_size(kh, kw);
    box_.push_back(box ? std::array<float, 2>{c, r} : std::array<float, 2>{0.f, 0.f});
  }
}

bool separable_tiles::in_tile() const { return uses_tile(kh_, kw_); }

bool separable_tiles::uses_tile(int kh, int kw) { return kh <= tile_max_side && kw <= tile_max_side; }

// The direct path's block shape (tx, ty) for this output, fewer rows of threads while the
// tile's shared memory exceeds the direct path's limit.
template <typename T>
void separable_tiles::run_tile(const T* in, T* out, const window_map& m, int k, cudaStream_t stream) const {
  window_shape s = window_shape_for(m.out_h, m.out_w, kh_, kw_);
  tile_layout l = tile_layout_for(s.ty * window_policy::rows_per_thread, s.tile_w, kh_, kw_);
  while (l.bytes > (std::size_t)window_policy::max_shared_bytes && s.ty > 1)
    l = tile_layout_for(--s.ty * window_policy::rows_per_thread, s.tile_w, kh_, kw_);
  const long long tile_h = s.ty * window_policy::rows_per_thread;
  const long long tiles_y = (m.out_h + tile_h - 1) / tile_h, tiles_x = (m.out_w + s.tile_w - 1) / s.tile_w;
  const long long blocks = m.planes * tiles_y * tiles_x;
  if (blocks < 1) return;
  if (blocks >= (1LL << 31))
    throw std::invalid_argument("separable_tiles::run: " + std::to_string(blocks) + " blocks in one launch");
  const bool vector_store = m.out_w % 4 == 0 && reinterpret_cast<std::uintptr_t>(out) % (4 * sizeof(T)) == 0;
  if (l.bytes > 48 * 1024)
    GPUCONV_CUDA(cudaFuncSetAttribute(&separable_tile_kernel<T, T>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      (int)l.bytes));
  separable_tile_kernel<T, T><<<(unsigned)blocks, dim3(s.tx, s.ty), l.bytes, stream>>>(
      in, out, m, kh_, kw_, rows_.padded(k), columns_.padded(k), tiles_x, tiles_y * tiles_x, vector_store);
  check_launch("separable_tile_kernel");
}

bool separable_tiles::is_box_size(int kh, int kw) { return kh <= box_policy::max_side && kw <= box_policy::max_side; }

template <typename T>
void separable_tiles::run(const T* in, T* out, const tile_map& m, float* intermediate, long long chunk,
                          cudaStream_t stream) const {
  if (m.kh != kh_ || m.kw != kw_ || m.kernels != count_)
    throw std::invalid_argument("separable_tiles::run: the map's kernels are not the plan's");
  if (chunk < 1) throw std::invalid_argument("separable_tiles::run: a chunk of " + std::to_string(chunk) + " planes");
  const long long planes = m.tiles_per_kernel / m.tiles_per_plane, tmp_h = m.out_h + kh_ - 1;
  for (long long p0 = 0; p0 < planes; p0 += chunk) {
    const long long n = std::min(chunk, planes - p0);
    const T* src = in + p0 * m.height * m.width;
    T* dst = out + p0 * count_ * m.out_h * m.out_w;
    for (int k = 0; k < count_; ++k) {
      // row pass: the rows the column pass reads, out_h + kh - 1 of them from row oy - (kh - 1)
      const window_map rows{m.height, m.width, tmp_h, m.out_w, m.oy - (kh_ - 1), m.ox, m.border, m.constant_value,
                            n, 1, 0};
      // column pass: 'valid' along y over the intermediate, into output planes p * count + k
      const window_map columns{tmp_h, m.out_w, m.out_h, m.out_w, kh_ - 1, 0, boundary::zero, 0.f, n, count_, k};
      if (in_tile()) {
        const window_map whole{m.height, m.width, m.out_h, m.out_w, m.oy, m.ox, m.border, m.constant_value, n, count_, k};
        run_tile(src, dst, whole, k, stream);
        continue;
      }
      if (box_[k][0] == 0.f) {
        rows_.run(src, intermediate, rows, k, stream);
        columns_.run(static_cast<const float*>(intermediate), dst, columns, k, stream);
        continue;
      }
      const long long tiles_x = (m.out_w + box_policy::width - 1) / box_policy::width;
      const long long tiles_y = (tmp_h + box_policy::rows - 1) / box_policy::rows;
      const std::size_t bytes = box_shared_bytes(kw_);
      if (bytes > 48 * 1024)
        GPUCONV_CUDA(cudaFuncSetAttribute(&box_rows_kernel<T>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes));
      box_rows_kernel<T><<<(unsigned)(n * tiles_y * tiles_x), box_policy::threads, bytes, stream>>>(
          src, intermediate, rows, kw_, box_[k][1], tiles_x, tiles_y * tiles_x);
      check_launch("box_rows_kernel");
      const long long runs = (m.out_h + box_policy::column_run - 1) / box_policy::column_run;
      const long long column_blocks = (m.out_w + box_policy::column_threads - 1) / box_policy::column_threads;
      box_columns_kernel<T><<<(unsigned)(n * runs * column_blocks), box_policy::column_threads, 0, stream>>>(
          intermediate, dst, columns, kh_, box_[k][0], runs, column_blocks);
      check_launch("box_columns_kernel");
    }
  }
}

template void separable_tiles::run<float>(const float*, float*, const tile_map&, float*, long long, cudaStream_t) const;
template void separable_tiles::run<std::uint8_t>(const std::uint8_t*, std::uint8_t*, const tile_map&, float*, long long,
                                                 cudaStream_t) const;
template void separable_tiles::run<std::uint16_t>(const std::uint16_t*, std::uint16_t*, const tile_map&, float*,
                                                  long long, cudaStream_t) const;

}  // namespace gpuconv::conv
