// The elementwise steps of Richardson-Lucy on the GPU (rl_steps.hpp's functions in thin
// grid-stride kernels); deconvolve.cpp runs them between the two plan3d executions.
#include <cfloat>

#include "../fft/device/cuda_check.hpp"
#include "deconvolve.hpp"
#include "rl_steps.hpp"

namespace gpuconv::conv {

namespace {

struct elementwise_policy {
  static constexpr int block_threads = 256;
  static constexpr int max_blocks = 4096;  // grid-stride beyond this
};

int blocks_for(long long n) {
  const long long b = (n + elementwise_policy::block_threads - 1) / elementwise_policy::block_threads;
  return int(b < 1 ? 1 : b > elementwise_policy::max_blocks ? elementwise_policy::max_blocks : b);
}

// Non-negative floats order as their bit patterns do, so atomicMax on the bits is a float max.
__global__ void __launch_bounds__(elementwise_policy::block_threads)
    max_nonnegative_kernel(const float* y, long long n, unsigned int* max_bits) {
  __shared__ float partial[elementwise_policy::block_threads];
  float m = 0.f;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    m = fmaxf(m, y[i]);  // fmaxf ignores NaN
  partial[threadIdx.x] = m;
  __syncthreads();
  for (int s = elementwise_policy::block_threads / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) partial[threadIdx.x] = fmaxf(partial[threadIdx.x], partial[threadIdx.x + s]);
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicMax(max_bits, __float_as_uint(partial[0]));
}

__global__ void __launch_bounds__(elementwise_policy::block_threads)
    clamp_copy_kernel(const float* y, float* u, long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    u[i] = y[i] > 0.f ? y[i] : 0.f;
}

__global__ void __launch_bounds__(elementwise_policy::block_threads)
    ratio_kernel(const float* y, float* b, long long n, const float* max_y, float epsilon) {
  const float eps = epsilon * *max_y;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    b[i] = rl::ratio(y[i], b[i], eps);
}

__global__ void __launch_bounds__(elementwise_policy::block_threads)
    update_kernel(const float* u, const float* c, float* u_next, long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    u_next[i] = rl::next(u[i], c[i], 1.f);
}

// Threads along x, blocks over (x, rows of z * height + y), rows grid-strided (gridDim.y is at
// most 65535): no 64-bit division per voxel. The neighbours' reads of the TV term come
// through L1/L2.
__global__ void __launch_bounds__(elementwise_policy::block_threads)
    update_tv_kernel(const float* __restrict__ u, const float* __restrict__ c, float* __restrict__ u_next, rl::grid g,
                     float lambda, const float* max_y, float epsilon) {
  const float eps = epsilon * *max_y;
  const float eps2 = fmaxf(eps * eps, FLT_MIN);
  const long long x = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (x >= g.width) return;
  for (long long row = blockIdx.y; row < g.depth * g.height; row += gridDim.y) {
    const long long z = row / g.height, y = row - z * g.height, i = row * g.width + x;
    u_next[i] = rl::next(u[i], c[i], rl::tv_denominator(u, g, z, y, x, lambda, eps2));
  }
}

}  // namespace

namespace rl_device {

void max_nonnegative(const float* y, long long n, float* max_out, cudaStream_t s) {
  GPUCONV_CUDA(cudaMemsetAsync(max_out, 0, sizeof(float), s));  // the bits of 0.0f
  max_nonnegative_kernel<<<blocks_for(n), elementwise_policy::block_threads, 0, s>>>(
      y, n, reinterpret_cast<unsigned int*>(max_out));
  check_launch("max_nonnegative_kernel");
}

void clamp_copy(const float* y, float* u, long long n, cudaStream_t s) {
  clamp_copy_kernel<<<blocks_for(n), elementwise_policy::block_threads, 0, s>>>(y, u, n);
  check_launch("clamp_copy_kernel");
}

void ratio(const float* y, float* b, long long n, const float* max_y, float epsilon, cudaStream_t s) {
  ratio_kernel<<<blocks_for(n), elementwise_policy::block_threads, 0, s>>>(y, b, n, max_y, epsilon);
  check_launch("ratio_kernel");
}

void update(const float* u, const float* c, float* u_next, long long depth, long long height, long long width,
            float lambda, const float* max_y, float epsilon, cudaStream_t s) {
  const long long n = depth * height * width;
  if (lambda > 0) {
    const long long rows = depth * height;
    const dim3 grid(unsigned((width + elementwise_policy::block_threads - 1) / elementwise_policy::block_threads),
                    unsigned(rows < 65535 ? rows : 65535));
    update_tv_kernel<<<grid, elementwise_policy::block_threads, 0, s>>>(u, c, u_next, rl::grid{depth, height, width},
                                                                      lambda, max_y, epsilon);
    check_launch("update_tv_kernel");
  } else {
    update_kernel<<<blocks_for(n), elementwise_policy::block_threads, 0, s>>>(u, c, u_next, n);
    check_launch("update_kernel");
  }
}

}  // namespace rl_device

}  // namespace gpuconv::conv
