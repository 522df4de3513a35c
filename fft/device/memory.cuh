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

// The same load as an asm volatile: the compiler can neither hoist it out of a loop nor
// merge it with an equal load elsewhere, so the value is live only where it is used. For
// kernels whose registers are scarce (hoisted twiddles or spectra would cost 2 each).
__device__ GPUCONV_INLINE complex_t<float> load_ro_late(const complex_t<float>* p) {
  float2 v;
  asm volatile("ld.global.nc.v2.f32 {%0, %1}, [%2];" : "=f"(v.x), "=f"(v.y) : "l"(p));
  return {v.x, v.y};
}

// Twiddle loaders for block_fft_t.
struct twiddle_load_ro {
  static __device__ GPUCONV_INLINE complex_t<float> load(const complex_t<float>* p) { return load_ro(p); }
};
struct twiddle_load_late {
  static __device__ GPUCONV_INLINE complex_t<float> load(const complex_t<float>* p) { return load_ro_late(p); }
};

__device__ GPUCONV_INLINE bool aligned16(const void* p) {
  return (reinterpret_cast<std::uintptr_t>(p) & 15u) == 0;
}

}  // namespace gpuconv::fft
