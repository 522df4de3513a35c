// Small device-side memory helpers shared by the kernels.
#pragma once
#include <cstdint>

#include "../thread/complex.hpp"

namespace gpuconv::fft {

// Read-only (texture-path) load of one complex value as a single 8-byte access.
__device__ GPUCONV_INLINE complex_t<float> load_ro(const complex_t<float>* p) {
  float2 v = __ldg(reinterpret_cast<const float2*>(p));
  return {v.x, v.y};
}

__device__ GPUCONV_INLINE bool aligned16(const void* p) {
  return (reinterpret_cast<std::uintptr_t>(p) & 15u) == 0;
}

}  // namespace gpuconv::fft
