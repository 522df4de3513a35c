// Mixed-radix lengths n = R * M (R = 3 or 5, M a power of two): the thread layer's share.
//
// One Cooley-Tukey step splits the n-point transform into M transforms of R points and R of M
// points (j = j1 M + j2, k = k1 + R k2):
//   X[k1 + R k2] = sum_j2 W_M^(j2 k2) [ W_n^(j2 k1) sum_j1 W_R^(j1 k1) x[j1 M + j2] ]
// A column is spread over T threads as block_fft_t spreads an M-point row: thread t holds the
// R values j1 M + j2 of each of its Pm = M / T points j2 = t + T m, item q = j1 Pm + m (time
// order, time_index); after the forward step item q = k1 Pm + m holds X[k1 + R (t + T m)]
// (frequency order, freq_index). Here: the R-point DFTs in registers (odd_dft_t) and the
// stage around them (R-point DFTs and the W_n twiddles, in either direction); the M-point
// transforms between are the block layer's (fft/block/mixed.cuh), or fft_t in a host test.
#pragma once
#include "array.hpp"
#include "complex.hpp"
#include "static_for.hpp"
#include "twiddle.hpp"

namespace gpuconv::fft {

// The odd factor of n (1 for a power of two) and the power of two left.
constexpr int odd_part(long long n) {
  while (n > 1 && n % 2 == 0) n /= 2;
  return (int)n;
}
constexpr int pow2_part(long long n) { return (int)(n / odd_part(n)); }
// The mixed lengths the engine takes: 3 or 5 times a power of two of at least 16.
constexpr bool is_mixed_length(long long n) {
  const int r = odd_part(n);
  return (r == 3 || r == 5) && pow2_part(n) >= 16;
}

// R-point DFT held in registers (R = 3, 5), constants folded; inverse unnormalised.
template <typename real_t, int R, bool inverse = false>
struct odd_dft_t;

namespace detail {
// (a) times -i (forward) or +i (inverse)
template <bool inverse, typename real_t>
HOST_DEVICE GPUCONV_INLINE constexpr complex_t<real_t> rotate_quarter(complex_t<real_t> a) {
  if constexpr (inverse) return {-a.im, a.re};
  else return {a.im, -a.re};
}
}  // namespace detail

template <typename real_t, bool inverse>
struct odd_dft_t<real_t, 3, inverse> {
  using value_t = complex_t<real_t>;
  HOST_DEVICE GPUCONV_INLINE array_t<value_t, 3> operator()(const array_t<value_t, 3>& x) const {
    constexpr real_t half = real_t(0.5), s = real_t(0.866025403784438646763723170752936183);  // sin(2 pi / 3)
    const value_t t1 = x[1] + x[2], t2 = x[1] - x[2];
    const value_t a = {x[0].re - half * t1.re, x[0].im - half * t1.im};
    const value_t b = detail::rotate_quarter<inverse>(value_t{s * t2.re, s * t2.im});
    return {{x[0] + t1, a + b, a - b}};
  }
};

template <typename real_t, bool inverse>
struct odd_dft_t<real_t, 5, inverse> {
  using value_t = complex_t<real_t>;
  HOST_DEVICE GPUCONV_INLINE array_t<value_t, 5> operator()(const array_t<value_t, 5>& x) const {
    constexpr real_t c1 = real_t(0.309016994374947424102293417182819059);   // cos(2 pi / 5)
    constexpr real_t c2 = real_t(-0.809016994374947424102293417182819059);  // cos(4 pi / 5)
    constexpr real_t s1 = real_t(0.951056516295153572116439333379382143);   // sin(2 pi / 5)
    constexpr real_t s2 = real_t(0.587785252292473129168705954639072769);   // sin(4 pi / 5)
    const value_t t1 = x[1] + x[4], t2 = x[2] + x[3], t3 = x[1] - x[4], t4 = x[2] - x[3];
    const value_t a1 = {x[0].re + c1 * t1.re + c2 * t2.re, x[0].im + c1 * t1.im + c2 * t2.im};
    const value_t a2 = {x[0].re + c2 * t1.re + c1 * t2.re, x[0].im + c2 * t1.im + c1 * t2.im};
    const value_t b1 = detail::rotate_quarter<inverse>(value_t{s1 * t3.re + s2 * t4.re, s1 * t3.im + s2 * t4.im});
    const value_t b2 = detail::rotate_quarter<inverse>(value_t{s2 * t3.re - s1 * t4.re, s2 * t3.im - s1 * t4.im});
    return {{x[0] + t1 + t2, a1 + b1, a2 + b2, a2 - b2, a1 - b1}};
  }
};

template <int R, int M, int T>
struct mixed_layout {
  static_assert((R == 3 || R == 5) && is_pow2(M) && is_pow2(T) && T <= M, "mixed_layout: bad shape");
  static constexpr int n = R * M, Pm = M / T, items = R * Pm;
  // the element of item q of thread t: before the forward step (and after the inverse one) ...
  static HOST_DEVICE GPUCONV_INLINE constexpr int time_index(int t, int q) {
    return (q / Pm) * M + t + T * (q % Pm);
  }
  // ... and after the forward step (before the inverse one)
  static HOST_DEVICE GPUCONV_INLINE constexpr int freq_index(int t, int q) {
    return q / Pm + R * (t + T * (q % Pm));
  }

  // The forward step's first half: for each of the thread's points j2, the R-point DFT over
  // j1, then item k1 Pm + m times W_n^(j2 k1). twiddle(e) returns W_n^e (0 <= e < n).
  template <typename real_t, typename Twiddle>
  static HOST_DEVICE GPUCONV_INLINE void forward_odd(array_t<complex_t<real_t>, items>& v, int t, Twiddle twiddle) {
    static_for<Pm>([&](auto m) {
      const int j2 = t + T * m.value;
      array_t<complex_t<real_t>, R> a;
      static_for<R>([&](auto j1) { a[j1.value] = v[j1.value * Pm + m.value]; });
      a = odd_dft_t<real_t, R, false>{}(a);
      v[m.value] = a[0];
      static_for<R - 1>([&](auto i) {
        constexpr int k1 = decltype(i)::value + 1;
        v[k1 * Pm + m.value] = special_mul<false>(a[k1], twiddle(j2 * k1));
      });
    });
  }
  // The inverse step's second half (after the M-point inverse transforms): item k1 Pm + m
  // times W_n^-(j2 k1), then the inverse R-point DFT over k1; item j1 Pm + m is then element
  // j1 M + j2 (unnormalised, as the inverse transforms here all are).
  template <typename real_t, typename Twiddle>
  static HOST_DEVICE GPUCONV_INLINE void inverse_odd(array_t<complex_t<real_t>, items>& v, int t, Twiddle twiddle) {
    static_for<Pm>([&](auto m) {
      const int j2 = t + T * m.value;
      array_t<complex_t<real_t>, R> a;
      a[0] = v[m.value];
      static_for<R - 1>([&](auto i) {
        constexpr int k1 = decltype(i)::value + 1;
        a[k1] = special_mul<true>(v[k1 * Pm + m.value], twiddle(j2 * k1));
      });
      a = odd_dft_t<real_t, R, true>{}(a);
      static_for<R>([&](auto j1) { v[j1.value * Pm + m.value] = a[j1.value]; });
    });
  }
};

}  // namespace gpuconv::fft
