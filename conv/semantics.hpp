// Convolution semantics: what every backend (FFT on the GPU, FFT on the CPU, the direct
// reference) must compute. It sits on top of the FFT engine and below the convolution API;
// border_index is HOST_DEVICE so kernels apply the same border rule as the host code.
//
// Convolution of an H x W image with a Kh x Kw kernel k (both row-major):
//
//   out(y, x) = sum_{i < Kh, j < Kw} k(i, j) * in_ext(y + oy - i, x + ox - j)
//
// where in_ext is the image extended by the boundary rule (border_index) and
//
//   mode    output size                  (oy, ox)
//   same    H x W                        ((Kh-1)/2, (Kw-1)/2), integer division
//   full    (H+Kh-1) x (W+Kw-1)          (0, 0)
//   valid   (H-Kh+1) x (W-Kw+1)          (Kh-1, Kw-1)
//
// Correlation is convolution with the kernel flipped in both axes,
// k'(i, j) = k(Kh-1-i, Kw-1-j), with the same geometry.
//
// What this matches, for odd and even kernel sizes (checked with SciPy 1.17, OpenCV 4.6 and 5.0):
// - zero boundary, convolution: scipy.signal.fftconvolve(in, k, mode) (and convolve2d);
//   correlation: scipy.signal.correlate(in, k, mode). scipy.signal.correlate2d agrees for
//   'full' and 'valid' and for odd kernels, but its 'same' is shifted by one sample along
//   every axis where the kernel size is even.
// - 'same', convolution: cv::filter2D on the flipped kernel with the default anchor
//   (Kw/2, Kh/2): filter2D computes sum k(i,j) src(y + i - Kh/2, x + j - Kw/2), and
//   substituting the flipped kernel gives oy = Kh-1 - Kh/2 = (Kh-1)/2 for odd and even Kh.
//   Correlation is cv::filter2D on the kernel itself. Borders: replicate, reflect,
//   reflect101 and constant are BORDER_REPLICATE, BORDER_REFLECT, BORDER_REFLECT_101 and
//   BORDER_CONSTANT; filter2D rejects BORDER_WRAP, for which scipy's convolve2d(boundary=
//   'wrap') is the peer (and convolve2d(boundary='symm') for reflect).
#pragma once
#include <climits>
#include <cmath>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "../fft/thread/config.hpp"

namespace gpuconv::conv {

enum class operation { convolution, correlation };
enum class output_mode { same, full, valid };
enum class boundary { zero, constant, replicate, reflect, reflect101, wrap };

struct options {
  operation op = operation::convolution;
  output_mode mode = output_mode::same;
  boundary border = boundary::reflect101;  // OpenCV's default border
  float constant_value = 0.f;              // the outside value for boundary::constant
};

namespace detail {

// a mod m in [0, m) for any sign of a (C++'s % truncates towards zero); m > 0. Within a period
// of [0, m) (a in [-m, 2m): every index past an edge of an image longer than the kernel) by one add
// or subtract instead of the 64-bit remainder, which a GPU runs as a software routine (no 64-bit
// divide instruction): the uint8 tensor-core walk (~10 instructions a window group) ran 10-30%
// slower under reflect101 than under the zero boundary, and without the remainder at the edges
// 2-11% faster than with it (64 x 256^2 K = 3: 0.0177 -> 0.0154-0.0157 ms, zero 0.0135; H100,
// session 82).
HOST_DEVICE constexpr long long floor_mod(long long a, long long m) {
  if (a >= -m && a < 2 * m) return a < 0 ? a + m : a < m ? a : a - m;
  const long long r = a % m;
  return r < 0 ? r + m : r;
}

}  // namespace detail

// Maps index p (any integer) of an axis of length n >= 1 into [0, n), OpenCV's
// borderInterpolate for any overshoot, in O(1):
//   replicate   aaa|abc|ccc     clamp
//   reflect     cba|abc|cba     period 2n:   m = p mod 2n,     m < n ? m : 2n-1-m
//   reflect101   cb|abc|ba      period 2n-2: m = p mod (2n-2), m < n ? m : 2n-2-m  (n == 1: 0)
//   wrap        abc|abc|abc     p mod n
// zero and constant return -1 outside [0, n): the caller substitutes the outside value.
HOST_DEVICE constexpr int border_index(long long p, int n, boundary b) {
  if (p >= 0 && p < n) return static_cast<int>(p);
  switch (b) {
    case boundary::replicate:
      return p < 0 ? 0 : n - 1;
    case boundary::reflect: {
      const long long period = 2LL * n;
      const long long m = detail::floor_mod(p, period);
      return static_cast<int>(m < n ? m : period - 1 - m);
    }
    case boundary::reflect101: {
      if (n == 1) return 0;  // the mirror has no sample besides the edge itself
      const long long period = 2LL * n - 2;
      const long long m = detail::floor_mod(p, period);
      return static_cast<int>(m < n ? m : period - m);
    }
    case boundary::wrap:
      return static_cast<int>(detail::floor_mod(p, n));
    case boundary::zero:
    case boundary::constant:
      break;
  }
  return -1;
}

// Output size and the offsets (oy, ox) of the formula at the top of this file.
struct geometry {
  long long out_h = 0, out_w = 0;
  int oy = 0, ox = 0;
};

namespace detail {

[[noreturn]] inline void fail(const std::string& what) {
  throw std::invalid_argument("gpuconv::conv: " + what);
}

inline std::string shape(long long rows, long long cols) {
  return std::to_string(rows) + " x " + std::to_string(cols);
}

inline std::string nonfinite_name(float v) { return std::isnan(v) ? "NaN" : v > 0 ? "+Inf" : "-Inf"; }

inline void check_kernel_sides(int Kh, int Kw) {
  if (Kh < 1) fail("kernel height Kh = " + std::to_string(Kh) + " is < 1");
  if (Kw < 1) fail("kernel width Kw = " + std::to_string(Kw) + " is < 1");
}

// Sizes >= 1; image sides also fit in int, because border_index works per axis in int.
inline void check_sizes(long long H, long long W, int Kh, int Kw) {
  if (H < 1) fail("image height H = " + std::to_string(H) + " is < 1");
  if (W < 1) fail("image width W = " + std::to_string(W) + " is < 1");
  if (H > INT_MAX) fail("image height H = " + std::to_string(H) + " exceeds " + std::to_string(INT_MAX));
  if (W > INT_MAX) fail("image width W = " + std::to_string(W) + " exceeds " + std::to_string(INT_MAX));
  check_kernel_sides(Kh, Kw);
}

inline void check_kernel(const float* k, int Kh, int Kw) {
  if (k == nullptr) fail("kernel is a null pointer");
  check_kernel_sides(Kh, Kw);
}

}  // namespace detail

// Throws std::invalid_argument for a size < 1 and for 'valid' with a kernel larger than the
// image (the output would be empty).
inline geometry make_geometry(long long H, long long W, int Kh, int Kw, output_mode m) {
  detail::check_sizes(H, W, Kh, Kw);
  switch (m) {
    case output_mode::same:
      return {H, W, (Kh - 1) / 2, (Kw - 1) / 2};
    case output_mode::full:
      return {H + Kh - 1, W + Kw - 1, 0, 0};
    case output_mode::valid:
      if (Kh > H || Kw > W)
        detail::fail("mode 'valid' needs the kernel (Kh x Kw = " + detail::shape(Kh, Kw) +
                     ") to fit in the image (H x W = " + detail::shape(H, W) + "): the output would be empty");
      return {H - Kh + 1, W - Kw + 1, Kh - 1, Kw - 1};
  }
  detail::fail("unknown output_mode " + std::to_string(static_cast<int>(m)));
}

// k'(i, j) = k(Kh-1-i, Kw-1-j). Flipping both axes of a row-major array reverses its linear
// order: element i*Kw + j moves to (Kh-1-i)*Kw + (Kw-1-j) = Kh*Kw-1 - (i*Kw + j).
inline std::vector<float> flipped_kernel(const float* k, int Kh, int Kw) {
  detail::check_kernel(k, Kh, Kw);
  const long long count = static_cast<long long>(Kh) * Kw;
  return std::vector<float>(std::reverse_iterator<const float*>(k + count), std::reverse_iterator<const float*>(k));
}

// The kernel that the convolution formula is applied to: flipped for correlation.
inline std::vector<float> effective_kernel(const float* k, int Kh, int Kw, operation op) {
  detail::check_kernel(k, Kh, Kw);
  switch (op) {
    case operation::convolution:
      return std::vector<float>(k, k + static_cast<long long>(Kh) * Kw);
    case operation::correlation:
      return flipped_kernel(k, Kh, Kw);
  }
  detail::fail("unknown operation " + std::to_string(static_cast<int>(op)));
}

// The checks a plan makes before it has seen an image. Throws std::invalid_argument naming
// the offending value for: a null kernel, sizes < 1, a NaN or Inf kernel value (with its row
// and column), 'valid' with a kernel larger than the image, a NaN or Inf constant_value
// (rejected even when the border does not use it: it can only be a caller's mistake).
// NaN/Inf in the image are data and propagate as they would through a direct sum.
inline void validate_plan(long long H, long long W, const float* kernel, int Kh, int Kw, const options& opt) {
  if (kernel == nullptr) detail::fail("kernel is a null pointer");
  detail::check_sizes(H, W, Kh, Kw);
  for (int i = 0; i < Kh; ++i)
    for (int j = 0; j < Kw; ++j) {
      const float v = kernel[static_cast<long long>(i) * Kw + j];
      if (!std::isfinite(v))
        detail::fail("kernel value at (row " + std::to_string(i) + ", col " + std::to_string(j) + ") is " +
                     detail::nonfinite_name(v));
    }
  if (!std::isfinite(opt.constant_value))
    detail::fail("constant_value is " + detail::nonfinite_name(opt.constant_value));
  make_geometry(H, W, Kh, Kw, opt.mode);  // throws for an empty 'valid' output
}

// The checks at the API boundary: validate_plan plus a null image.
inline void validate(const float* image, long long H, long long W, const float* kernel, int Kh, int Kw,
                     const options& opt) {
  if (image == nullptr) detail::fail("image is a null pointer");
  validate_plan(H, W, kernel, Kh, Kw, opt);
}

}  // namespace gpuconv::conv
