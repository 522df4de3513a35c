// Maps a run-time power-of-two length onto the compile-time instantiations.
#pragma once
#include <stdexcept>
#include <string>
#include <type_traits>

namespace gpuconv::fft {

// Calls f(std::integral_constant<int, n>) for n in {lo, 2lo, ..., 4096}.
template <int lo, typename F>
void dispatch_pow2(int n, F&& f) {
  switch (n) {
#define GPUCONV_CASE(v) \
  case v:               \
    if constexpr (v >= lo) { f(std::integral_constant<int, v>{}); return; } break;
    GPUCONV_CASE(2) GPUCONV_CASE(4) GPUCONV_CASE(8) GPUCONV_CASE(16) GPUCONV_CASE(32) GPUCONV_CASE(64)
    GPUCONV_CASE(128) GPUCONV_CASE(256) GPUCONV_CASE(512) GPUCONV_CASE(1024) GPUCONV_CASE(2048) GPUCONV_CASE(4096)
#undef GPUCONV_CASE
    default: break;
  }
  throw std::invalid_argument("unsupported transform length " + std::to_string(n));
}

}  // namespace gpuconv::fft
