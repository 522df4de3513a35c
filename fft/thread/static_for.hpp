// static_for<N>(f): calls f(std::integral_constant<int, I>) for I = 0..N-1, so that the
// body sees I as a constant expression (decltype(i)::value). This is how register arrays
// are indexed and twiddles selected without run-time indices.
#pragma once
#include <type_traits>
#include <utility>
#include "config.hpp"

namespace gpuconv::fft {

template <typename F, int... I>
HOST_DEVICE GPUCONV_INLINE constexpr void static_for_impl(F&& f, std::integer_sequence<int, I...>) {
  (f(std::integral_constant<int, I>{}), ...);
}

template <int N, typename F>
HOST_DEVICE GPUCONV_INLINE constexpr void static_for(F&& f) {
  static_for_impl(f, std::make_integer_sequence<int, N>{});
}

}  // namespace gpuconv::fft
