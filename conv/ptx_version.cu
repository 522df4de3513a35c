// library_ptx_version (ptx_version.hpp): a kernel that does nothing, alone in its module.
#include "ptx_version.hpp"

#include <cuda_runtime.h>

#include "../fft/device/cuda_check.hpp"

namespace gpuconv::conv {

namespace {
__global__ void ptx_probe_kernel() {}
}  // namespace

int library_ptx_version() {
  cudaFuncAttributes a{};
  GPUCONV_CUDA(cudaFuncGetAttributes(&a, ptx_probe_kernel));
  return a.ptxVersion;
}

}  // namespace gpuconv::conv
