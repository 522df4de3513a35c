// array_t<T, n>: a fixed-size array meant to live in registers. Only ever index it with
// compile-time constants (fully unrolled loops); a run-time index sends it to local memory.
#pragma once
#include "config.hpp"

namespace gpuconv::fft {

template <typename T, int n>
struct array_t {
  static_assert(n > 0, "array_t needs at least one element");
  static constexpr int size = n;
  T data[n];

  HOST_DEVICE GPUCONV_INLINE constexpr T& operator[](int i) { return data[i]; }
  HOST_DEVICE GPUCONV_INLINE constexpr const T& operator[](int i) const { return data[i]; }
};

}  // namespace gpuconv::fft
