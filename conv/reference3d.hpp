// The direct volume convolution in double precision: the reference the 3D backends are
// tested against. It spells out semantics3d.hpp's formula term by term, O(voxels * Kd*Kh*Kw),
// so it is meant for test sizes only.
#pragma once
#include <vector>

#include "semantics3d.hpp"

namespace gpuconv::conv {

// `volumes` volumes of D x H x W, stored one after another; out receives `volumes` outputs of
// make_geometry3d(...).out_d x out_h x out_w in the same layout.
inline void direct_convolve3d(const float* in, long long D, long long H, long long W, int volumes,
                              const float* kernel, int Kd, int Kh, int Kw, const options& opt, double* out) {
  if (in == nullptr || out == nullptr) detail::fail("direct_convolve3d: null buffer");
  if (volumes < 1) detail::fail("volumes = " + std::to_string(volumes) + " is < 1");
  validate_plan3d(D, H, W, kernel, Kd, Kh, Kw, opt);
  const geometry3d g = make_geometry3d(D, H, W, Kd, Kh, Kw, opt.mode);
  const std::vector<float> k = effective_kernel3d(kernel, Kd, Kh, Kw, opt.op);
  const double outside = opt.border == boundary::constant ? double(opt.constant_value) : 0.0;
  for (int v = 0; v < volumes; ++v) {
    const float* src = in + v * D * H * W;
    double* dst = out + v * g.out_d * g.out_h * g.out_w;
    for (long long z = 0; z < g.out_d; ++z)
      for (long long y = 0; y < g.out_h; ++y)
        for (long long x = 0; x < g.out_w; ++x) {
          double sum = 0;
          for (int l = 0; l < Kd; ++l) {
            const int s = border_index(z + g.oz - l, (int)D, opt.border);
            for (int i = 0; i < Kh; ++i) {
              const int r = border_index(y + g.oy - i, (int)H, opt.border);
              for (int j = 0; j < Kw; ++j) {
                const int c = border_index(x + g.ox - j, (int)W, opt.border);
                const double val = (s < 0 || r < 0 || c < 0) ? outside : double(src[(s * H + r) * W + c]);
                sum += double(k[((long long)l * Kh + i) * Kw + j]) * val;
              }
            }
          }
          dst[(z * g.out_h + y) * g.out_w + x] = sum;
        }
  }
}

}  // namespace gpuconv::conv
