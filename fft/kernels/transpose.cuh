// Kernel layer: batched transpose of complex matrices, [batch][rows][cols] -> [batch][cols][rows],
// through 32x32 shared tiles padded by one element against bank conflicts.
#pragma once
#include "../thread/complex.hpp"

namespace gpuconv::fft {

struct transpose_policy {
  static constexpr int tile = 32;
  static constexpr int block_rows = 8;  // threads per block: tile x block_rows
};

__global__ void __launch_bounds__(transpose_policy::tile * transpose_policy::block_rows)
transpose_kernel(const complex_t<float>* __restrict__ in, complex_t<float>* __restrict__ out, int rows, int cols) {
  constexpr int tile = transpose_policy::tile, step = transpose_policy::block_rows;
  __shared__ complex_t<float> buf[tile][tile + 1];
  const long long matrix = blockIdx.z;
  const complex_t<float>* src = in + matrix * rows * cols;
  complex_t<float>* dst = out + matrix * rows * cols;
  const int c0 = blockIdx.x * tile, r0 = blockIdx.y * tile;
  for (int i = threadIdx.y; i < tile; i += step) {
    const int r = r0 + i, c = c0 + threadIdx.x;
    if (r < rows && c < cols) buf[i][threadIdx.x] = src[(long long)r * cols + c];
  }
  __syncthreads();
  for (int i = threadIdx.y; i < tile; i += step) {
    const int c = c0 + i, r = r0 + threadIdx.x;
    if (r < rows && c < cols) dst[(long long)c * rows + r] = buf[threadIdx.x][i];
  }
}

}  // namespace gpuconv::fft
