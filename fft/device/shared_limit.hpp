// A kernel's dynamic shared memory limit (cudaFuncAttributeMaxDynamicSharedMemorySize), raised
// safely from several threads. The attribute belongs to the function on a device, not to a
// launch: where each launch set it to its own size, one thread lowering it for a smaller tile
// between another's cudaFuncSetAttribute and launch made that launch fail with
// cudaErrorInvalidValue (a batch of photos of several sizes on three GPU workers did).
// allow_dynamic_shared only ever raises the limit, under a lock, remembering what it set per
// device and function, so that every launch after it returns fits; it calls CUDA only when the
// limit grows.
#pragma once
#include <cstddef>
#include <map>
#include <mutex>
#include <utility>

#include <cuda_runtime.h>

#include "cuda_check.hpp"

namespace gpuconv {

inline void allow_dynamic_shared(const void* kernel, std::size_t bytes) {
  if (bytes <= 48 * 1024) return;  // the default limit
  int device = 0;
  check_cuda(cudaGetDevice(&device), "cudaGetDevice");
  static std::mutex mutex;
  static std::map<std::pair<int, const void*>, std::size_t> limits;
  std::lock_guard lock(mutex);
  std::size_t& limit = limits[{device, kernel}];
  if (bytes <= limit) return;
  check_cuda(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)),
             "cudaFuncSetAttribute(MaxDynamicSharedMemorySize)");
  limit = bytes;
}

template <typename F>
void allow_dynamic_shared(F* kernel, std::size_t bytes) {
  allow_dynamic_shared(reinterpret_cast<const void*>(kernel), bytes);
}

}  // namespace gpuconv
