// Volume convolution semantics: semantics.hpp's rules applied on each of the three axes.
// A D x H x W volume (depth-major: slice after slice, each row-major) convolved with a
// Kd x Kh x Kw kernel (the same layout):
//
//   out(z, y, x) = sum_{l < Kd, i < Kh, j < Kw} k(l, i, j) * in_ext(z + oz - l, y + oy - i, x + ox - j)
//
// in_ext extends the volume by the boundary rule per axis (border_index on each index; a
// zero/constant sample wherever any axis falls outside), and (oz, oy, ox) and the output
// size are make_geometry's per axis: same (K-1)/2, full 0, valid K-1. Correlation flips the
// kernel in all three axes, which reverses its linear order (flipped_kernel over Kd*Kh x Kw).
#pragma once
#include "semantics.hpp"

namespace gpuconv::conv {

struct geometry3d {
  long long out_d = 0, out_h = 0, out_w = 0;
  int oz = 0, oy = 0, ox = 0;
};

namespace detail {

inline std::string shape3(long long d, long long h, long long w) {
  return std::to_string(d) + " x " + std::to_string(h) + " x " + std::to_string(w);
}

}  // namespace detail

// Throws std::invalid_argument for a size < 1 and for 'valid' with a kernel larger than the
// volume along any axis. The per-axis numbers are make_geometry's (depth with height, height
// with width), so the two plans agree by construction.
inline geometry3d make_geometry3d(long long D, long long H, long long W, int Kd, int Kh, int Kw, output_mode m) {
  if (D < 1) detail::fail("volume depth D = " + std::to_string(D) + " is < 1");
  if (D > INT_MAX) detail::fail("volume depth D = " + std::to_string(D) + " exceeds " + std::to_string(INT_MAX));
  if (Kd < 1) detail::fail("kernel depth Kd = " + std::to_string(Kd) + " is < 1");
  if (m == output_mode::valid && (Kd > D || Kh > H || Kw > W))
    detail::fail("mode 'valid' needs the kernel (Kd x Kh x Kw = " + detail::shape3(Kd, Kh, Kw) +
                 ") to fit in the volume (D x H x W = " + detail::shape3(D, H, W) + "): the output would be empty");
  const geometry hw = make_geometry(H, W, Kh, Kw, m);
  const geometry dh = make_geometry(D, H, Kd, Kh, m);
  return {dh.out_h, hw.out_h, hw.out_w, dh.oy, hw.oy, hw.ox};
}

// The kernel the formula is applied to: flipped in all three axes for correlation.
inline std::vector<float> effective_kernel3d(const float* k, int Kd, int Kh, int Kw, operation op) {
  if (Kd < 1) detail::fail("kernel depth Kd = " + std::to_string(Kd) + " is < 1");
  return effective_kernel(k, Kd * Kh, Kw, op);
}

// validate_plan for volumes: a null kernel, sizes < 1, a NaN or Inf kernel value (named by
// slice, row and column), a NaN or Inf constant_value, an empty 'valid' output.
inline void validate_plan3d(long long D, long long H, long long W, const float* kernel, int Kd, int Kh, int Kw,
                            const options& opt) {
  if (kernel == nullptr) detail::fail("kernel is a null pointer");
  make_geometry3d(D, H, W, Kd, Kh, Kw, opt.mode);
  for (int l = 0; l < Kd; ++l)
    for (int i = 0; i < Kh; ++i)
      for (int j = 0; j < Kw; ++j) {
        const float v = kernel[(static_cast<long long>(l) * Kh + i) * Kw + j];
        if (!std::isfinite(v))
          detail::fail("kernel value at (slice " + std::to_string(l) + ", row " + std::to_string(i) + ", col " +
                       std::to_string(j) + ") is " + detail::nonfinite_name(v));
      }
  if (!std::isfinite(opt.constant_value))
    detail::fail("constant_value is " + detail::nonfinite_name(opt.constant_value));
}

}  // namespace gpuconv::conv
