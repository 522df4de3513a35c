// Device side of the narrow pixel types: a float result stored as float, uint8_t or uint16_t,
// rounded to nearest with ties to even (OpenCV's saturate_cast) and saturated; NaN becomes 0.
// The host twin is saturate_round in backend.hpp.
#pragma once
#include <cstdint>
#include <type_traits>

#include "../fft/thread/config.hpp"

namespace gpuconv::conv {

template <typename out_t>
__device__ GPUCONV_INLINE out_t store_pixel(float v) {
  if constexpr (std::is_same_v<out_t, float>) {
    return v;
  } else {
    constexpr int hi = std::is_same_v<out_t, std::uint8_t> ? 255 : 65535;
    const int r = __float2int_rn(v);  // ties to even; NaN gives INT_MIN, saturated to 0
    return static_cast<out_t>(r < 0 ? 0 : (r > hi ? hi : r));
  }
}

}  // namespace gpuconv::conv
