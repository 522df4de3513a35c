// Internal helpers of the CUDA backends (cuda_backend.cu, plan3d.cu, separable3d.cu): the
// plan's device made current for a scope, and a call per pixel type.
#pragma once
#include <cstdint>

#include "backend.hpp"
#include "fft/device/cuda_check.hpp"

namespace gpuconv::conv {

// Calls f(T{}) with the element type of p.
template <typename F>
void dispatch_pixel(pixel p, F&& f) {
  switch (p) {
    case pixel::f32: f(float{}); return;
    case pixel::u8: f(std::uint8_t{}); return;
    case pixel::u16: f(std::uint16_t{}); return;
  }
}

// The caller's current device set to `device` for a scope (a negative device: left as it
// is), and put back after.
class device_scope {
 public:
  explicit device_scope(int device) {
    GPUCONV_CUDA(cudaGetDevice(&previous_));
    if (device >= 0 && device != previous_) GPUCONV_CUDA(cudaSetDevice(device));
    else previous_ = -1;
  }
  ~device_scope() {
    if (previous_ >= 0) cudaSetDevice(previous_);
  }
  device_scope(const device_scope&) = delete;
  device_scope& operator=(const device_scope&) = delete;

 private:
  int previous_ = -1;
};

}  // namespace gpuconv::conv
