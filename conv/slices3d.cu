#include "slices3d.hpp"

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>

#include "cpu_pool.hpp"
#include "fft/block/mixed.cuh"
#include "fft/host/mixed_double.hpp"
#include "fft/host/real_1d_host.hpp"
#include "fft/kernels/strided_c2c.cuh"
#include "fft/plan/device_table.hpp"
#include "fft/plan/dispatch.hpp"
#include "fft/thread/fft.hpp"
#include "fft/thread/mixed_radix.hpp"
#include "fused.hpp"
#include "fused_mixed.cuh"
#include "fused_tile.cuh"

namespace gpuconv::conv {

namespace {

using cf = fft::complex_t<float>;

// The tile depths the pass along D is compiled for: powers of two 16..256 and the mixed
// lengths (tile_map3d.hpp's slice_path_depth).
template <typename F>
void dispatch_depth(int depth, F&& f) {
  if (!slice_path_depth(depth)) throw std::invalid_argument("slice_tiles3d: tile depth " + std::to_string(depth));
  fft::dispatch_strided<16>(depth, f);
}

// Where one tile's slice sits. Pass A: base = the offset of the source slice in the input
// (row 0, column 0), or -1 when the whole slice is `fill` (outside the volume, past a band's
// slab, or no tile); y, x = the input coordinates of the slice's element (0, 0) before the
// boundary rule. Pass C: base = the offset of the output slice, or -1 (no tile, or past the
// unit's last output slice); y, x = the tile's first output row and column.
struct slice_origin {
  long long base, y, x;
  float fill;
};
static_assert(sizeof(slice_origin) <= 48, "slice_origin: the fused policy's shared memory holds two of 48 bytes");

__device__ GPUCONV_INLINE slice_origin source_of(const tile_map3d& m, long long g, bool present, int u) {
  if (!present) return {-1, 0, 0, 0.f};
  const tile_map3d::tile_at at = m.locate(g);
  const long long p = m.z_first + at.z0 + u + m.oz - (m.kd - 1);
  long long s;
  if (m.slab_extended) {
    s = p - m.slab_first;
    if (s >= m.slab_depth) return {-1, 0, 0, 0.f};
  } else {
    s = border_index(p, (int)m.depth, m.border);
    if (s < 0) return {-1, 0, 0, m.border == boundary::zero ? 0.f : m.constant_value};
  }
  return {(at.volume * m.slab_depth + s) * m.height * m.width, at.y0 + m.oy - (m.kh - 1), at.x0 + m.ox - (m.kw - 1),
          0.f};
}

__device__ GPUCONV_INLINE slice_origin output_of(const tile_map3d& m, long long g, bool present, int a) {
  if (!present) return {-1, 0, 0, 0.f};
  const tile_map3d::tile_at at = m.locate(g);
  const long long z = at.z0 + a;
  if (m.z_first + z >= m.z_end) return {-1, 0, 0, 0.f};
  return {((at.volume * (m.z_end - m.z_first) + z) * m.out_h) * m.out_w, at.y0, at.x0, 0.f};
}

// Column w of the slice at o, rows t + offset(j) (j < I; offset(j) independent of t; below n,
// the slice's side), as floats (tile_map3d::gather_at's rules); neighbouring lanes hold
// neighbouring columns.
template <int I, typename Offset, typename in_t>
__device__ GPUCONV_INLINE void load_slice_column(const in_t* __restrict__ in, const tile_map3d& m,
                                                 const slice_origin& o, int w, int t, int n, Offset offset, float (&x)[I]) {
  if (o.base < 0) {
#pragma unroll
    for (int j = 0; j < I; ++j) x[j] = o.fill;
    return;
  }
  const float outside = m.border == boundary::zero ? 0.f : m.constant_value;
  const int c = border_index(o.x + w, (int)m.width, m.border);
  if (c < 0) {
#pragma unroll
    for (int j = 0; j < I; ++j) x[j] = outside;
    return;
  }
  detail::load_column_at<I>(in + o.base + c, o.y, t, n, offset, m.width, m.height, m.border, outside, x);
}

// Writes the valid outputs of column w of the slice at o from x[j] (rows t + offset(j)).
template <int I, typename Offset, typename out_t>
__device__ GPUCONV_INLINE void store_slice_column(out_t* __restrict__ out, const tile_map3d& m, const slice_origin& o,
                                                  int w, int t, Offset offset, const float (&x)[I]) {
  if (o.base < 0) return;
  const int c = w - (m.kw - 1);
  if (c < 0) return;
  const long long xo = o.x + c;
  if (xo >= m.out_w) return;
  out_t* column = out + o.base + xo;
#pragma unroll
  for (int j = 0; j < I; ++j) {
    const int b = t + offset(j) - (m.kh - 1);
    const long long y = o.y + b;
    if (b >= 0 && y < m.out_h) column[y * m.out_w] = store_pixel<out_t>(x[j]);
  }
}

// The pair and the slice of it that block blockIdx.x takes (`per_pair` blocks a pair), with the
// origins of the pair's two tiles left in shared memory by threads 0 and 1 (origin(g, present,
// slice): source_of or output_of) and the block synchronised.
struct block_slice {
  long long local_pair;
  int slice;
};
template <typename Origin>
__device__ GPUCONV_INLINE block_slice publish_slice_origins(unsigned per_pair, long long first_pair, long long total,
                                                           slice_origin* origins, Origin origin) {
  const long long local_pair = blockIdx.x / per_pair;
  const int slice = (int)(blockIdx.x % per_pair);
  const long long g = 2 * (first_pair + local_pair);
  if (threadIdx.x < 2) origins[threadIdx.x] = origin(g + threadIdx.x, g + threadIdx.x < total, slice);
  __syncthreads();
  return {local_pair, slice};
}

// Pass A. Block b: slice u = b mod tile_d of pair first_pair + b / tile_d (tiles 2p, 2p + 1 of
// the map, the second absent past `total`). Thread layout as fused_tile_kernel's: line =
// threadIdx.x mod lanes (+ lanes for a second line), t = threadIdx.x / lanes.
template <typename policy, typename in_t>
__global__ void __launch_bounds__(policy::block_threads, policy::min_blocks)
slice_forward_kernel(const in_t* __restrict__ in, tile_map3d m, long long total, long long first_pair,
                     cf* __restrict__ work, const cf* __restrict__ table) {
  constexpr int T = policy::tile, TL = policy::threads_per_line, I = policy::items_per_thread;
  constexpr int L = policy::lines_per_thread, lanes = policy::lanes, stride = policy::line_stride;
  using forward_t = fft::block_fft_t<T, TL, false, fft::twiddle_load_late, true>;
  extern __shared__ __align__(16) unsigned char shared_raw[];
  cf* shared = reinterpret_cast<cf*>(shared_raw);
  auto* origins = reinterpret_cast<slice_origin*>(shared_raw + T * stride * 8);

  const unsigned td = (unsigned)m.tile_d;
  const block_slice at = publish_slice_origins(
      td, first_pair, total, origins, [&](long long g, bool present, int s) { return source_of(m, g, present, s); });
  const long long local_pair = at.local_pair;
  const int u = at.slice;

  const int first = threadIdx.x % lanes, t = threadIdx.x / lanes;
  auto line_of = [&](int h) { return first + lanes * h; };
  fft::array_t<cf, I> v[L];
  auto offset = [](int j) { return TL * j; };
  fft::static_for<L>([&](auto h) {
    float a[I], b[I];
    load_slice_column<I>(in, m, origins[0], line_of(h.value), t, T, offset, a);
    load_slice_column<I>(in, m, origins[1], line_of(h.value), t, T, offset, b);
    fft::static_for<I>([&](auto j) { v[h.value][j.value] = {a[j.value], b[j.value]}; });
  });
  // v[h][j] = X(ky = line, kx = t + TL*j), stored [kx][ky] (neighbouring lanes, neighbouring values)
  detail::tile_forward_2d<policy, forward_t>(v, shared, first, t, table);
  cf* slice = work + ((long long)local_pair * td + u) * (T * T);
  fft::static_for<L>([&](auto h) {
    fft::static_for<I>([&](auto j) { slice[(t + TL * j.value) * T + line_of(h.value)] = v[h.value][j.value]; });
  });
}

// Pass C. Block b: valid slice a = b mod valid_d (tile slice a + kd - 1) of pair first_pair +
// b / valid_d.
template <typename policy, typename out_t>
__global__ void __launch_bounds__(policy::block_threads, policy::min_blocks)
slice_inverse_kernel(const cf* __restrict__ work, out_t* __restrict__ out, tile_map3d m, long long total,
                     long long first_pair, const cf* __restrict__ table) {
  constexpr int T = policy::tile, TL = policy::threads_per_line, I = policy::items_per_thread;
  constexpr int L = policy::lines_per_thread, lanes = policy::lanes, stride = policy::line_stride;
  using inverse_t = fft::block_fft_t<T, TL, true, fft::twiddle_load_late, true>;
  extern __shared__ __align__(16) unsigned char shared_raw[];
  cf* shared = reinterpret_cast<cf*>(shared_raw);
  auto* origins = reinterpret_cast<slice_origin*>(shared_raw + T * stride * 8);

  const block_slice at = publish_slice_origins((unsigned)m.valid_d, first_pair, total, origins,
                                              [&](long long g, bool present, int s) { return output_of(m, g, present, s); });
  const long long local_pair = at.local_pair;
  const int a = at.slice;
  if (origins[0].base < 0 && origins[1].base < 0) return;  // the whole block: no output slice here

  const int first = threadIdx.x % lanes, t = threadIdx.x / lanes;
  auto line_of = [&](int h) { return first + lanes * h; };
  const cf* slice = work + ((long long)local_pair * m.tile_d + a + m.kd - 1) * (T * T);
  fft::array_t<cf, I> v[L];
  fft::static_for<L>([&](auto h) {  // v[h][j] = X(ky = line, kx = t + TL*j)
    fft::static_for<I>([&](auto j) { v[h.value][j.value] = slice[(t + TL * j.value) * T + line_of(h.value)]; });
  });
  // v[h][j] = y(t + TL*j, x = line)
  detail::tile_inverse_2d<policy, inverse_t>(v, shared, first, t, table);
  fft::static_for<L>([&](auto h) {
    float re[I], im[I];
    fft::static_for<I>([&](auto j) {
      re[j.value] = v[h.value][j.value].re;
      im[j.value] = v[h.value][j.value].im;
    });
    store_slice_column<I>(out, m, origins[0], line_of(h.value), t, [](int j) { return TL * j; }, re);
    store_slice_column<I>(out, m, origins[1], line_of(h.value), t, [](int j) { return TL * j; }, im);
  });
}

// Mixed slice sides (n = R M, R = 3 or 5: slice_mixed_side = 160 = 5 x 32), on fused_mixed.cuh's
// layout: a pair's complex 160 x 160 slice in registers would fill the multiprocessor's whole
// register file, so the slice stays in shared memory as a row-major n x (n + 1) array (206 KB at
// 160, one block an SM) and a thread holds one line's values at a time.
// Threads a line and lines a thread (tuning builds): 8 and 2 = 640 threads holding 20 values
// at 96 registers (16-40 bytes spilled); 4 and 2 = 320 threads holding 40 at 168 registers
// (172 bytes spilled) took K = 31 on 128 x 512^2 0.71 -> 0.90 ms and K = 63 1.63 -> 1.99 (H200,
// session 55); 4 and 1 (640 threads, 40 values) spills 500-800 bytes at the 96-register cap.
#ifndef GPUCONV_SLICE_MIXED_TL
#define GPUCONV_SLICE_MIXED_TL 8
#endif
#ifndef GPUCONV_SLICE_MIXED_LINES
#define GPUCONV_SLICE_MIXED_LINES 2
#endif
template <int n>
using mixed_slice_policy = mixed_tile_policy<n, GPUCONV_SLICE_MIXED_TL, GPUCONV_SLICE_MIXED_LINES>;

// Pass A on mixed sides: as slice_forward_kernel (one block a slice u of a pair).
template <typename policy, typename in_t>
__global__ void __launch_bounds__(policy::block_threads, 1)
slice_forward_mixed_kernel(const in_t* __restrict__ in, tile_map3d m, long long total, long long first_pair,
                           cf* __restrict__ work, const cf* __restrict__ table) {
  constexpr int T = policy::tile, I = policy::items, L = policy::lines_per_thread, lanes = policy::lanes;
  constexpr int S = policy::stride;
  using layout = typename policy::layout;
  extern __shared__ __align__(16) unsigned char shared_raw[];
  cf* shared = reinterpret_cast<cf*>(shared_raw);
  auto* origins = reinterpret_cast<slice_origin*>(shared_raw + T * S * 8);

  const unsigned td = (unsigned)m.tile_d;
  const block_slice at = publish_slice_origins(
      td, first_pair, total, origins, [&](long long g, bool present, int s) { return source_of(m, g, present, s); });
  const long long local_pair = at.local_pair;
  const int u = at.slice;

  const int first = threadIdx.x % lanes, t = threadIdx.x / lanes;
  // columns x: rows time_index(t, q) loaded, X(ky, x) left in the column's elements ky
  detail::mixed_columns_forward<policy>(shared, first, t, table, [&](int x, fft::array_t<cf, I>& v) {
    float a[I], b[I];
    auto offset = [](int q) { return layout::time_index(0, q); };  // rows time_index(t, q)
    load_slice_column<I>(in, m, origins[0], x, t, T, offset, a);
    load_slice_column<I>(in, m, origins[1], x, t, T, offset, b);
    fft::static_for<I>([&](auto q) { v[q.value] = {a[q.value], b[q.value]}; });
  });
  __syncthreads();
  // rows ky: X(ky, kx) stored to work[pair][u][kx][ky] (neighbouring lanes, neighbouring ky)
  cf* slice = work + ((long long)local_pair * td + u) * (T * T);
#pragma unroll 1
  for (int h = 0; h < L; ++h) {
    const int ky = first + lanes * h;
    fft::array_t<cf, I> v;
    detail::mixed_row_forward<policy>(shared, ky, t, table, v);
    fft::static_for<I>([&](auto q) { slice[layout::freq_index(t, q.value) * T + ky] = v[q.value]; });
  }
}

// Pass C on mixed sides: as slice_inverse_kernel (one block a valid slice of a pair).
template <typename policy, typename out_t>
__global__ void __launch_bounds__(policy::block_threads, 1)
slice_inverse_mixed_kernel(const cf* __restrict__ work, out_t* __restrict__ out, tile_map3d m, long long total,
                           long long first_pair, const cf* __restrict__ table) {
  constexpr int T = policy::tile, I = policy::items, L = policy::lines_per_thread, lanes = policy::lanes;
  constexpr int S = policy::stride;
  using layout = typename policy::layout;
  extern __shared__ __align__(16) unsigned char shared_raw[];
  cf* shared = reinterpret_cast<cf*>(shared_raw);
  auto* origins = reinterpret_cast<slice_origin*>(shared_raw + T * S * 8);

  const block_slice at = publish_slice_origins((unsigned)m.valid_d, first_pair, total, origins,
                                              [&](long long g, bool present, int s) { return output_of(m, g, present, s); });
  const long long local_pair = at.local_pair;
  const int a = at.slice;
  if (origins[0].base < 0 && origins[1].base < 0) return;  // the whole block: no output slice here

  const int first = threadIdx.x % lanes, t = threadIdx.x / lanes;
  const cf* slice = work + ((long long)local_pair * m.tile_d + a + m.kd - 1) * (T * T);
  // rows ky: X(ky, kx) loaded, (ky, x) left in the row's elements x
#pragma unroll 1
  for (int h = 0; h < L; ++h) {
    const int ky = first + lanes * h;
    fft::array_t<cf, I> v;
    fft::static_for<I>([&](auto q) { v[q.value] = slice[layout::freq_index(t, q.value) * T + ky]; });
    policy::row_fft::inverse(v, shared + ky * S, t, table);
    __syncthreads();  // the transform's last reads of the row are done
    fft::static_for<I>([&](auto q) { shared[ky * S + layout::time_index(t, q.value)] = v[q.value]; });
  }
  __syncthreads();
  // columns x: y(time_index(t, q), x), the valid outputs written
  detail::mixed_columns_inverse<policy>(shared, first, t, table, [&](int x, const float(&re)[I], const float(&im)[I]) {
    auto offset = [](int q) { return layout::time_index(0, q); };  // rows time_index(t, q)
    store_slice_column<I>(out, m, origins[0], x, t, offset, re);
    store_slice_column<I>(out, m, origins[1], x, t, offset, im);
  });
}

// Calls f with the slice kernels' policy for side s (32, 64, 128: fused_policy_for; 160:
// mixed_slice_policy).
template <typename F>
void dispatch_slice_side(int s, F&& f) {
  if (s == slice_mixed_side) {
    f(mixed_slice_policy<slice_mixed_side>{});
    return;
  }
  dispatch_fused_tile(s, [&](auto side) { f(typename fused_policy_for<decltype(side)::value>::type{}); });
}

template <typename policy, typename T>
constexpr auto forward_kernel_of() {
  if constexpr (is_mixed_tile<policy>::value) return &slice_forward_mixed_kernel<policy, T>;
  else return &slice_forward_kernel<policy, T>;
}
template <typename policy, typename T>
constexpr auto inverse_kernel_of() {
  if constexpr (is_mixed_tile<policy>::value) return &slice_inverse_mixed_kernel<policy, T>;
  else return &slice_inverse_kernel<policy, T>;
}

}  // namespace

std::vector<cf> slice_tiles3d::spectrum(const tiling3d& t, const std::vector<float>& kernel, int kd, int kh, int kw) {
  if (!supports(t))
    throw std::invalid_argument("slice_tiles3d: tiles of " + std::to_string(t.tile_d) + " x " + std::to_string(t.tile_h) +
                                " x " + std::to_string(t.tile_w) +
                                " (square slices of 32, 64, 128 or 160; a depth of 16..256 or " + fft::mixed_lengths_text() + ")");
  if (kd > t.tile_d || kh > t.tile_h || kw > t.tile_w || kernel.size() != std::size_t(kd) * kh * kw)
    throw std::invalid_argument("slice_tiles3d: the kernel does not fit the tile");
  const int T = t.tile_h, D = t.tile_d;
  const std::size_t plane = std::size_t(T) * T;
  // each kernel slice's 2D spectrum [kx][ky] in double, then the transform along D per (kx, ky);
  // both loops on the CPU pool's threads (~25 ms on one core for a 31^3 PSF in 64 x 128 x 128
  // tiles: a CLI call pays it per plan)
  const int threads = (int)std::min(16u, std::max(1u, std::thread::hardware_concurrency()));
  std::vector<fft::complex_t<double>> slices(plane * kd);
  parallel_units(threads, kd, [&](long long l) {
    const float* k = kernel.data() + std::size_t(l) * kh * kw;
    const auto s = fused_tiles::spectrum_double(T, k, kh, kw);
    std::copy(s.begin(), s.end(), slices.begin() + plane * l);
  });
  const double scale = 1.0 / (double(D) * plane);
  std::vector<cf> out(plane * D);
  constexpr std::size_t columns = 256;  // (kx, ky) columns a unit
  // along D: the host FFT for a power of two; for a mixed depth the register step of
  // fft/thread/mixed_radix.hpp in double, one thread a column (the same transform the pass
  // along D runs, its twiddles from a table in double)
  std::unique_ptr<fft::host::complex_1d_plan<double>> along_d;
  std::vector<fft::complex_t<double>> roots;
  if (fft::is_pow2(D)) {
    along_d = std::make_unique<fft::host::complex_1d_plan<double>>(D);
  } else {
    for (int e = 0; e < D; ++e) roots.push_back(fft::unit_root(e, D));
  }
  parallel_units(threads, (long long)((plane + columns - 1) / columns), [&](long long unit) {
    std::vector<fft::complex_t<double>> column(D), scratch(D);
    for (std::size_t e = std::size_t(unit) * columns; e < std::min(plane, std::size_t(unit + 1) * columns); ++e) {
      for (int l = 0; l < D; ++l) column[l] = l < kd ? slices[plane * l + e] : fft::complex_t<double>{0, 0};
      if (along_d) along_d->forward(column.data(), 1, scratch.data());
      else fft::dispatch_mixed(D, [&](auto n) { fft::host::mixed_forward_double<decltype(n)::value>(column.data(), roots); });
      for (int kz = 0; kz < D; ++kz) out[plane * kz + e] = {float(column[kz].re * scale), float(column[kz].im * scale)};
    }
  });
  return out;
}

slice_tiles3d::slice_tiles3d(const tiling3d& t, const std::vector<float>& kernel, int kd, int kh, int kw)
    : tiles_(t), kd_(kd) {
  const auto host = spectrum(t, kernel, kd, kh, kw);
  spectrum_ = device_buffer<cf>(host.size());
  upload(spectrum_.data(), host.data(), spectrum_.bytes());
  // block_fft_t's W_{2N}^e, or for a mixed side block_mixed_fft_t's W_{2M}^e then W_n^e
  slice_table_ = fft::device_column_table(t.tile_h);
  depth_table_ = fft::device_column_table(t.tile_d);
  const int sms = fft::current_device_sms();
  dispatch_depth(t.tile_d, [&](auto n) { along_d_grid_ = fft::strided_grid<decltype(n)::value>(1LL << 40, sms); });
  dispatch_slice_side(t.tile_h, [&](auto p) {
    using policy = decltype(p);
    constexpr int bytes = policy::shared_memory_bytes;
    allow_dynamic_shared(forward_kernel_of<policy, float>(), bytes);
    allow_dynamic_shared(forward_kernel_of<policy, std::uint8_t>(), bytes);
    allow_dynamic_shared(forward_kernel_of<policy, std::uint16_t>(), bytes);
    allow_dynamic_shared(inverse_kernel_of<policy, float>(), bytes);
    allow_dynamic_shared(inverse_kernel_of<policy, std::uint8_t>(), bytes);
    allow_dynamic_shared(inverse_kernel_of<policy, std::uint16_t>(), bytes);
  });
}

template <typename T>
void slice_tiles3d::run(const T* in, T* out, const tile_map3d& m, long long total, long long first_pair,
                        long long pairs, cf* work, cudaStream_t stream) const {
  if (m.tile_d != tiles_.tile_d || m.tile_h != tiles_.tile_h || m.tile_w != tiles_.tile_w || m.kd != kd_)
    throw std::invalid_argument("slice_tiles3d::run: the map's tiles are not the plan's");
  if (pairs < 1) return;
  const long long slices = pairs * tiles_.tile_d;
  if (slices >= (1LL << 31)) throw std::invalid_argument("slice_tiles3d::run: more than 2^31 - 1 slices in one launch");
  const int side = tiles_.tile_h;
  dispatch_slice_side(side, [&](auto p) {
    using policy = decltype(p);
    forward_kernel_of<policy, T>()<<<(unsigned)slices, policy::block_threads, policy::shared_memory_bytes, stream>>>(
        in, m, total, first_pair, work, slice_table_.data());
    check_launch("slice_forward_kernel");
  });
  const long long columns = pairs * side * side;
  dispatch_depth(tiles_.tile_d, [&](auto n) {
    constexpr int N = decltype(n)::value;
    using policy = fft::strided_c2c_policy<N>;
    const long long groups = (columns + policy::columns_per_block - 1) / policy::columns_per_block;
    const unsigned grid = (unsigned)std::min<long long>(groups, along_d_grid_);
    fft::launch_c2c_strided<N, false>(work, work, columns, (long long)side * side, grid, depth_table_.data(),
                                      fft::strided_multiply{spectrum_.data(), kd_ - 1}, stream);
  });
  dispatch_slice_side(side, [&](auto p) {
    using policy = decltype(p);
    inverse_kernel_of<policy, T>()<<<(unsigned)(pairs * tiles_.valid_d), policy::block_threads,
                                     policy::shared_memory_bytes, stream>>>(work, out, m, total, first_pair,
                                                                            slice_table_.data());
    check_launch("slice_inverse_kernel");
  });
}

#define GPUCONV_SLICES3D_RUN(T)                                                                              \
  template void slice_tiles3d::run<T>(const T*, T*, const tile_map3d&, long long, long long, long long, cf*, \
                                      cudaStream_t) const;
GPUCONV_SLICES3D_RUN(float)
GPUCONV_SLICES3D_RUN(std::uint8_t)
GPUCONV_SLICES3D_RUN(std::uint16_t)
#undef GPUCONV_SLICES3D_RUN

}  // namespace gpuconv::conv
