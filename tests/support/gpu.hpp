// GPU test helpers: the visible skip when no device is present, and poisoned buffers.
#pragma once
#include <catch2/catch_test_macros.hpp>

#include <cmath>
#include <vector>

#include <cufft.h>

#include "fft/device/buffer.hpp"

#define GPUCONV_REQUIRE_GPU()                                              \
  do {                                                                     \
    if (!::gpuconv::cuda_device_available()) SKIP("no CUDA device present"); \
  } while (0)

namespace gpuconv::test {

inline void check_cufft(cufftResult r, const char* call) {
  if (r != CUFFT_SUCCESS) FAIL(call << " failed with cufftResult " << int(r));
}

// Owns a cuFFT handle made by any of the cufftPlan* calls.
struct cufft_handle {
  cufftHandle h{};
  cufft_handle() = default;
  cufft_handle(const cufft_handle&) = delete;
  cufft_handle& operator=(const cufft_handle&) = delete;
  ~cufft_handle() { cufftDestroy(h); }
};

// Fills a device buffer with 0xFF bytes: NaN in every float, so unwritten outputs show.
template <typename T>
void poison(device_buffer<T>& b) {
  GPUCONV_CUDA(cudaMemset(b.data(), 0xFF, b.bytes()));
}

template <typename T>
std::vector<T> download(const device_buffer<T>& b) {
  std::vector<T> h(b.size());
  GPUCONV_CUDA(cudaMemcpy(h.data(), b.data(), b.bytes(), cudaMemcpyDeviceToHost));
  return h;
}

template <typename T>
device_buffer<T> upload(const std::vector<T>& h) {
  device_buffer<T> b(h.size());
  GPUCONV_CUDA(cudaMemcpy(b.data(), h.data(), b.bytes(), cudaMemcpyHostToDevice));
  return b;
}

inline bool all_finite(const std::vector<float>& v) {
  for (float x : v)
    if (!std::isfinite(x)) return false;
  return true;
}

}  // namespace gpuconv::test
