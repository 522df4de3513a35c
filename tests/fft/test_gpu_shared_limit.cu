// allow_dynamic_shared (fft/device/shared_limit.hpp): a kernel's dynamic shared memory limit is
// only ever raised, so that a launch sized after one call still fits when another thread asks
// for less (the race it fixes: one thread lowering the limit between another's set and launch).
#include <catch2/catch_test_macros.hpp>

#include "fft/device/cuda_check.hpp"
#include "fft/device/shared_limit.hpp"

using namespace gpuconv;

namespace {

__global__ void fill_shared(float* out, int n) {
  extern __shared__ float shared[];
  for (int i = threadIdx.x; i < n; i += blockDim.x) shared[i] = float(i);
  __syncthreads();
  if (threadIdx.x == 0) out[0] = shared[n - 1];
}

int limit_of(const void* kernel) {
  cudaFuncAttributes a{};
  check_cuda(cudaFuncGetAttributes(&a, kernel), "cudaFuncGetAttributes");
  return a.maxDynamicSharedSizeBytes;
}

}  // namespace

TEST_CASE("allow_dynamic_shared raises a kernel's shared memory limit and never lowers it", "[fft][gpu]") {
  if (!cuda_device_available()) SKIP("no CUDA device present");
  const void* k = reinterpret_cast<const void*>(&fill_shared);
  allow_dynamic_shared(&fill_shared, 40 * 1024);  // within the default: nothing to raise
  CHECK(limit_of(k) <= 48 * 1024);
  allow_dynamic_shared(&fill_shared, 80 * 1024);
  CHECK(limit_of(k) == 80 * 1024);
  allow_dynamic_shared(&fill_shared, 60 * 1024);  // another caller's smaller tile
  CHECK(limit_of(k) == 80 * 1024);
  // so a launch sized for the larger tile still runs
  float* out = nullptr;
  check_cuda(cudaMalloc(&out, sizeof(float)), "cudaMalloc");
  constexpr int n = 80 * 1024 / 4;
  fill_shared<<<1, 256, n * sizeof(float)>>>(out, n);
  const cudaError_t launched = cudaGetLastError();
  CHECK(launched == cudaSuccess);
  float last = 0;
  check_cuda(cudaMemcpy(&last, out, sizeof(float), cudaMemcpyDeviceToHost), "cudaMemcpy");
  CHECK(last == float(n - 1));
  check_cuda(cudaFree(out), "cudaFree");
  allow_dynamic_shared(&fill_shared, 100 * 1024);
  CHECK(limit_of(k) == 100 * 1024);
}
