// GPU kernels of png_rows.hpp.
#include "png_rows.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "fft/device/cuda_check.hpp"
#include "grid.cuh"

namespace gpuconv::pipeline {

namespace {

constexpr int block = 256;

// Byte k of a pixel's scanline bytes (C samples of B bytes, PNG's order, big-endian) is byte
// stored_byte<C, B>(k) of the stored pixel: B and R swap places, 16-bit samples swap bytes
// (the host's order, little-endian)
template <int C, int B>
__device__ __forceinline__ int stored_byte(int k) {
  const int sample = k / B, s = (C >= 3 && sample < 3) ? 2 - sample : sample;
  return B * s + (B == 2 ? 1 - k % B : 0);
}

// one thread a pixel: its C * B filtered bytes (Sub works on bytes, one pixel's width back),
// and the row's filter byte for x = 0
template <int C, int B>
__global__ void sub_rows_kernel(const std::uint8_t* __restrict__ in, long long height, long long width,
                                std::uint8_t* __restrict__ out) {
  constexpr int P = C * B;
  const long long area = height * width, stride = 1 + width * P;
  for (long long p = blockIdx.x * (long long)blockDim.x + threadIdx.x; p < area; p += (long long)gridDim.x * blockDim.x) {
    const long long y = p / width, x = p - y * width;
    const std::uint8_t* px = in + p * P;
    std::uint8_t* o = out + y * stride + 1 + x * P;
    if (x == 0) o[-1] = 1;
#pragma unroll
    for (int k = 0; k < P; ++k) {
      const int s = stored_byte<C, B>(k);
      o[k] = std::uint8_t(px[s] - (x > 0 ? px[s - P] : 0));
    }
  }
}

// one warp a row, 32 pixels at a time: Sub rows are a running sum per byte of the pixel
// (modulo 256), a warp scan of each 32 pixels plus the carry of the ones before
template <int C0, int B>
__global__ void unsub_rows_kernel(const std::uint8_t* __restrict__ rows, long long height, long long width,
                                  std::uint8_t* __restrict__ out) {
  constexpr int C = C0 * B;  // bytes a pixel
  const int lane = threadIdx.x & 31;
  const long long stride = 1 + width * C;
  const long long warps = ((long long)gridDim.x * blockDim.x) / 32;
  for (long long y = (blockIdx.x * (long long)blockDim.x + threadIdx.x) / 32; y < height; y += warps) {
    const std::uint8_t* r = rows + y * stride;
    const bool sub = r[0] == 1;
    unsigned carry[C];
#pragma unroll
    for (int k = 0; k < C; ++k) carry[k] = 0;
    for (long long x0 = 0; x0 < width; x0 += 32) {
      const long long x = x0 + lane;
      unsigned v[C];
#pragma unroll
      for (int k = 0; k < C; ++k) v[k] = x < width ? r[1 + x * C + k] : 0u;
      if (sub) {
#pragma unroll
        for (int k = 0; k < C; ++k) {
#pragma unroll
          for (int d = 1; d < 32; d *= 2) {
            const unsigned u = __shfl_up_sync(0xffffffffu, v[k], d);
            if (lane >= d) v[k] += u;
          }
          v[k] += carry[k];
          carry[k] = __shfl_sync(0xffffffffu, v[k], 31);
        }
      }
      if (x < width) {
        std::uint8_t* o = out + (y * width + x) * C;
#pragma unroll
        for (int k = 0; k < C; ++k) o[stored_byte<C0, B>(k)] = std::uint8_t(v[k]);
      }
    }
  }
}

template <typename F>
void dispatch_channels(int channels, int depth, F&& f) {
  auto bytes = [&](auto c) {
    if (depth == 8) return f(c, std::integral_constant<int, 1>{});
    if (depth == 16) return f(c, std::integral_constant<int, 2>{});
    throw std::invalid_argument("png_rows: " + std::to_string(depth) + "-bit samples (8 or 16)");
  };
  switch (channels) {
    case 1: bytes(std::integral_constant<int, 1>{}); return;
    case 3: bytes(std::integral_constant<int, 3>{}); return;
    case 4: bytes(std::integral_constant<int, 4>{}); return;
  }
  throw std::invalid_argument("png_rows: " + std::to_string(channels) + " channels (1, 3 or 4)");
}

}  // namespace

void png_sub_rows(const std::uint8_t* in, long long height, long long width, int channels, int depth,
                  std::uint8_t* scanlines, cudaStream_t stream) {
  if (height <= 0 || width <= 0) return;
  dispatch_channels(channels, depth, [&](auto c, auto b) {
    sub_rows_kernel<decltype(c)::value, decltype(b)::value>
        <<<grid_for(height * width, block), block, 0, stream>>>(in, height, width, scanlines);
  });
  check_launch("pipeline::sub_rows_kernel");
}

void png_unsub_rows(const std::uint8_t* scanlines, long long height, long long width, int channels, int depth,
                    std::uint8_t* out, cudaStream_t stream) {
  if (height <= 0 || width <= 0) return;
  dispatch_channels(channels, depth, [&](auto c, auto b) {
    unsub_rows_kernel<decltype(c)::value, decltype(b)::value>
        <<<grid_for(height * 32, block), block, 0, stream>>>(scanlines, height, width, out);
  });
  check_launch("pipeline::unsub_rows_kernel");
}

}  // namespace gpuconv::pipeline
