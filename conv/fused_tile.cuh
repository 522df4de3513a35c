// Kernel layer of the convolution: the single-pass fused tile kernel.
//
// One block convolves TWO overlap-save tiles at once. The kernel k is real, so convolution
// is linear over complex data with real coefficients:
//   (a + i b) (*) k = (a (*) k) + i (b (*) k),
// which lets one complex T x T FFT carry two real tiles (a in the real part, b in the
// imaginary part) with no R2C/C2R packing. Per block, all on chip:
//   load a and b (boundary rule applied here, no padded copy of the image)
//   -> row FFTs (block_fft_t over T/P threads per row) -> transpose through shared memory
//   -> column FFTs -> multiply by the kernel's full spectrum (precomputed, scaled by 1/T^2,
//      stored [kx][ky] so a column's values are contiguous) -> inverse column FFTs
//   -> transpose back -> inverse row FFTs -> write the valid outputs of a (real part) and
//      of b (imaginary part).
// The image is read once (plus the halos, mostly from L2) and the output written once.
//
// Shared memory: T lines of T + T/16 complex values (block_fft_t's padded row layout). The
// same buffer is the per-line scratch of block_fft_t and the transpose buffer; barriers
// separate every change of role.
//
// in_t/out_t: float, uint8_t or uint16_t. Narrow outputs are rounded to nearest (ties to
// even, as OpenCV's saturate_cast) and saturated, in registers.
#pragma once
#include <cstdint>
#include <type_traits>

#include "fft/block/stockham.cuh"
#include "tile_map.hpp"

namespace gpuconv::conv {

template <int tile_, int items_>
struct fused_policy {
  static_assert(fft::is_pow2(tile_) && fft::is_pow2(items_) && items_ <= tile_ && tile_ / items_ <= 32,
                "fused_policy: a line's threads must sit in one warp");
  static constexpr int tile = tile_;
  static constexpr int items_per_thread = items_;
  static constexpr int threads_per_line = tile_ / items_;
  static constexpr int block_threads = tile_ * threads_per_line;
  static constexpr int line_stride = tile_ + tile_ / 16;  // complex values per padded line
  static constexpr int shared_memory_bytes = tile_ * line_stride * 8;
};

namespace detail {

template <typename out_t>
__device__ GPUCONV_INLINE out_t convert_out(float v) {
  if constexpr (std::is_same_v<out_t, float>) {
    return v;
  } else {
    constexpr int hi = std::is_same_v<out_t, std::uint8_t> ? 255 : 65535;
    const int r = __float2int_rn(v);  // ties to even; NaN -> 0
    return static_cast<out_t>(r < 0 ? 0 : (r > hi ? hi : r));
  }
}

// Where tile g starts: its plane and the first input row/column it covers (before the
// boundary rule), and its first output row/column.
struct tile_origin {
  long long plane;
  long long out_y, out_x;  // first output pixel of the tile
  long long in_y, in_x;    // input coordinates of tile element (0, 0)
};

__device__ GPUCONV_INLINE tile_origin origin_of(const tile_map& m, long long g) {
  const long long plane = g / m.tiles_per_plane, t = g - plane * m.tiles_per_plane;
  const long long ty = t / m.tiles_x, tx = t - ty * m.tiles_x;
  const long long oy = ty * m.valid_h, ox = tx * m.valid_w;
  return {plane, oy, ox, oy + m.oy - (m.kh - 1), ox + m.ox - (m.kw - 1)};
}

// Row `u` of tile g, columns t + TL*j (j < I), as floats; 0 for a tile past the end.
template <int I, int TL, typename in_t>
__device__ GPUCONV_INLINE void load_row(const in_t* __restrict__ in, const tile_map& m, long long g, long long total,
                                        int u, int t, float (&x)[I]) {
  if (g >= total) {
#pragma unroll
    for (int j = 0; j < I; ++j) x[j] = 0.f;
    return;
  }
  const tile_origin o = origin_of(m, g);
  const int r = border_index(o.in_y + u, (int)m.height, m.border);
  const float outside = m.border == boundary::constant ? m.constant_value : 0.f;
  if (r < 0) {
#pragma unroll
    for (int j = 0; j < I; ++j) x[j] = outside;
    return;
  }
  const in_t* row = in + (o.plane * m.height + r) * m.width;
  const long long c0 = o.in_x + t;
  if (o.in_x >= 0 && o.in_x + (I - 1) * TL + TL - 1 < m.width) {  // the whole tile row is inside
#pragma unroll
    for (int j = 0; j < I; ++j) x[j] = static_cast<float>(__ldg(row + c0 + TL * j));
  } else {
#pragma unroll
    for (int j = 0; j < I; ++j) {
      const int c = border_index(c0 + TL * j, (int)m.width, m.border);
      x[j] = c < 0 ? outside : static_cast<float>(__ldg(row + c));
    }
  }
}

// Writes the valid outputs of row `u` of tile g from x[j] (columns t + TL*j).
template <int I, int TL, typename out_t>
__device__ GPUCONV_INLINE void store_row(out_t* __restrict__ out, const tile_map& m, long long g, long long total,
                                         int u, int t, const float (&x)[I]) {
  if (g >= total) return;
  const int a = u - (m.kh - 1);
  if (a < 0) return;
  const tile_origin o = origin_of(m, g);
  const long long y = o.out_y + a;
  if (y >= m.out_h) return;
  out_t* row = out + (o.plane * m.out_h + y) * m.out_w;
#pragma unroll
  for (int j = 0; j < I; ++j) {
    const int b = t + TL * j - (m.kw - 1);
    const long long xo = o.out_x + b;
    if (b >= 0 && xo < m.out_w) row[xo] = convert_out<out_t>(x[j]);
  }
}

}  // namespace detail

template <typename policy, typename in_t, typename out_t>
__global__ void __launch_bounds__(policy::block_threads)
fused_tile_kernel(const in_t* __restrict__ in, out_t* __restrict__ out, tile_map m, long long total_tiles,
                  const fft::complex_t<float>* __restrict__ spectrum, const fft::complex_t<float>* __restrict__ table) {
  using cf = fft::complex_t<float>;
  constexpr int T = policy::tile, TL = policy::threads_per_line, I = policy::items_per_thread;
  constexpr int stride = policy::line_stride;
  using forward_t = fft::block_fft_t<T, TL, false>;
  using inverse_t = fft::block_fft_t<T, TL, true>;
  extern __shared__ __align__(16) unsigned char shared_raw[];
  cf* shared = reinterpret_cast<cf*>(shared_raw);
  // element (line, col) of the transpose buffer; the same padding as block_fft_t's lines
  auto at = [&](int line, int col) -> cf& { return shared[line * stride + col + (col >> 4)]; };

  const int line = threadIdx.x / TL, t = threadIdx.x % TL;
  cf* line_shared = shared + line * stride;
  const long long pairs = (total_tiles + 1) / 2;
  for (long long pair = blockIdx.x; pair < pairs; pair += gridDim.x) {
    const long long ga = 2 * pair, gb = ga + 1;
    fft::array_t<cf, I> v;
    {
      float a[I], b[I];
      detail::load_row<I, TL>(in, m, ga, total_tiles, line, t, a);
      detail::load_row<I, TL>(in, m, gb, total_tiles, line, t, b);
      fft::static_for<I>([&](auto j) { v[j.value] = {a[j.value], b[j.value]}; });
    }
    forward_t::run(v, line_shared, t, table);  // rows: v[j] = X(line, t + TL*j)
    __syncthreads();
    fft::static_for<I>([&](auto j) { at(line, t + TL * j.value) = v[j.value]; });
    __syncthreads();
    fft::static_for<I>([&](auto j) { v[j.value] = at(t + TL * j.value, line); });  // now line = column kx
    __syncthreads();
    forward_t::run(v, line_shared, t, table);  // columns: v[j] = X(ky = t + TL*j, kx = line)
    fft::static_for<I>([&](auto j) { v[j.value] = v[j.value] * fft::load_ro(spectrum + line * T + t + TL * j.value); });
    __syncwarp();  // the forward pass's shared reads are done before the inverse writes
    inverse_t::run(v, line_shared, t, table);  // columns back
    __syncthreads();
    fft::static_for<I>([&](auto j) { at(t + TL * j.value, line) = v[j.value]; });
    __syncthreads();
    fft::static_for<I>([&](auto j) { v[j.value] = at(line, t + TL * j.value); });
    __syncthreads();
    inverse_t::run(v, line_shared, t, table);  // rows back: v[j] = y(line, t + TL*j)
    {
      float a[I], b[I];
      fft::static_for<I>([&](auto j) {
        a[j.value] = v[j.value].re;
        b[j.value] = v[j.value].im;
      });
      detail::store_row<I, TL>(out, m, ga, total_tiles, line, t, a);
      detail::store_row<I, TL>(out, m, gb, total_tiles, line, t, b);
    }
    __syncthreads();  // the line scratch is reused by the next pair
  }
}

}  // namespace gpuconv::conv
