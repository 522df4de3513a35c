// Twiddle factors W_n^k = exp(-2*pi*i*k/n).
//
// Register FFTs use them as compile-time constants: unit_root<double>(k, n) is a constexpr
// evaluation in double (exact quadrant reduction on integers, then a Taylor series on
// [0, pi/4]), so the values land in the instructions as immediates. twiddle_mul<n, k>
// special-cases the trivial angles at the type level: multiples of a quarter turn cost
// no multiply, odd multiples of an eighth cost two.
// Plans build their run-time tables from the same function, in double.
#pragma once
#include "complex.hpp"

namespace gpuconv::fft {

namespace detail {

constexpr double pi = 3.141592653589793238462643383279502884;

// sin and cos of x for 0 <= x <= pi/4; 14 Taylor terms reach below 1e-17 there.
struct sin_cos_t { double s, c; };
constexpr sin_cos_t sin_cos_small(double x) {
  double x2 = x * x, term_s = x, term_c = 1.0, s = x, c = 1.0;
  for (int i = 1; i < 14; ++i) {
    term_s *= -x2 / double((2 * i) * (2 * i + 1));
    term_c *= -x2 / double((2 * i - 1) * (2 * i));
    s += term_s;
    c += term_c;
  }
  return {s, c};
}

}  // namespace detail

// exp(-2*pi*i*k/n) in double, for any integer k (negative too) and n > 0.
constexpr complex_t<double> unit_root(long long k, long long n) {
  long long r = k % n;
  if (r < 0) r += n;
  // angle = 2*pi*r/n = (pi/2) * (quadrant + rem/n)
  long long quadrant = (4 * r) / n;
  long long rem = 4 * r - quadrant * n;  // in [0, n)
  double c = 0, s = 0;
  if (2 * rem <= n) {
    auto v = detail::sin_cos_small(detail::pi / 2 * double(rem) / double(n));
    c = v.c; s = v.s;
  } else {
    auto v = detail::sin_cos_small(detail::pi / 2 * double(n - rem) / double(n));
    c = v.s; s = v.c;
  }
  double cos_a = 0, sin_a = 0;  // of the full angle
  switch (quadrant) {
    case 0: cos_a = c;  sin_a = s;  break;
    case 1: cos_a = -s; sin_a = c;  break;
    case 2: cos_a = -c; sin_a = -s; break;
    default: cos_a = s; sin_a = -c; break;
  }
  return {cos_a, -sin_a};
}

// a * W_n^k (forward) or a * W_n^-k (inverse), with n and k known at compile time.
template <int n, int k, bool inverse, typename real_t>
HOST_DEVICE GPUCONV_INLINE constexpr complex_t<real_t> twiddle_mul(complex_t<real_t> a) {
  constexpr int r = ((k % n) + n) % n;
  constexpr int eighths = (8 * r) % n == 0 ? (8 * r) / n : -1;  // angle in eighths of a turn
  // forward W rotates clockwise; the inverse uses the conjugate, i.e. eighths mirrored
  constexpr int e = eighths < 0 ? -1 : (inverse ? (8 - eighths) % 8 : eighths);
  if constexpr (e == 0) {
    return a;
  } else if constexpr (e == 2) {
    return mul_minus_i(a);  // W = -i
  } else if constexpr (e == 4) {
    return {-a.re, -a.im};
  } else if constexpr (e == 6) {
    return mul_i(a);  // W = +i
  } else if constexpr (e > 0) {
    // W = (cs + i*ss)/sqrt(2) with cs, ss in {+1, -1}
    constexpr real_t h = real_t(0.70710678118654752440084436210484903928);
    constexpr real_t cs = (e == 1 || e == 7) ? real_t(1) : real_t(-1);
    constexpr real_t ss = (e == 1 || e == 3) ? real_t(-1) : real_t(1);
    return {h * (cs * a.re - ss * a.im), h * (ss * a.re + cs * a.im)};
  } else {
    constexpr complex_t<double> w = unit_root(inverse ? -r : r, n);
    return a * complex_t<real_t>{real_t(w.re), real_t(w.im)};
  }
}

}  // namespace gpuconv::fft
