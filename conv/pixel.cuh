// Device side of the narrow pixel types: a float result stored as float, uint8_t or uint16_t,
// rounded to nearest with ties to even (OpenCV's saturate_cast) and saturated; NaN becomes 0.
// The host twin is saturate_round in backend.hpp.
#pragma once
#include <cstdint>
#include <type_traits>

#include "../fft/thread/config.hpp"

namespace gpuconv::conv {

// A pixel as float. Narrow pixels by the 32-bit unsigned conversion: ptxas gives I2FP.F32.U32
// for it on sm_90, and I2F.U16 (another pipe) where the loaders converted the narrow value as
// such (static_cast<float>).
template <typename in_t>
__device__ GPUCONV_INLINE float pixel_value(in_t v) {
  if constexpr (std::is_same_v<in_t, float>) {
    return v;
  } else {
    return __uint2float_rn(unsigned(v));
  }
}

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

// Results as packed narrow pixels, each rounded and saturated as store_pixel does: the
// rounding conversion to a 32-bit integer, then the saturating pack (PTX cvt.pack.sat, sm_72
// and later; b in the low lanes, a above it), which ptxas joins into one packed conversion
// (F2IP) a pair of pixels on sm_90, where store_pixel takes a conversion, a clamp and a shift
// or merge a pixel.
// pack_u8x2: bytes lo, hi in the low 16 bits and upper's low 16 bits above them.
__device__ GPUCONV_INLINE unsigned pack_u8x2(float lo, float hi, unsigned upper = 0u) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 720
  unsigned d;
  asm("cvt.pack.sat.u8.s32.b32 %0, %1, %2, %3;\n"
      : "=r"(d)
      : "r"(__float2int_rn(hi)), "r"(__float2int_rn(lo)), "r"(upper));
  return d;
#else
  return unsigned(store_pixel<std::uint8_t>(lo)) | unsigned(store_pixel<std::uint8_t>(hi)) << 8 | upper << 16;
#endif
}

// Four bytes, v[0] lowest (little-endian memory order).
__device__ GPUCONV_INLINE unsigned pack_u8x4(float v0, float v1, float v2, float v3) {
  return pack_u8x2(v0, v1, pack_u8x2(v2, v3));
}

// Two 16-bit pixels, lo in the low half.
__device__ GPUCONV_INLINE unsigned pack_u16x2(float lo, float hi) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 720
  unsigned d;
  asm("cvt.pack.sat.u16.s32 %0, %1, %2;\n" : "=r"(d) : "r"(__float2int_rn(hi)), "r"(__float2int_rn(lo)));
  return d;
#else
  return unsigned(store_pixel<std::uint16_t>(lo)) | unsigned(store_pixel<std::uint16_t>(hi)) << 16;
#endif
}

// 4 results at p, aligned to the 4 pixels: one 16-, 4- or 8-byte store, narrow pixels packed as
// store_pixel rounds and saturates them.
template <typename out_t>
__device__ GPUCONV_INLINE void store4(out_t* p, const float (&v)[4]) {
  if constexpr (std::is_same_v<out_t, float>) {
    *reinterpret_cast<float4*>(p) = make_float4(v[0], v[1], v[2], v[3]);
  } else if constexpr (std::is_same_v<out_t, std::uint8_t>) {
    *reinterpret_cast<unsigned*>(p) = pack_u8x4(v[0], v[1], v[2], v[3]);
  } else {
    *reinterpret_cast<uint2*>(p) = make_uint2(pack_u16x2(v[0], v[1]), pack_u16x2(v[2], v[3]));
  }
}

}  // namespace gpuconv::conv
