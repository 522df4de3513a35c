// tile_kernels.hpp's loops for one instruction set (GPUCONV_HOST_ISA names it; CMake builds
// this file once per ISA with the matching -march). Everything here that the compiler
// could emit as a shared (COMDAT) symbol has internal linkage: the SIMD type lives in an
// anonymous namespace, so fft_t<simd_t, R> and its helpers are private to this object and
// AVX-512 code can never be picked by the linker for a caller built for another ISA.
#include "tile_kernels.hpp"

#include <type_traits>

#include "../thread/fft.hpp"
#include "../thread/real.hpp"

#ifndef GPUCONV_HOST_ISA
#define GPUCONV_HOST_ISA isa_base
#endif
#define GPUCONV_STR2(x) #x
#define GPUCONV_STR(x) GPUCONV_STR2(x)

// 64-byte vectors are passed only between functions inlined into one another
#pragma GCC diagnostic ignored "-Wpsabi"

namespace gpuconv::fft::host::GPUCONV_HOST_ISA {

namespace {

constexpr int width = 16;
typedef float v16 __attribute__((vector_size(64)));
typedef float v16_unaligned __attribute__((vector_size(64), aligned(4)));

// 16 floats as the fft_t scalar: the arithmetic fft_t, complex_t and the twiddles use.
struct simd_t {
  v16 v;
  simd_t() = default;
  constexpr simd_t(v16 x) : v(x) {}
  template <typename S, typename = std::enable_if_t<std::is_arithmetic_v<S>>>  // a broadcast
  constexpr simd_t(S s) : simd_t(v16{} + float(s)) {}
  friend GPUCONV_INLINE simd_t operator+(simd_t a, simd_t b) { return a.v + b.v; }
  friend GPUCONV_INLINE simd_t operator-(simd_t a, simd_t b) { return a.v - b.v; }
  friend GPUCONV_INLINE simd_t operator*(simd_t a, simd_t b) { return a.v * b.v; }
  GPUCONV_INLINE simd_t operator-() const { return -v; }
  GPUCONV_INLINE simd_t& operator+=(simd_t b) { v += b.v; return *this; }
};
using cv = complex_t<simd_t>;

GPUCONV_INLINE simd_t load(const float* p) { return simd_t(*reinterpret_cast<const v16_unaligned*>(p)); }
GPUCONV_INLINE void store(float* p, simd_t v) { *reinterpret_cast<v16_unaligned*>(p) = v.v; }
GPUCONV_INLINE cv load(const float* re, const float* im, long long i) { return {load(re + i), load(im + i)}; }
GPUCONV_INLINE void store(float* re, float* im, long long i, cv v) {
  store(re + i, v.re);
  store(im + i, v.im);
}

// One Stockham pass (real_1d_host.cpp's radix_pass) with every row a vector of lanes.
template <int R, bool inverse>
void radix_pass(const float* s_re, const float* s_im, float* d_re, float* d_im, int N, int Ns, int lanes,
                const float* t_re, const float* t_im) {
  const int butterflies = N / R, step = 2 * N / (Ns * R);
  for (int b = 0; b < butterflies; ++b) {
    const int j = b & (Ns - 1);
    array_t<cv, R> w;
    static_for<R>([&](auto r) { w[r.value] = {simd_t(t_re[j * r.value * step]), simd_t(t_im[j * r.value * step])}; });
    const long long out0 = (long long)((b - j) * R + j) * lanes;
    for (int c = 0; c < lanes; c += width) {
      array_t<cv, R> y;
      static_for<R>([&](auto r) {
        y[r.value] = load(s_re, s_im, (long long)(b + r.value * butterflies) * lanes + c);
        if constexpr (r.value > 0) y[r.value] = special_mul<inverse>(y[r.value], w[r.value]);
      });
      y = fft_t<simd_t, R, inverse>{}(y);
      static_for<R>([&](auto r) { store(d_re, d_im, out0 + (long long)r.value * Ns * lanes + c, y[r.value]); });
    }
  }
}

template <bool inverse>
void passes_impl(float* re, float* im, float* s_re, float* s_im, int n, int lanes, const float* t_re,
                 const float* t_im) {
  float *src_re = re, *src_im = im, *dst_re = s_re, *dst_im = s_im;
  for (int Ns = 1; Ns < n;) {
    const int R = n / Ns >= 8 ? 8 : n / Ns;
    switch (R) {
      case 2: radix_pass<2, inverse>(src_re, src_im, dst_re, dst_im, n, Ns, lanes, t_re, t_im); break;
      case 4: radix_pass<4, inverse>(src_re, src_im, dst_re, dst_im, n, Ns, lanes, t_re, t_im); break;
      default: radix_pass<8, inverse>(src_re, src_im, dst_re, dst_im, n, Ns, lanes, t_re, t_im); break;
    }
    float* t = src_re; src_re = dst_re; dst_re = t;
    t = src_im; src_im = dst_im; dst_im = t;
    Ns *= R;
  }
  if (src_re != re)
    for (long long i = 0; i < (long long)n * lanes; ++i) re[i] = src_re[i], im[i] = src_im[i];
}

void passes(float* re, float* im, float* s_re, float* s_im, int n, int lanes, const float* t_re, const float* t_im,
            bool inverse) {
  if (inverse) passes_impl<true>(re, im, s_re, s_im, n, lanes, t_re, t_im);
  else passes_impl<false>(re, im, s_re, s_im, n, lanes, t_re, t_im);
}

void r2c_post_rows(const float* z_re, const float* z_im, float* x_re, float* x_im, int half, int lanes,
                   const float* t_re, const float* t_im) {
  for (int k = 0; k <= half; ++k) {
    const long long a = (long long)(k % half) * lanes, b = (long long)((half - k) % half) * lanes;
    const cv w{simd_t(t_re[k]), simd_t(t_im[k])};
    for (int c = 0; c < lanes; c += width)
      store(x_re, x_im, (long long)k * lanes + c, r2c_post(load(z_re, z_im, a + c), load(z_re, z_im, b + c), w));
  }
}

void c2r_pre_rows(const float* x_re, const float* x_im, float* z_re, float* z_im, int half, int lanes,
                  const float* t_re, const float* t_im) {
  for (int k = 0; k < half; ++k) {
    const cv w{simd_t(t_re[k]), simd_t(t_im[k])};
    for (int c = 0; c < lanes; c += width) {
      cv xk = load(x_re, x_im, (long long)k * lanes + c), xnk = load(x_re, x_im, (long long)(half - k) * lanes + c);
      if (k == 0) xk.im = xnk.im = simd_t(0.f);  // Im X[0] and Im X[half] are ignored
      store(z_re, z_im, (long long)k * lanes + c, c2r_pre(xk, xnk, w));
    }
  }
}

void multiply(float* a_re, float* a_im, const float* b_re, const float* b_im, long long count) {
  for (long long i = 0; i < count; i += width) store(a_re, a_im, i, load(a_re, a_im, i) * load(b_re, b_im, i));
}

}  // namespace

extern const tile_kernels kernels{GPUCONV_STR(GPUCONV_HOST_ISA), passes, r2c_post_rows, c2r_pre_rows, multiply};

}  // namespace gpuconv::fft::host::GPUCONV_HOST_ISA
