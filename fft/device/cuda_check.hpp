// CUDA and cuFFT status codes turned into exceptions that name the failing call.
// Library code never prints or exits; main() turns these into a one-line message.
#pragma once
#include <stdexcept>
#include <string>

#include <cuda_runtime.h>

namespace gpuconv {

class cuda_error : public std::runtime_error {
 public:
  cuda_error(const std::string& call, cudaError_t status)
      : std::runtime_error(call + ": " + cudaGetErrorName(status) + " (" + cudaGetErrorString(status) + ")"),
        status_(status) {}
  cudaError_t status() const { return status_; }

 private:
  cudaError_t status_;
};

inline void check_cuda(cudaError_t status, const char* call) {
  if (status != cudaSuccess) throw cuda_error(call, status);
}

// Checks a launch: the configuration error now, not the asynchronous execution error.
inline void check_launch(const char* kernel) { check_cuda(cudaGetLastError(), kernel); }

// True when a CUDA device can be used; never throws.
inline bool cuda_device_available() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no device" status
    return false;
  }
  return count > 0;
}

}  // namespace gpuconv

#define GPUCONV_CUDA(call) ::gpuconv::check_cuda((call), #call)
