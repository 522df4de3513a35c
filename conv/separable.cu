// The separable path's passes (separable.hpp): per kernel of the bank and chunk of planes, the
// shared-tile kernel (up to 32 taps a side), the box kernels' running sums (larger boxes), or
// the row pass into the float intermediate and the column pass into the output planes (the
// direct path's window kernels). The kernels' phases live in separable_tile.cuh.
#include "separable.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "../fft/device/cuda_check.hpp"
#include "../fft/device/shared_limit.hpp"
#include "pixel.cuh"
#include "separable_tile.cuh"

namespace gpuconv::conv {

namespace {

// The entries: the phases of separable_tile.cuh with the barriers between them.
template <typename in_t>
__global__ void __launch_bounds__(box_policy::threads) box_rows_kernel(const in_t* __restrict__ in,
                                                                       float* __restrict__ out, const box_args a) {
  extern __shared__ float4 shared_raw[];
  float* shared = reinterpret_cast<float*>(shared_raw);
  box_rows_load(in, a, shared);
  __syncthreads();
  box_rows_total(a, shared);
  __syncthreads();
#pragma unroll
  for (int k = 0; k < box_policy::scan_steps; ++k) {
    box_rows_scan(a, shared, k);
    __syncthreads();
  }
  box_rows_prefix(a, shared);
  __syncthreads();
  box_rows_store(out, a, shared);
}

template <typename out_t>
__global__ void __launch_bounds__(box_policy::column_threads, 1)
    box_columns_kernel(const float* __restrict__ tmp, out_t* __restrict__ out, const window_map m, const int kh,
                       const float factor, const divider per_plane, const divider column_blocks) {
  box_column(tmp, out, m, kh, factor, per_plane, column_blocks);
}

template <typename in_t, typename out_t>
__global__ void __launch_bounds__(window_policy::max_threads, 1)
    separable_tile_kernel(const in_t* __restrict__ in, out_t* __restrict__ out, const tile_args a) {
  extern __shared__ float4 shared_raw[];
  float* shared = reinterpret_cast<float*>(shared_raw);
  tile_load(in, a, shared);
  wait_copies();
  __syncthreads();
  tile_rows(a, shared);
  __syncthreads();
  tile_columns(out, a, shared);
}

// The factor of a constant run of n values, or 0 when they differ.
float constant_factor(const float* v, int n) {
  for (int i = 1; i < n; ++i)
    if (v[i] != v[0]) return 0.f;
  return v[0];
}

}  // namespace

separable_tiles::separable_tiles(const rank1_factors& f, int count, int kh, int kw, long long out_h, long long out_w,
                                 int sms)
    : count_(count), kh_(kh), kw_(kw), rows_(f.row, count, 1, kw), columns_(f.column, count, kh, 1) {
  if (!supports(kh, kw))
    throw std::invalid_argument("separable_tiles: a " + std::to_string(kh) + " x " + std::to_string(kw) +
                                " kernel's passes do not fit the shared tile");
  max_blocks_ = (long long)separable_tile_fill() * sms;
  rows_.as_separable_pass();
  columns_.as_separable_pass();
  for (int k = 0; k < count; ++k) {
    const float c = constant_factor(f.column.data() + std::size_t(k) * kh, kh);
    const float r = constant_factor(f.row.data() + std::size_t(k) * kw, kw);
    const bool box = c != 0.f && r != 0.f && is_box_size(kh, kw);
    box_.push_back(box ? std::array<float, 2>{c, r} : std::array<float, 2>{0.f, 0.f});
  }
  if (fft_passes(kh, kw, out_h, out_w, box_factors(f, count, kh, kw)))
    fft_ = std::make_unique<line_fft_passes>(f, count, kh, kw, out_h, out_w);
}

bool separable_tiles::in_tile() const { return uses_tile(kh_, kw_) && !fft_; }

bool separable_tiles::fft_passes(int kh, int kw, long long out_h, long long out_w, bool box) {
  const bool fits = line_fft_passes::line_for(kw, out_w) > 0 && line_fft_passes::line_for(kh, out_h) > 0;
  if (const int forced = forced_line_fft(); forced != 0) return forced > 0 && fits;
  if (!fits || uses_tile(kh, kw)) return false;
  const double other = box ? cuda_box_ps_per_pixel(kh, out_h) : cuda_separable_ps_per_pixel(kh, kw, out_h, out_w);
  return fft_passes_ps_per_pixel(kh, kw, out_h, out_w) < other;
}

double separable_tiles::fft_passes_ps_per_pixel(int kh, int kw, long long out_h, long long out_w) {
  const double rows = double(std::max(out_h, 1LL));
  return line_fft_passes::pass_ps_per_pixel(kw, out_w) * (rows + kh - 1) / rows +
         line_fft_passes::pass_ps_per_pixel(kh, out_h);
}

bool separable_tiles::in_one_kernel(const rank1_factors& f, int count, int kh, int kw, long long out_h,
                                    long long out_w) {
  return uses_tile(kh, kw) && !fft_passes(kh, kw, out_h, out_w, box_factors(f, count, kh, kw));
}

bool separable_tiles::uses_tile(int kh, int kw) { return kh <= tile_max_side && kw <= tile_max_side; }

separable_tiles::tile_geometry separable_tiles::tile_geometry_for(long long out_h, long long out_w, int kh, int kw,
                                                                  long long planes, int sms) {
  const tile_shape t = tile_shape_for(out_h, out_w, kh, kw, planes, (long long)separable_tile_fill() * sms);
  return {t.shape.tile_h, t.shape.tx * t.shape.ty, t.layout.bytes};
}

namespace {
// force_separable_tile_fill's value; GPUCONV_SEPARABLE_FILL (0..64) sets it at start-up (measurements)
int fill_from_environment() {
  const char* v = std::getenv("GPUCONV_SEPARABLE_FILL");
  const int fill = v ? std::atoi(v) : -1;
  return fill >= 0 && fill <= 64 ? fill : 1;
}
const int start_fill = fill_from_environment();
std::atomic<int> fill_blocks{start_fill};
}  // namespace

int separable_tile_fill() { return fill_blocks; }

void force_separable_tile_fill(int fill) {
  if (fill < -1 || fill > 64)
    throw std::invalid_argument("force_separable_tile_fill: " + std::to_string(fill) + " (0..64, or -1)");
  fill_blocks = fill < 0 ? start_fill : fill;
}

template <typename T>
void separable_tiles::run_tile(const T* in, T* out, const window_map& m, int k, cudaStream_t stream) const {
  const tile_shape t = tile_shape_for(m.out_h, m.out_w, kh_, kw_, m.planes, max_blocks_);
  const tile_layout& l = t.layout;
  const long long tiles_y = t.tiles_y, tiles_x = t.tiles_x;
  const long long blocks = m.planes * tiles_y * tiles_x;
  if (blocks < 1) return;
  if (blocks >= (1LL << 31))
    throw std::invalid_argument("separable_tiles::run: " + std::to_string(blocks) + " blocks in one launch");
  const bool vector_store = m.out_w % 4 == 0 && reinterpret_cast<std::uintptr_t>(out) % (4 * sizeof(T)) == 0;
  allow_dynamic_shared(&separable_tile_kernel<T, T>, l.bytes);
  separable_tile_kernel<T, T><<<(unsigned)blocks, dim3(t.shape.tx, t.shape.ty), l.bytes, stream>>>(
      in, out,
      tile_args{m, kh_, kw_, rows_.padded(k), columns_.padded(k), divider(tiles_x), divider(tiles_y * tiles_x), vector_store});
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
      if (fft_) {
        fft_->rows(src, intermediate, rows, k, stream);
        fft_->columns(static_cast<const float*>(intermediate), dst, columns, k, stream);
        continue;
      }
      if (box_[k][0] == 0.f) {
        rows_.run(src, intermediate, rows, k, stream);
        columns_.run(static_cast<const float*>(intermediate), dst, columns, k, stream);
        continue;
      }
      // row pass: a block per segment of box_policy::width outputs of an intermediate row
      const long long tiles_x = (m.out_w + box_policy::width - 1) / box_policy::width;
      const long long runs = (m.out_h + box_policy::column_run - 1) / box_policy::column_run;
      const long long column_blocks = (m.out_w + box_policy::column_threads - 1) / box_policy::column_threads;
      for (const long long blocks : {n * tmp_h * tiles_x, n * runs * column_blocks})
        if (blocks >= (1LL << 31))
          throw std::invalid_argument("separable_tiles::run: " + std::to_string(blocks) + " blocks in one launch");
      const std::size_t bytes = box_shared_bytes(kw_);
      allow_dynamic_shared(&box_rows_kernel<T>, bytes);
      box_rows_kernel<T><<<(unsigned)(n * tmp_h * tiles_x), box_policy::threads, bytes, stream>>>(
          src, intermediate, box_args{rows, kw_, box_[k][1], divider(tiles_x), divider(tmp_h * tiles_x)});
      check_launch("box_rows_kernel");
      box_columns_kernel<T><<<(unsigned)(n * runs * column_blocks), box_policy::column_threads, 0, stream>>>(
          intermediate, dst, columns, kh_, box_[k][0], divider(runs * column_blocks), divider(column_blocks));
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
