// The direct (non-FFT) convolution in double precision: the reference that the FFT
// backends are tested against. It spells out the definition in semantics.hpp term by term,
// O(H * W * Kh * Kw) per plane, so it is meant for test sizes only.
#pragma once
#include <string>
#include <vector>

#include "semantics.hpp"

namespace gpuconv::conv {

// `planes` images of H x W, stored plane after plane, each row-major. out receives `planes`
// outputs of make_geometry(H, W, Kh, Kw, opt.mode).out_h x out_w, in the same layout.
// Correlation runs as convolution with effective_kernel (the flipped kernel), as defined.
// Throws std::invalid_argument for what validate() rejects, planes < 1 or a null out.
inline void direct_convolve(const float* in, long long H, long long W, int planes, const float* kernel, int Kh,
                            int Kw, const options& opt, double* out) {
  validate(in, H, W, kernel, Kh, Kw, opt);
  if (planes < 1) detail::fail("planes = " + std::to_string(planes) + " is < 1");
  if (out == nullptr) detail::fail("out is a null pointer");
  const geometry g = make_geometry(H, W, Kh, Kw, opt.mode);
  const std::vector<float> k = effective_kernel(kernel, Kh, Kw, opt.op);
  const double outside = opt.border == boundary::constant ? double(opt.constant_value) : 0.0;
  const int rows = static_cast<int>(H), cols = static_cast<int>(W);  // validate() bounds them by INT_MAX

  // the source column of every (output column, tap column) and the source row of every (output row,
  // tap row), looked up once: the sums below are the same terms in the same order as the definition's
  std::vector<int> column_of(static_cast<std::size_t>(g.out_w) * Kw), row_of(static_cast<std::size_t>(g.out_h) * Kh);
  for (long long x = 0; x < g.out_w; ++x)
    for (int j = 0; j < Kw; ++j) column_of[x * Kw + j] = border_index(x + g.ox - j, cols, opt.border);
  for (long long y = 0; y < g.out_h; ++y)
    for (int i = 0; i < Kh; ++i) row_of[y * Kh + i] = border_index(y + g.oy - i, rows, opt.border);
  for (int p = 0; p < planes; ++p) {
    const float* src = in + p * H * W;
    double* dst = out + p * g.out_h * g.out_w;
    for (long long y = 0; y < g.out_h; ++y)
      for (long long x = 0; x < g.out_w; ++x) {
        double sum = 0;
        const int* c_of = &column_of[x * Kw];
        for (int i = 0; i < Kh; ++i) {
          const int r = row_of[y * Kh + i];
          const float* k_row = &k[static_cast<std::size_t>(i) * Kw];
          for (int j = 0; j < Kw; ++j) {
            const int c = c_of[j];
            const double v = (r < 0 || c < 0) ? outside : double(src[r * W + c]);
            sum += double(k_row[j]) * v;
          }
        }
        dst[y * g.out_w + x] = sum;
      }
  }
}

}  // namespace gpuconv::conv
