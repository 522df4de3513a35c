// Programmatic dependent launch (sm_90): a kernel launched with
// cudaLaunchAttributeProgrammaticStreamSerialization may begin while the kernel before it in
// the stream is still running, once every block of that kernel has called
// dependents_may_launch() (or exited). Its blocks then wait in wait_for_previous() until the
// previous grid has completed and its writes are visible, so the launch latency and the
// previous grid's last wave overlap instead of adding up (a few microseconds per kernel: most
// of a pass over a 128^3 volume, which sits in L2).
//
// A kernel that calls wait_for_previous() before touching global memory may be launched either
// way: without the attribute both calls return at once. Both are no-ops before sm_90.
#pragma once
#include <cstddef>
#include <utility>

#include <cuda_runtime.h>

#include "cuda_check.hpp"

namespace gpuconv::fft {

__device__ __forceinline__ void dependents_may_launch() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

__device__ __forceinline__ void wait_for_previous() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// Whether the current device takes programmatic dependent launches (compute capability 9.0 or
// later); plans ask once and launch plainly elsewhere.
inline bool dependent_launch_supported() {
  int device = 0, major = 0;
  check_cuda(cudaGetDevice(&device), "cudaGetDevice");
  check_cuda(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device), "cudaDeviceGetAttribute");
  return major >= 9;
}

// Launches kernel<<<grid, block, shared, stream>>>(args...), with the programmatic stream
// serialization attribute when `early` is set (the kernel must call wait_for_previous() first).
template <typename... Params, typename... Args>
void launch_maybe_early(void (*kernel)(Params...), unsigned grid, unsigned block, std::size_t shared,
                        cudaStream_t stream, bool early, const char* name, Args&&... args) {
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(grid);
  config.blockDim = dim3(block);
  config.dynamicSmemBytes = shared;
  config.stream = stream;
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute.val.programmaticStreamSerializationAllowed = 1;
  config.attrs = early ? &attribute : nullptr;
  config.numAttrs = early ? 1 : 0;
  check_cuda(cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...), name);
}

}  // namespace gpuconv::fft
