// complex_t: the value type of every transform, a plain aggregate of two reals so that
// arrays of it stay in registers and load/store as float2/double2-sized units.
#pragma once
#include "config.hpp"

namespace gpuconv::fft {

template <typename real_t>
struct alignas(2 * sizeof(real_t)) complex_t {
  real_t re, im;

  HOST_DEVICE GPUCONV_INLINE constexpr complex_t operator+(complex_t b) const { return {re + b.re, im + b.im}; }
  HOST_DEVICE GPUCONV_INLINE constexpr complex_t operator-(complex_t b) const { return {re - b.re, im - b.im}; }
  HOST_DEVICE GPUCONV_INLINE constexpr complex_t operator*(complex_t b) const {
    return {re * b.re - im * b.im, re * b.im + im * b.re};
  }
  HOST_DEVICE GPUCONV_INLINE constexpr complex_t operator*(real_t s) const { return {re * s, im * s}; }
  HOST_DEVICE GPUCONV_INLINE complex_t& operator+=(complex_t b) { re += b.re; im += b.im; return *this; }
};

template <typename real_t>
HOST_DEVICE GPUCONV_INLINE constexpr complex_t<real_t> conj(complex_t<real_t> a) { return {a.re, -a.im}; }

// a * i and a * (-i): a swap and a sign, no multiply.
template <typename real_t>
HOST_DEVICE GPUCONV_INLINE constexpr complex_t<real_t> mul_i(complex_t<real_t> a) { return {-a.im, a.re}; }
template <typename real_t>
HOST_DEVICE GPUCONV_INLINE constexpr complex_t<real_t> mul_minus_i(complex_t<real_t> a) { return {a.im, -a.re}; }

// a * conj(w) when conjugate, else a * w: the inverse transform reuses the forward
// twiddle table through this multiply (pocketfft's special_mul<fwd>).
template <bool conjugate, typename real_t>
HOST_DEVICE GPUCONV_INLINE constexpr complex_t<real_t> special_mul(complex_t<real_t> a, complex_t<real_t> w) {
  if constexpr (conjugate) {
    return {a.re * w.re + a.im * w.im, a.im * w.re - a.re * w.im};
  } else {
    return a * w;
  }
}

}  // namespace gpuconv::fft
