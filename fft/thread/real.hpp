// Real-input transforms through a half-length complex FFT.
//
// R2C: n reals x -> n/2+1 complex X. With N = n/2 and z[m] = x[2m] + i*x[2m+1],
//   Z = FFT_N(z),  a = Z[k] + conj(Z[N-k]),  b = Z[k] - conj(Z[N-k])   (Z[N] = Z[0])
//   X[k] = (a - i * W_n^k * b) / 2,  k = 0..N
// (a/2 is the spectrum of the even samples, b/(2i) that of the odd ones.)
//
// C2R: n/2+1 complex X -> n reals x, unnormalised (c2r(r2c(x)) = n*x). The imaginary
// parts of X[0] and X[N] are ignored (as numpy's irfft does: a Hermitian spectrum has none).
//   a = X[k] + conj(X[N-k]),  b = X[k] - conj(X[N-k])
//   Z[k] = a + i * W_n^-k * b,  z = IFFT_N(Z),  x[2m] = Re z[m], x[2m+1] = Im z[m]
//
// The two per-element steps are free functions so that the batched kernels, which hold
// Z[k] and Z[N-k] in different threads, use exactly the same arithmetic.
#pragma once
#include "fft.hpp"

namespace gpuconv::fft {

// X[k] from Z[k], Z[N-k] and w = W_n^k.
template <typename real_t>
HOST_DEVICE GPUCONV_INLINE complex_t<real_t> r2c_post(complex_t<real_t> zk, complex_t<real_t> znk,
                                                      complex_t<real_t> w) {
  complex_t<real_t> a = zk + conj(znk), b = zk - conj(znk);
  return (a + mul_minus_i(w * b)) * real_t(0.5);
}

// Z[k] from X[k], X[N-k] and w = W_n^k (the forward root; the conjugate is applied here).
template <typename real_t>
HOST_DEVICE GPUCONV_INLINE complex_t<real_t> c2r_pre(complex_t<real_t> xk, complex_t<real_t> xnk,
                                                     complex_t<real_t> w) {
  complex_t<real_t> a = xk + conj(xnk), b = xk - conj(xnk);
  return a + mul_i(special_mul<true>(b, w));
}

template <int n, int k, typename real_t>
HOST_DEVICE GPUCONV_INLINE constexpr complex_t<real_t> unit_root_constant() {
  constexpr complex_t<double> w = unit_root(k, n);
  return {real_t(w.re), real_t(w.im)};
}

// n reals -> n/2+1 complex, in registers.
template <typename real_t, int n>
struct rfft_t {
  static_assert(is_pow2(n) && n >= 2, "rfft_t: n must be a power of two >= 2");
  using value_t = complex_t<real_t>;
  static constexpr int input_length = n;
  static constexpr int output_length = n / 2 + 1;
  static constexpr int half = n / 2;

  HOST_DEVICE GPUCONV_INLINE array_t<value_t, output_length> operator()(const array_t<real_t, n>& x) const {
    array_t<value_t, half> z;
    static_for<half>([&](auto m) { z[m.value] = {x[2 * m.value], x[2 * m.value + 1]}; });
    z = fft_t<real_t, half, false>{}(z);
    array_t<value_t, output_length> out;
    static_for<output_length>([&](auto k) {
      constexpr int kk = decltype(k)::value;
      out[kk] = r2c_post(z[kk % half], z[(half - kk) % half], unit_root_constant<n, kk, real_t>());
    });
    return out;
  }
};

// n/2+1 complex -> n reals, in registers, unnormalised.
template <typename real_t, int n>
struct irfft_t {
  static_assert(is_pow2(n) && n >= 2, "irfft_t: n must be a power of two >= 2");
  using value_t = complex_t<real_t>;
  static constexpr int input_length = n / 2 + 1;
  static constexpr int output_length = n;
  static constexpr int half = n / 2;

  HOST_DEVICE GPUCONV_INLINE array_t<real_t, n> operator()(array_t<value_t, input_length> x) const {
    x[0].im = real_t(0);
    x[half].im = real_t(0);
    array_t<value_t, half> z;
    static_for<half>([&](auto k) {
      constexpr int kk = decltype(k)::value;
      z[kk] = c2r_pre(x[kk], x[half - kk], unit_root_constant<n, kk, real_t>());
    });
    z = fft_t<real_t, half, true>{}(z);
    array_t<real_t, n> out;
    static_for<half>([&](auto m) {
      out[2 * m.value] = z[m.value].re;
      out[2 * m.value + 1] = z[m.value].im;
    });
    return out;
  }
};

}  // namespace gpuconv::fft
