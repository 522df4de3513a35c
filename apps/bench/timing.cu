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

__global__ void fma_kernel(float* out, int iterations) {
  float a[8];
  for (int j = 0; j < 8; ++j) a[j] = threadIdx.x * 1e-3f + j;
  const float b = 0.999f, c = 1e-4f;
  for (int i = 0; i < iterations; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j) a[j] = fmaf(a[j], b, c);
  float s = 0;
  for (int j = 0; j < 8; ++j) s += a[j];
  if (s == 12345.f) out[0] = s;  // keeps the chains alive
}

__global__ void to_u8_kernel(const float* in, std::uint8_t* out, std::size_t count) {
  for (std::size_t i = blockIdx.x * (std::size_t)blockDim.x + threadIdx.x; i < count;
       i += (std::size_t)gridDim.x * blockDim.x)
    out[i] = (std::uint8_t)__float2int_rn((in[i] * 0.5f + 0.5f) * 255.f);
}

__global__ void from_u8_kernel(const std::uint8_t* in, float* out, std::size_t count) {
  for (std::size_t i = blockIdx.x * (std::size_t)blockDim.x + threadIdx.x; i < count;
       i += (std::size_t)gridDim.x * blockDim.x)
    out[i] = float(in[i]);
}

__global__ void u8_diff_kernel(const std::uint8_t* a, const float* b, std::size_t count, int* worst) {
  int m = 0;
  for (std::size_t i = blockIdx.x * (std::size_t)blockDim.x + threadIdx.x; i < count;
       i += (std::size_t)gridDim.x * blockDim.x) {
    const float r = fminf(255.f, fmaxf(0.f, rintf(b[i])));
    const int d = abs(int(a[i]) - int(r));
    m = d > m ? d : m;
  }
  atomicMax(worst, m);
}

}  // namespace

double fma_peak_tflops(cudaStream_t stream) {
  int device = 0, sms = 0;
  GPUCONV_CUDA(cudaGetDevice(&device));
  GPUCONV_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  device_buffer<float> sink(1);
  const int blocks = sms * 8, threads = 256, iterations = 1 << 16;
  const float ms = median_ms([&](cudaStream_t s) { fma_kernel<<<blocks, threads, 0, s>>>(sink.data(), iterations); }, 2, 5, stream);
  check_launch("fma_kernel");
  return 2.0 * 8 * double(iterations) * blocks * threads / (ms * 1e-3) / 1e12;
}

void to_u8(const float* in, std::uint8_t* out, std::size_t count, cudaStream_t stream) {
  to_u8_kernel<<<1024, 256, 0, stream>>>(in, out, count);
  check_launch("to_u8_kernel");
}

void from_u8(const std::uint8_t* in, float* out, std::size_t count, cudaStream_t stream) {
  from_u8_kernel<<<1024, 256, 0, stream>>>(in, out, count);
  check_launch("from_u8_kernel");
}

int max_u8_difference(const std::uint8_t* a, const float* b, std::size_t count, cudaStream_t stream) {
  device_buffer<int> worst(1);
  GPUCONV_CUDA(cudaMemsetAsync(worst.data(), 0, sizeof(int), stream));
  u8_diff_kernel<<<1024, 256, 0, stream>>>(a, b, count, worst.data());
  check_launch("u8_diff_kernel");
  int h = 0;
  GPUCONV_CUDA(cudaMemcpyAsync(&h, worst.data(), sizeof h, cudaMemcpyDeviceToHost, stream));
  GPUCONV_CUDA(cudaStreamSynchronize(stream));
  return h;
}

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
