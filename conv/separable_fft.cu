// The separable method's FFT passes (separable_fft.hpp).
#include "separable_fft.hpp"

#include <atomic>
#include <cstdint>
#include <cmath>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "../fft/block/stockham.cuh"
#include "../fft/device/cuda_check.hpp"
#include "../fft/device/shared_limit.hpp"
#include "../fft/host/real_1d_host.hpp"
#include "../fft/plan/device_table.hpp"
#include "pixel.cuh"

namespace gpuconv::conv {

namespace {

using cf = fft::complex_t<float>;

// force_line_fft's mode; GPUCONV_LINE_FFT (-1, 0, 1) sets it at start-up (measurements)
std::atomic<int> forced_mode{[] {
  const char* v = std::getenv("GPUCONV_LINE_FFT");
  const int mode = v ? std::atoi(v) : 0;
  return mode >= -1 && mode <= 1 ? mode : 0;
}()};

// N points a line, V values a thread, 256 threads a block: `lines` lines a block, each line's
// block_fft_t exchanging through its own `row_stride` complex values of shared memory.
template <int Np, int V>
struct line_policy {
  static constexpr int N = Np;
  static constexpr int per_thread = V;
  static constexpr int threads = 256;
  static constexpr int T = N / per_thread;  // threads a line
  static constexpr int lines = threads / T;
  static constexpr int row_stride = N + N / 16;  // block_fft_t::row_shared_elems
  // blocks an SM the register cap allows (__launch_bounds__): with 16 values a thread three (85
  // registers) for 256 points, two (128) for longer lines, whose values then spill (H100, 4096^2,
  // both passes: K = 63 on 256-point lines 0.230 ms with three, 0.269 with two; K = 161 on
  // 1024-point lines 0.305 ms with two, 0.363 with three); with 8 values three (80, no spill)
  static constexpr int min_blocks = V == 8 || N == 256 ? 3 : 2;
  // the column pass's staging: N rows x (2 lines) columns, 2 floats of padding a row (a line's
  // float2 reads down a column hit distinct banks)
  static constexpr int columns = 2 * lines;
  static constexpr int stage_stride = columns + 2;
  static constexpr std::size_t fft_bytes = std::size_t(lines) * row_stride * sizeof(cf);
  static constexpr std::size_t stage_bytes = std::size_t(N) * stage_stride * sizeof(float);
  static constexpr std::size_t column_bytes = fft_bytes > stage_bytes ? fft_bytes : stage_bytes;
  using forward = fft::block_fft_t<N, T, false>;
  using inverse = fft::block_fft_t<N, T, true>;
  using values = fft::array_t<cf, V>;
};

// the policy each line length runs: 8 values a thread for 512 points, 16 for 256 and 1024 (H100,
// both passes: 512-point lines 0.255 ms at 4096^2 K = 127 with 8, 0.283 with 16; 1024-point 0.334
// against 0.302 at K = 161; 256-point mixed, 0.222 / 0.231 at 4096^2 K = 63, 0.340 / 0.306 on
// 1024 x 64^2 K = 127; 8 values in blocks of 512 threads, two an SM, spilled and lost to both)
template <int N>
using line_policy_for = line_policy<N, N == 512 ? 8 : 16>;

// v (the line's values t + T m) times the spectrum, back to the line's circular convolution
template <typename P>
__device__ GPUCONV_INLINE void convolve_line(typename P::values& v, cf* row_shared, int t, const cf* spectrum,
                                             const cf* table) {
  constexpr int V = P::per_thread;
  P::forward::run(v, row_shared, t, table);
  fft::static_for<V>([&](auto j) { v[j.value] = v[j.value] * fft::load_ro(spectrum + t + P::T * j.value); });
  P::forward::sync();  // the forward passes' shared reads are done before the inverse writes
  P::inverse::run(v, row_shared, t, table);
}

// Row pass: line l of the launch = (plane, rows 2 p and 2 p + 1 of the intermediate, segment).
template <typename P, typename in_t>
__global__ void __launch_bounds__(P::threads, P::min_blocks)
    fft_rows_kernel(const in_t* __restrict__ in, float* __restrict__ tmp, const window_map m, const int kw,
                    const long long segments, const long long pairs, const cf* __restrict__ spectrum,
                    const cf* __restrict__ table) {
  constexpr int N = P::N, V = P::per_thread;
  extern __shared__ __align__(16) unsigned char shared_raw[];
  cf* shared = reinterpret_cast<cf*>(shared_raw);
  const int l = threadIdx.x / P::T, t = threadIdx.x % P::T;
  const long long total = m.planes * pairs * segments;
  long long line = (long long)blockIdx.x * P::lines + l;
  const bool live = line < total;
  if (!live) line = total - 1;  // computes a live line's values again (every thread takes the barriers)
  const long long seg = line % segments, pair = (line / segments) % pairs, plane = line / (segments * pairs);
  const int valid = N - kw + 1;
  const long long x0 = seg * valid, first = x0 + m.ox - (kw - 1);
  const long long qa = 2 * pair, qb = qa + 1;
  const bool has_b = qb < m.out_h;
  const int height = int(m.height), width = int(m.width);
  const int ra = border_index(qa + m.oy, height, m.border), rb = has_b ? border_index(qb + m.oy, height, m.border) : -1;
  const float outside = m.border == boundary::zero ? 0.f : m.constant_value;
  const in_t* row_a = in + (plane * m.height + (ra < 0 ? 0 : ra)) * m.width;
  const in_t* row_b = in + (plane * m.height + (rb < 0 ? 0 : rb)) * m.width;
  typename P::values v;
  // Every sample's load is issued before any is used: the loads read an address inside the image
  // whatever the boundary (the row's first column for a sample outside it), and which samples take
  // the boundary's constant is kept as bits. (Loaded and converted one by one, the uint8 kernel
  // waited on its loads: ncu, H100, 4096^2 rank-1 K = 101, 512-point lines: 6.9 of 14.3 cycles an
  // instruction on L1TEX's scoreboard, 148 us against fp32's 100; so: uint8 90 us, fp32 97. A
  // cheaper conversion alone, the exponent trick, left it at 148.)
  static_assert(2 * V <= 32, "fft_rows_kernel: a bit a sample");
  in_t raw_a[V], raw_b[V];
  unsigned outside_bits = 0;  // bit j: row a's sample j is outside the image; bit V + j: row b's
  fft::static_for<V>([&](auto j) {
    const long long x = first + t + P::T * j.value;
    const int c = x >= 0 && x < width ? int(x) : border_index(x, width, m.border);
    outside_bits |= (ra < 0 || c < 0 ? 1u : 0u) << j.value;
    outside_bits |= (rb < 0 || c < 0 ? 1u : 0u) << (V + j.value);
    raw_a[j.value] = row_a[c < 0 ? 0 : c];
    raw_b[j.value] = row_b[c < 0 ? 0 : c];
  });
  fft::static_for<V>([&](auto j) {
    v[j.value].re = outside_bits >> j.value & 1u ? outside : pixel_value(raw_a[j.value]);
    v[j.value].im = !has_b ? 0.f : outside_bits >> (V + j.value) & 1u ? outside : pixel_value(raw_b[j.value]);
  });
  convolve_line<P>(v, shared + l * P::row_stride, t, spectrum, table);
  if (!live) return;
  float* out_a = tmp + (plane * m.out_h + qa) * m.out_w;
  fft::static_for<V>([&](auto j) {
    const int u = t + P::T * j.value;
    const long long x = x0 + u - (kw - 1);
    if (u >= kw - 1 && x < m.out_w) {
      out_a[x] = v[j.value].re;
      if (has_b) out_a[m.out_w + x] = v[j.value].im;
    }
  });
}

// Column pass: block b = (plane, segment, strip of 2 * lines columns), strips fastest (neighbouring
// blocks write neighbouring columns of the same rows); the block stages the segment's N rows of
// its columns, each line takes two columns. Where the rows are a multiple of 4 pixels wide the
// staging loads 4 floats a thread, and narrow pixels are stored 4 at a time (packed); float
// results are stored one a thread. H100, 4096^2 rank-1 K = 101 (512-point lines, 8-column
// strips), ncu, one machine start: the column kernel 138 -> 126 us (fp32), 134 -> 119 us (uint8);
// 4-float stores made fp32's 167 us (sixteen rows a warp's store instead of four).
template <typename P, typename out_t>
__global__ void __launch_bounds__(P::threads, P::min_blocks)
    fft_columns_kernel(const float* __restrict__ tmp, out_t* __restrict__ out, const window_map m, const int kh,
                       const long long segments, const long long strips, const cf* __restrict__ spectrum,
                       const cf* __restrict__ table) {
  constexpr int N = P::N, V = P::per_thread;
  constexpr int C = P::columns, S = P::stage_stride;
  extern __shared__ __align__(16) unsigned char shared_raw[];
  float* stage = reinterpret_cast<float*>(shared_raw);
  cf* shared = reinterpret_cast<cf*>(shared_raw);  // the lines' exchanges, over the staging
  const long long b = blockIdx.x;
  const long long strip = b % strips, seg = (b / strips) % segments, plane = b / (segments * strips);
  const int valid = N - kh + 1;
  const long long y0 = seg * valid, x0 = strip * C;
  const float* src = tmp + plane * m.height * m.width;
  static_assert(C % 4 == 0, "fft_columns_kernel: strips of 4-pixel groups");
  if (m.width % 4 == 0) {  // (x0 + c is then a multiple of 4 and x < width means x + 3 < width)
    for (int i = threadIdx.x; i < N * (C / 4); i += P::threads) {
      const int r = i / (C / 4), c = 4 * (i % (C / 4));
      const long long y = y0 + r, x = x0 + c;
      float4 q = make_float4(0.f, 0.f, 0.f, 0.f);
      if (y < m.height && x < m.width) q = *reinterpret_cast<const float4*>(src + y * m.width + x);
      *reinterpret_cast<float2*>(stage + r * S + c) = make_float2(q.x, q.y);
      *reinterpret_cast<float2*>(stage + r * S + c + 2) = make_float2(q.z, q.w);
    }
  } else {
    for (int i = threadIdx.x; i < N * C; i += P::threads) {
      const int r = i / C, c = i % C;
      const long long y = y0 + r, x = x0 + c;
      stage[r * S + c] = y < m.height && x < m.width ? src[y * m.width + x] : 0.f;
    }
  }
  __syncthreads();
  const int l = threadIdx.x / P::T, t = threadIdx.x % P::T;
  typename P::values v;
  fft::static_for<V>([&](auto j) {
    const float2 q = *reinterpret_cast<const float2*>(stage + (t + P::T * j.value) * S + 2 * l);
    v[j.value] = {q.x, q.y};
  });
  __syncthreads();  // the staging is read before the lines' exchanges overwrite it
  convolve_line<P>(v, shared + l * P::row_stride, t, spectrum, table);
  __syncthreads();  // every line's exchanges are done before the staging is written again
  fft::static_for<V>([&](auto j) {
    *reinterpret_cast<float2*>(stage + (t + P::T * j.value) * S + 2 * l) = make_float2(v[j.value].re, v[j.value].im);
  });
  __syncthreads();
  out_t* dst = out + (plane * m.out_step + m.out_offset) * m.out_h * m.out_w;
  constexpr bool narrow = !std::is_same_v<out_t, float>;
  if (narrow && m.out_w % 4 == 0 && reinterpret_cast<std::uintptr_t>(dst) % (4 * sizeof(out_t)) == 0) {
    for (int i = (kh - 1) * (C / 4) + threadIdx.x; i < N * (C / 4); i += P::threads) {
      const int r = i / (C / 4), c = 4 * (i % (C / 4));
      const long long y = y0 + r - (kh - 1), x = x0 + c;
      if (y < m.out_h && x < m.out_w) {
        const float2 a = *reinterpret_cast<const float2*>(stage + r * S + c);
        const float2 q = *reinterpret_cast<const float2*>(stage + r * S + c + 2);
        const float w[4] = {a.x, a.y, q.x, q.y};
        store4(dst + y * m.out_w + x, w);
      }
    }
  } else {
    for (int i = (kh - 1) * C + threadIdx.x; i < N * C; i += P::threads) {
      const int r = i / C, c = i % C;
      const long long y = y0 + r - (kh - 1), x = x0 + c;
      if (y < m.out_h && x < m.out_w) dst[y * m.out_w + x] = store_pixel<out_t>(stage[r * S + c]);
    }
  }
}

long long ceil_div(long long a, long long b) { return (a + b - 1) / b; }

template <typename P, typename in_t>
void launch_rows(const in_t* in, float* tmp, const window_map& m, int kw, const cf* spectrum, const cf* table,
                 cudaStream_t stream) {
  constexpr int N = P::N;
  const long long segments = ceil_div(m.out_w, N - kw + 1), pairs = ceil_div(m.out_h, 2);
  const long long blocks = ceil_div(m.planes * pairs * segments, P::lines);
  if (blocks < 1) return;
  if (blocks >= (1LL << 31)) throw std::invalid_argument("line_fft_passes: " + std::to_string(blocks) + " blocks");
  allow_dynamic_shared(&fft_rows_kernel<P, in_t>, P::fft_bytes);
  fft_rows_kernel<P, in_t><<<(unsigned)blocks, P::threads, P::fft_bytes, stream>>>(in, tmp, m, kw, segments, pairs,
                                                                                  spectrum, table);
  check_launch("fft_rows_kernel");
}

template <typename P, typename out_t>
void launch_columns(const float* tmp, out_t* out, const window_map& m, int kh, const cf* spectrum, const cf* table,
                    cudaStream_t stream) {
  constexpr int N = P::N;
  const long long segments = ceil_div(m.out_h, N - kh + 1), strips = ceil_div(m.out_w, P::columns);
  const long long blocks = m.planes * strips * segments;
  if (blocks < 1) return;
  if (blocks >= (1LL << 31)) throw std::invalid_argument("line_fft_passes: " + std::to_string(blocks) + " blocks");
  allow_dynamic_shared(&fft_columns_kernel<P, out_t>, P::column_bytes);
  fft_columns_kernel<P, out_t><<<(unsigned)blocks, P::threads, P::column_bytes, stream>>>(
      tmp, out, m, kh, segments, strips, spectrum, table);
  check_launch("fft_columns_kernel");
}

}  // namespace

void force_line_fft(int mode) {
  if (mode < -1 || mode > 1) throw std::invalid_argument("force_line_fft: " + std::to_string(mode) + " (-1, 0 or 1)");
  forced_mode = mode;
}

int forced_line_fft() { return forced_mode; }

namespace {

// the transforms' flops an output of a line of `extent` outputs: two N-point complex FFTs and
// the product for two lines' segments, ceil(extent / (N - taps + 1)) segments a line
double flops_per_output(int n, int taps, long long extent) {
  const long long e = std::max(extent, 1LL);
  return double(ceil_div(e, n - taps + 1)) * (10.0 * n * std::log2(double(n)) + 6.0 * n) / (2.0 * double(e));
}

// ps a flop of flops_per_output, fitted on the H100 to the kernels of session 79 (fp32; 4096^2,
// 3 x 3000 x 4000 and 64 x 256^2, K = 15..255, lines of 256, 512 and 1024 points: 0.095-0.127,
// median 0.111; uint8 0.080-0.113, median 0.099, priced as fp32 as every method is)
constexpr double ps_per_flop = 0.111;

}  // namespace

int line_fft_passes::line_for(int taps, long long extent) {
  if (taps < 1 || taps > max_taps) return 0;
  int best = 0;
  double best_ps = 0;
  for (int n : {256, 512, 1024}) {
    if (n - taps + 1 < n / 4) continue;
    const double ps = ps_per_flop * flops_per_output(n, taps, extent);
    if (best == 0 || ps < best_ps) best = n, best_ps = ps;
  }
  return best;
}

double line_fft_passes::pass_ps_per_pixel(int taps, long long extent) {
  const int n = line_for(taps, extent);
  // lines shorter than 128 outputs (one segment, mostly padding): 0.69-0.87x the price on 64^2
  // and 100^2 images (H100, K = 15..255), the transforms' flops without their share of bytes
  const double short_lines = extent < 128 ? 0.8 : 1.0;
  return n == 0 ? INFINITY : ps_per_flop * flops_per_output(n, taps, extent) * short_lines;
}

line_fft_passes::pass line_fft_passes::make_pass(const float* factors, int count, int taps, long long extent) {
  pass p;
  p.n = line_for(taps, extent);
  p.taps = taps;
  if (p.n == 0) throw std::invalid_argument("line_fft_passes: a factor of " + std::to_string(taps) + " taps");
  const int n = p.n;
  // the factors' spectra / n: the host engine's double transform of each zero-padded factor
  std::vector<fft::complex_t<double>> lines(std::size_t(count) * n, {0.0, 0.0});
  for (int k = 0; k < count; ++k)
    for (int j = 0; j < taps; ++j) lines[std::size_t(k) * n + j].re = factors[std::size_t(k) * taps + j];
  std::vector<fft::complex_t<double>> scratch(n);
  fft::host::complex_1d_plan<double>(n).forward(lines.data(), count, scratch.data());
  std::vector<cf> spectra(lines.size());
  for (std::size_t i = 0; i < lines.size(); ++i) spectra[i] = {float(lines[i].re / n), float(lines[i].im / n)};
  p.spectra = device_buffer<cf>(spectra.size());
  upload(p.spectra.data(), spectra.data(), p.spectra.bytes());
  p.table = fft::device_twiddle_table(2 * n);  // block_fft_t's W_{2N}^e
  return p;
}

line_fft_passes::line_fft_passes(const rank1_factors& f, int count, int kh, int kw, long long out_h, long long out_w)
    : rows_(make_pass(f.row.data(), count, kw, out_w)), columns_(make_pass(f.column.data(), count, kh, out_h)) {}

namespace {

// f(std::integral_constant<int, n>) for the line lengths the kernels are built for
template <typename F>
void with_line_length(int n, F&& f) {
  switch (n) {
    case 256: return f(std::integral_constant<int, 256>{});
    case 512: return f(std::integral_constant<int, 512>{});
    default: return f(std::integral_constant<int, 1024>{});
  }
}

}  // namespace

template <typename T>
void line_fft_passes::rows(const T* in, float* tmp, const window_map& m, int k, cudaStream_t stream) const {
  with_line_length(rows_.n, [&](auto n) {
    launch_rows<line_policy_for<decltype(n)::value>>(in, tmp, m, rows_.taps, rows_.spectra.data() + std::size_t(k) * n,
                                                      rows_.table.data(), stream);
  });
}

template <typename T>
void line_fft_passes::columns(const float* tmp, T* out, const window_map& m, int k, cudaStream_t stream) const {
  with_line_length(columns_.n, [&](auto n) {
    launch_columns<line_policy_for<decltype(n)::value>>(tmp, out, m, columns_.taps,
                                                         columns_.spectra.data() + std::size_t(k) * n,
                                                         columns_.table.data(), stream);
  });
}

#define GPUCONV_LINE_FFT(T)                                                                                   \
  template void line_fft_passes::rows<T>(const T*, float*, const window_map&, int, cudaStream_t) const;     \
  template void line_fft_passes::columns<T>(const float*, T*, const window_map&, int, cudaStream_t) const;
GPUCONV_LINE_FFT(float)
GPUCONV_LINE_FFT(std::uint8_t)
GPUCONV_LINE_FFT(std::uint16_t)
#undef GPUCONV_LINE_FFT

}  // namespace gpuconv::conv
