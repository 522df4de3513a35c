// Compilation settings shared by every layer of the FFT engine.
// Thread-level code is written once and compiled both by the host compiler (tests,
// CPU backend) and by nvcc (kernels); HOST_DEVICE marks it for both.
#pragma once

#if defined(__CUDACC__)
#define GPUCONV_HOST_DEVICE __host__ __device__
#define GPUCONV_INLINE __forceinline__
#else
#define GPUCONV_HOST_DEVICE
#define GPUCONV_INLINE inline __attribute__((always_inline))
#endif

#define HOST_DEVICE GPUCONV_HOST_DEVICE

namespace gpuconv::fft {

constexpr bool is_pow2(long long n) { return n > 0 && (n & (n - 1)) == 0; }

constexpr int log2_exact(long long n) {
  int l = 0;
  while ((1LL << l) < n) ++l;
  return l;
}

}  // namespace gpuconv::fft
