// The elementwise steps of Richardson-Lucy (deconvolve.hpp has the algorithm), written once
// for the CPU loops (deconvolve.cpp) and the CUDA kernels (deconvolve.cu), in float.
#pragma once
#include <math.h>

#include "../fft/thread/config.hpp"

namespace gpuconv::conv::rl {

// The guarded division: y / b where b > eps, else 0; negative data counts as 0.
HOST_DEVICE inline float ratio(float y, float b, float eps) {
  const float yc = y > 0.f ? y : 0.f;
  return b > eps ? yc / b : 0.f;
}

// max(u * c / d, 0); NaN becomes 0.
HOST_DEVICE inline float next(float u, float c, float d) {
  const float v = u * c / d;
  return v > 0.f ? v : 0.f;
}

// A D x H x W volume, depth-major.
struct grid {
  long long depth, height, width;
};

// n = grad u / sqrt(|grad u|^2 + eps2) at (z, y, x): forward differences, 0 at the last
// index of an axis.
HOST_DEVICE inline void unit_gradient(const float* u, grid g, long long z, long long y, long long x, float eps2,
                                      float& nx, float& ny, float& nz) {
  const long long i = (z * g.height + y) * g.width + x;
  const float c = u[i];
  const float gx = x + 1 < g.width ? u[i + 1] - c : 0.f;
  const float gy = y + 1 < g.height ? u[i + g.width] - c : 0.f;
  const float gz = z + 1 < g.depth ? u[i + g.height * g.width] - c : 0.f;
  const float inv = 1.f / sqrtf(gx * gx + gy * gy + gz * gz + eps2);
  nx = gx * inv;
  ny = gy * inv;
  nz = gz * inv;
}

// 1 - lambda * div(n) at (z, y, x), the divergence by backward differences (n = 0 before the
// first index). eps2 > 0 (callers take at least FLT_MIN), so a flat region gives n = 0.
HOST_DEVICE inline float tv_denominator(const float* u, grid g, long long z, long long y, long long x, float lambda,
                                        float eps2) {
  float nx, ny, nz, ax, ay, az;
  unit_gradient(u, g, z, y, x, eps2, nx, ny, nz);
  float div = nx + ny + nz;
  if (x > 0) {
    unit_gradient(u, g, z, y, x - 1, eps2, ax, ay, az);
    div -= ax;
  }
  if (y > 0) {
    unit_gradient(u, g, z, y - 1, x, eps2, ax, ay, az);
    div -= ay;
  }
  if (z > 0) {
    unit_gradient(u, g, z - 1, y, x, eps2, ax, ay, az);
    div -= az;
  }
  return 1.f - lambda * div;
}

}  // namespace gpuconv::conv::rl
