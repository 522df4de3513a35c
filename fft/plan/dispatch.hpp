// Maps a run-time length (a power of two, or one of the mixed lengths) onto the compile-time
// instantiations.
#pragma once
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

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

// The mixed lengths (3 or 5 times a power of two, fft/thread/mixed_radix.hpp) the strided
// pass is compiled for (strided_c2c_plan, the 3D slice path's tile depths).
constexpr int mixed_lengths[] = {48, 80, 96, 160, 192, 320};
constexpr bool is_compiled_mixed_length(int n) {
  for (int m : mixed_lengths)
    if (m == n) return true;
  return false;
}

// mixed_lengths as a message says them: "48, 80, 96, 160, 192, 320".
inline std::string mixed_lengths_text() {
  std::string text;
  for (int m : mixed_lengths) text += (text.empty() ? "" : ", ") + std::to_string(m);
  return text;
}

namespace detail {
template <typename F, std::size_t... i>
bool dispatch_mixed_at(int n, F& f, std::index_sequence<i...>) {
  return ((n == mixed_lengths[i] ? (f(std::integral_constant<int, mixed_lengths[i]>{}), true) : false) || ...);
}
}  // namespace detail

// Calls f(std::integral_constant<int, n>) for n in mixed_lengths.
template <typename F>
void dispatch_mixed(int n, F&& f) {
  constexpr std::size_t count = sizeof(mixed_lengths) / sizeof(mixed_lengths[0]);
  if (!detail::dispatch_mixed_at(n, f, std::make_index_sequence<count>{}))
    throw std::invalid_argument("unsupported mixed transform length " + std::to_string(n));
}

// Powers of two from lo, or the mixed lengths.
template <int lo, typename F>
void dispatch_strided(int n, F&& f) {
  if (n > 0 && (n & (n - 1)) == 0) dispatch_pow2<lo>(n, f);
  else dispatch_mixed(n, f);
}

}  // namespace gpuconv::fft
