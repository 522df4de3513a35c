// fft_t<real_t, n, inverse>: an n-point complex FFT held entirely in registers.
//
// Built by type recursion as in MGPU FFT: fft_t<n> is one decimation-in-time radix step
// (fft_radix_t<n, r>) over r sub-transforms fft_t<n/r>, down to fft_t<2> and fft_t<1>.
// Every index is a compile-time constant, so the compiler's register allocator performs
// the permutation a bit reversal would otherwise do, and all twiddles are immediates.
//
//   X[k + q*(n/r)] = sum_s W_r^(s*q) * ( W_n^(s*k) * F_s[k] ),   F_s = FFT_{n/r}(x[r*i + s])
//
// Forward uses W = exp(-2*pi*i/n); inverse uses its conjugate and is unnormalised
// (inverse(forward(x)) = n * x), the cuFFT/FFTW convention.
#pragma once
#include "array.hpp"
#include "complex.hpp"
#include "static_for.hpp"
#include "twiddle.hpp"

namespace gpuconv::fft {

template <typename real_t, int n, bool inverse = false>
struct fft_t;

// The radix used when nothing else is asked for: 4 when it divides n (n > 4), else 2.
// fft_t<4> itself is a radix-2 step, so a radix-4 butterfly never refers to itself.
template <int n>
constexpr int default_radix() { return (n % 4 == 0 && n > 4) ? 4 : 2; }

template <typename real_t, int n, int radix, bool inverse = false>
struct fft_radix_t {
  static_assert(is_pow2(n) && is_pow2(radix) && radix >= 2 && radix <= 8 && n % radix == 0,
                "fft_radix_t: n and radix must be powers of two, radix in {2,4,8}, radix | n");
  using value_t = complex_t<real_t>;
  static constexpr int size = n;
  static constexpr int sub_n = n / radix;
  using sub_fft = fft_t<real_t, sub_n, inverse>;
  using butterfly = fft_t<real_t, radix, inverse>;

  HOST_DEVICE GPUCONV_INLINE array_t<value_t, n> operator()(const array_t<value_t, n>& x) const {
    array_t<array_t<value_t, sub_n>, radix> sub;
    static_for<radix>([&](auto s) {
      array_t<value_t, sub_n> xs;
      static_for<sub_n>([&](auto i) { xs[i.value] = x[radix * i.value + s.value]; });
      sub[s.value] = sub_fft{}(xs);
    });
    array_t<value_t, n> out;
    static_for<sub_n>([&](auto k) {
      array_t<value_t, radix> y;
      static_for<radix>([&](auto s) {
        y[s.value] = twiddle_mul<n, decltype(s)::value * decltype(k)::value, inverse>(sub[s.value][k.value]);
      });
      y = butterfly{}(y);
      static_for<radix>([&](auto q) { out[k.value + q.value * sub_n] = y[q.value]; });
    });
    return out;
  }
};

template <typename real_t, bool inverse>
struct fft_t<real_t, 1, inverse> {
  using value_t = complex_t<real_t>;
  static constexpr int size = 1;
  HOST_DEVICE GPUCONV_INLINE array_t<value_t, 1> operator()(const array_t<value_t, 1>& x) const { return x; }
};

template <typename real_t, bool inverse>
struct fft_t<real_t, 2, inverse> {
  using value_t = complex_t<real_t>;
  static constexpr int size = 2;
  HOST_DEVICE GPUCONV_INLINE array_t<value_t, 2> operator()(const array_t<value_t, 2>& x) const {
    return {{x[0] + x[1], x[0] - x[1]}};
  }
};

template <typename real_t, int n, bool inverse>
struct fft_t : fft_radix_t<real_t, n, default_radix<n>(), inverse> {
  static_assert(is_pow2(n), "fft_t: n must be a power of two");
};

}  // namespace gpuconv::fft
