#include "timing.cuh"

namespace gpuconv::bench {

namespace {

__global__ void fill_random_kernel(float* p, std::size_t count, std::uint64_t seed) {
  for (std::size_t i = blockIdx.x * (std::size_t)blockDim.x + threadIdx.x; i < count;
       i += (std::size_t)gridDim.x * blockDim.x) {
    std::uint64_t z = seed + 0x9E3779B97F4A7C15ull * (i + 1);  // splitmix64
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    p[i] = float(double(z >> 11) * (2.0 / 9007199254740992.0) - 1.0);
  }
}

__global__ void diff_norms_kernel(const float* a, const float* b, std::size_t count, double* sums) {
  double num = 0, den = 0;
  for (std::size_t i = blockIdx.x * (std::size_t)blockDim.x + threadIdx.x; i < count;
       i += (std::size_t)gridDim.x * blockDim.x) {
    const double d = double(a[i]) - double(b[i]);
    num += d * d;
    den += double(b[i]) * double(b[i]);
  }
  for (int off = 16; off > 0; off >>= 1) {
    num += __shfl_down_sync(0xffffffffu, num, off);
    den += __shfl_down_sync(0xffffffffu, den, off);
  }
  if ((threadIdx.x & 31) == 0) {
    atomicAdd(sums, num);
    atomicAdd(sums + 1, den);
  }
}

}  // namespace

void fill_random(float* p, std::size_t count, std::uint64_t seed, cudaStream_t stream) {
  fill_random_kernel<<<1024, 256, 0, stream>>>(p, count, seed);
  check_launch("fill_random_kernel");
}

double relative_l2(const float* a, const float* b, std::size_t count, cudaStream_t stream) {
  device_buffer<double> sums(2);
  GPUCONV_CUDA(cudaMemsetAsync(sums.data(), 0, 2 * sizeof(double), stream));
  diff_norms_kernel<<<1024, 256, 0, stream>>>(a, b, count, sums.data());
  check_launch("diff_norms_kernel");
  double h[2];
  GPUCONV_CUDA(cudaMemcpyAsync(h, sums.data(), sizeof h, cudaMemcpyDeviceToHost, stream));
  GPUCONV_CUDA(cudaStreamSynchronize(stream));
  if (h[0] != h[0] || h[1] != h[1]) return 1e300;  // NaN anywhere
  return h[1] == 0 ? 1e300 : std::sqrt(h[0] / h[1]);
}

}  // namespace gpuconv::bench
