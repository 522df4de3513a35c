// Convolution semantics (conv/semantics.hpp) and the direct reference (conv/reference.hpp):
// border_index against a loop transcription of OpenCV's borderInterpolate, the geometry of
// every mode, the validation messages, hand-derived outputs, the filter2D formula, and
// literal outputs of SciPy. Data are small integers, so every double sum is exact and the
// outputs are compared with ==.
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <climits>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "conv/reference.hpp"
#include "conv/semantics.hpp"
#include "support/reference.hpp"

using namespace gpuconv;
using conv::boundary;
using conv::operation;
using conv::output_mode;

// Both the exception type and the offending value in its message.
#define CHECK_REJECTS(expr, text)                                                   \
  do {                                                                              \
    CHECK_THROWS_AS(expr, std::invalid_argument);                                   \
    CHECK_THROWS_WITH(expr, Catch::Matchers::ContainsSubstring(text));              \
  } while (0)

namespace {

constexpr boundary all_borders[] = {boundary::zero,    boundary::constant,   boundary::replicate,
                                    boundary::reflect, boundary::reflect101, boundary::wrap};
constexpr output_mode all_modes[] = {output_mode::same, output_mode::full, output_mode::valid};

// OpenCV's borderInterpolate (modules/core/src/copy.cpp) with its reflect loop kept as is,
// and wrap done by whole steps of len: the slow, obviously-right version. zero and constant
// both give -1 outside, as BORDER_CONSTANT does.
int opencv_border_interpolate(long long p, int len, boundary b) {
  if (p >= 0 && p < len) return int(p);
  switch (b) {
    case boundary::replicate:
      return p < 0 ? 0 : len - 1;
    case boundary::reflect:
    case boundary::reflect101: {
      const int delta = b == boundary::reflect101;
      if (len == 1) return 0;
      do {
        p = p < 0 ? -p - 1 + delta : len - 1 - (p - len) - delta;
      } while (p < 0 || p >= len);
      return int(p);
    }
    case boundary::wrap:
      while (p < 0) p += len;
      while (p >= len) p -= len;
      return int(p);
    case boundary::zero:
    case boundary::constant:
      break;
  }
  return -1;
}

std::vector<float> random_ints(std::size_t count, std::uint64_t seed, int lo = -4, int hi = 4) {
  std::mt19937_64 g(seed);
  std::uniform_int_distribution<int> u(lo, hi);
  std::vector<float> v(count);
  for (auto& x : v) x = float(u(g));
  return v;
}

std::vector<double> convolve(const std::vector<float>& in, long long H, long long W, const std::vector<float>& k,
                             int Kh, int Kw, const conv::options& opt, int planes = 1) {
  const auto g = conv::make_geometry(H, W, Kh, Kw, opt.mode);
  std::vector<double> out(std::size_t(planes * g.out_h * g.out_w), std::nan(""));
  conv::direct_convolve(in.data(), H, W, planes, k.data(), Kh, Kw, opt, out.data());
  return out;
}

}  // namespace

// constexpr: the border rule can be evaluated at compile time (and, HOST_DEVICE, in kernels).
static_assert(conv::border_index(-1, 5, boundary::reflect101) == 1);
static_assert(conv::border_index(-1, 5, boundary::zero) == -1);

TEST_CASE("border_index matches OpenCV's borderInterpolate", "[conv]") {
  for (const boundary b : all_borders)
    for (int n = 1; n <= 9; ++n) {
      std::vector<long long> points = {-5000, 5000};  // far overshoot: many periods
      for (long long p = -3 * n - 5; p <= 4 * n + 5; ++p) points.push_back(p);
      for (const long long p : points) {
        INFO("border " << int(b) << ", n = " << n << ", p = " << p);
        CHECK(conv::border_index(p, n, b) == opencv_border_interpolate(p, n, b));
      }
    }
}

// floor_mod's add-or-subtract within [-m, 2m) and its remainder beyond give the same values.
TEST_CASE("floor_mod: a mod m from 0 to m - 1 for every a, near the period and far from it", "[conv]") {
  for (long long m = 1; m <= 9; ++m)
    for (long long a = -5 * m - 3; a <= 5 * m + 3; ++a) {
      INFO("a = " << a << ", m = " << m);
      CHECK(conv::detail::floor_mod(a, m) == ((a % m) + m) % m);
    }
  CHECK(conv::detail::floor_mod(-(1LL << 40) - 1, 1000) == 999 - ((1LL << 40) % 1000));
  CHECK(conv::detail::floor_mod(1LL << 40, 7) == (1LL << 40) % 7);
}

TEST_CASE("border_index hand-checked values", "[conv]") {
  // n = 5, abcde: reflect101 "dcb|abcde|dcb", reflect "cba|abcde|edc", wrap "cde|abcde|abc".
  CHECK(conv::border_index(-1, 5, boundary::reflect101) == 1);
  CHECK(conv::border_index(-2, 5, boundary::reflect101) == 2);
  CHECK(conv::border_index(5, 5, boundary::reflect101) == 3);
  CHECK(conv::border_index(6, 5, boundary::reflect101) == 2);
  CHECK(conv::border_index(-1, 5, boundary::reflect) == 0);
  CHECK(conv::border_index(-2, 5, boundary::reflect) == 1);
  CHECK(conv::border_index(5, 5, boundary::reflect) == 4);
  CHECK(conv::border_index(6, 5, boundary::reflect) == 3);
  CHECK(conv::border_index(-1, 5, boundary::wrap) == 4);
  CHECK(conv::border_index(5, 5, boundary::wrap) == 0);
  CHECK(conv::border_index(-6, 5, boundary::wrap) == 4);
  CHECK(conv::border_index(-1, 5, boundary::replicate) == 0);
  CHECK(conv::border_index(99, 5, boundary::replicate) == 4);
  for (const boundary b : {boundary::zero, boundary::constant}) {
    CHECK(conv::border_index(-1, 5, b) == -1);
    CHECK(conv::border_index(5, 5, b) == -1);
    CHECK(conv::border_index(2, 5, b) == 2);
  }
  // n = 1: reflect101 has no sample besides the edge, so everything maps to 0.
  for (const long long p : {-7LL, -1LL, 0LL, 1LL, 8LL}) CHECK(conv::border_index(p, 1, boundary::reflect101) == 0);
  // p = -5000, n = 3 (abc): reflect period 6, -5000 mod 6 = 4 -> 2*3-1-4 = 1;
  // reflect101 period 4, -5000 mod 4 = 0 -> 0; wrap -5000 mod 3 = 1.
  CHECK(conv::border_index(-5000, 3, boundary::reflect) == 1);
  CHECK(conv::border_index(-5000, 3, boundary::reflect101) == 0);
  CHECK(conv::border_index(-5000, 3, boundary::wrap) == 1);
  CHECK(conv::border_index(-5000, 3, boundary::replicate) == 0);
}

TEST_CASE("border_index is periodic for any overshoot", "[conv]") {
  // Overshoots far beyond any loop: p + q * period for q ~ 1e12, and the extremes of long long.
  const int n = GENERATE(1, 2, 3, 7, 1000);
  const long long q = 1000000000000LL;
  for (long long p = -2 * n; p <= 3 * n; ++p) {
    INFO("n = " << n << ", p = " << p);
    CHECK(conv::border_index(p + q * 2 * n, n, boundary::reflect) == conv::border_index(p, n, boundary::reflect));
    CHECK(conv::border_index(p - q * 2 * n, n, boundary::reflect) == conv::border_index(p, n, boundary::reflect));
    const long long period101 = n == 1 ? 1 : 2LL * n - 2;
    CHECK(conv::border_index(p + q * period101, n, boundary::reflect101) ==
          conv::border_index(p, n, boundary::reflect101));
    CHECK(conv::border_index(p - q * period101, n, boundary::reflect101) ==
          conv::border_index(p, n, boundary::reflect101));
    CHECK(conv::border_index(p + q * n, n, boundary::wrap) == conv::border_index(p, n, boundary::wrap));
    CHECK(conv::border_index(p - q * n, n, boundary::wrap) == conv::border_index(p, n, boundary::wrap));
  }
  for (const boundary b : {boundary::replicate, boundary::reflect, boundary::reflect101, boundary::wrap})
    for (const long long p : {std::numeric_limits<long long>::min(), std::numeric_limits<long long>::max()}) {
      const int i = conv::border_index(p, n, b);
      CHECK((i >= 0 && i < n));
    }
}

TEST_CASE("geometry of every mode for odd, even and non-square kernels", "[conv]") {
  struct row {
    long long H, W;
    int Kh, Kw;
    output_mode mode;
    long long out_h, out_w;
    int oy, ox;
  };
  const row rows[] = {
      // odd 3x3: same centres the kernel, (oy, ox) = ((3-1)/2, (3-1)/2)
      {7, 9, 3, 3, output_mode::same, 7, 9, 1, 1},
      {7, 9, 3, 3, output_mode::full, 9, 11, 0, 0},
      {7, 9, 3, 3, output_mode::valid, 5, 7, 2, 2},
      // even 4x2: (4-1)/2 = 1, (2-1)/2 = 0
      {7, 9, 4, 2, output_mode::same, 7, 9, 1, 0},
      {7, 9, 4, 2, output_mode::full, 10, 10, 0, 0},
      {7, 9, 4, 2, output_mode::valid, 4, 8, 3, 1},
      // 1x6 row kernel
      {7, 9, 1, 6, output_mode::same, 7, 9, 0, 2},
      {7, 9, 1, 6, output_mode::full, 7, 14, 0, 0},
      {7, 9, 1, 6, output_mode::valid, 7, 4, 0, 5},
      // kernel as large as the image: valid gives one sample
      {5, 4, 5, 4, output_mode::valid, 1, 1, 4, 3},
      // kernel larger than the image: same and full are still defined
      {3, 2, 6, 5, output_mode::same, 3, 2, 2, 2},
      {3, 2, 6, 5, output_mode::full, 8, 6, 0, 0},
  };
  for (const row& r : rows) {
    INFO("H x W = " << r.H << " x " << r.W << ", Kh x Kw = " << r.Kh << " x " << r.Kw << ", mode " << int(r.mode));
    const conv::geometry g = conv::make_geometry(r.H, r.W, r.Kh, r.Kw, r.mode);
    CHECK(g.out_h == r.out_h);
    CHECK(g.out_w == r.out_w);
    CHECK(g.oy == r.oy);
    CHECK(g.ox == r.ox);
  }
}

TEST_CASE("make_geometry rejects empty shapes", "[conv]") {
  CHECK_REJECTS(conv::make_geometry(0, 5, 3, 3, output_mode::same), "H = 0");
  CHECK_REJECTS(conv::make_geometry(5, -2, 3, 3, output_mode::full), "W = -2");
  CHECK_REJECTS(conv::make_geometry(5, 5, 0, 3, output_mode::same), "Kh = 0");
  CHECK_REJECTS(conv::make_geometry(5, 5, 3, -1, output_mode::same), "Kw = -1");
  CHECK_REJECTS(conv::make_geometry(3000000000LL, 5, 3, 3, output_mode::same), "H = 3000000000");
  CHECK_REJECTS(conv::make_geometry(4, 9, 5, 3, output_mode::valid), "Kh x Kw = 5 x 3");
  CHECK_REJECTS(conv::make_geometry(4, 9, 5, 3, output_mode::valid), "H x W = 4 x 9");
  CHECK_REJECTS(conv::make_geometry(9, 4, 3, 5, output_mode::valid), "Kh x Kw = 3 x 5");
}

TEST_CASE("validate names the offending value", "[conv]") {
  const std::vector<float> image(4 * 9, 1.f);
  std::vector<float> kernel(3 * 3, 1.f);
  const conv::options opt;
  CHECK_NOTHROW(conv::validate(image.data(), 4, 9, kernel.data(), 3, 3, opt));

  CHECK_REJECTS(conv::validate(nullptr, 4, 9, kernel.data(), 3, 3, opt), "image is a null pointer");
  CHECK_REJECTS(conv::validate(image.data(), 4, 9, nullptr, 3, 3, opt), "kernel is a null pointer");
  CHECK_REJECTS(conv::validate(image.data(), 0, 9, kernel.data(), 3, 3, opt), "H = 0");
  CHECK_REJECTS(conv::validate(image.data(), 4, -9, kernel.data(), 3, 3, opt), "W = -9");
  CHECK_REJECTS(conv::validate(image.data(), 4, 9, kernel.data(), 0, 3, opt), "Kh = 0");
  CHECK_REJECTS(conv::validate(image.data(), 4, 9, kernel.data(), 3, -3, opt), "Kw = -3");

  kernel[1 * 3 + 2] = std::nanf("");
  CHECK_REJECTS(conv::validate(image.data(), 4, 9, kernel.data(), 3, 3, opt), "(row 1, col 2) is NaN");
  kernel[1 * 3 + 2] = 1.f;
  kernel[0] = std::numeric_limits<float>::infinity();
  CHECK_REJECTS(conv::validate(image.data(), 4, 9, kernel.data(), 3, 3, opt), "(row 0, col 0) is +Inf");
  kernel[0] = 1.f;
  kernel[2 * 3 + 1] = -std::numeric_limits<float>::infinity();
  CHECK_REJECTS(conv::validate(image.data(), 4, 9, kernel.data(), 3, 3, opt), "(row 2, col 1) is -Inf");
  kernel[2 * 3 + 1] = 1.f;

  conv::options valid;
  valid.mode = output_mode::valid;
  const std::vector<float> tall(5 * 3, 1.f);
  CHECK_REJECTS(conv::validate(image.data(), 4, 9, tall.data(), 5, 3, valid), "Kh x Kw = 5 x 3");
  CHECK_NOTHROW(conv::validate(image.data(), 4, 9, kernel.data(), 3, 3, valid));

  conv::options bad_constant;
  bad_constant.border = boundary::constant;
  bad_constant.constant_value = std::nanf("");
  CHECK_REJECTS(conv::validate(image.data(), 4, 9, kernel.data(), 3, 3, bad_constant), "constant_value is NaN");
  bad_constant.constant_value = -std::numeric_limits<float>::infinity();
  CHECK_REJECTS(conv::validate(image.data(), 4, 9, kernel.data(), 3, 3, bad_constant), "constant_value is -Inf");
}

TEST_CASE("kernel flips and the reference reject bad arguments", "[conv]") {
  const std::vector<float> k = {1, 2, 3, 4, 5, 6};  // 2x3
  CHECK(conv::flipped_kernel(k.data(), 2, 3) == std::vector<float>{6, 5, 4, 3, 2, 1});
  CHECK(conv::effective_kernel(k.data(), 2, 3, operation::convolution) == k);
  CHECK(conv::effective_kernel(k.data(), 2, 3, operation::correlation) == std::vector<float>{6, 5, 4, 3, 2, 1});
  CHECK_REJECTS(conv::flipped_kernel(nullptr, 2, 3), "kernel is a null pointer");
  CHECK_REJECTS(conv::effective_kernel(k.data(), 0, 3, operation::correlation), "Kh = 0");

  const std::vector<float> image(6, 1.f);
  std::vector<double> out(6);
  CHECK_REJECTS(conv::direct_convolve(image.data(), 2, 3, 0, k.data(), 2, 3, {}, out.data()), "planes = 0");
  CHECK_REJECTS(conv::direct_convolve(image.data(), 2, 3, 1, k.data(), 2, 3, {}, nullptr), "out is a null pointer");
}

TEST_CASE("direct_convolve on hand-computed examples", "[conv]") {
  conv::options zero;
  zero.border = boundary::zero;

  SECTION("1x3 image, 1x3 kernel, same, zero boundary") {
    // Kw = 3: ox = (3-1)/2 = 1, so out(x) = k0*in(x+1) + k1*in(x) + k2*in(x-1) = in(x+1) - in(x-1):
    //   x=0: 2 - 0 = 2,  x=1: 3 - 1 = 2,  x=2: 0 - 2 = -2.
    // Correlation uses the flipped kernel [-1, 0, 1]: in(x-1) - in(x+1), the negated sequence.
    const std::vector<float> in = {1, 2, 3}, k = {1, 0, -1};
    CHECK(convolve(in, 1, 3, k, 1, 3, zero) == std::vector<double>{2, 2, -2});
    conv::options corr = zero;
    corr.op = operation::correlation;
    CHECK(convolve(in, 1, 3, k, 1, 3, corr) == std::vector<double>{-2, -2, 2});
  }

  SECTION("constant boundary uses constant_value; zero ignores it") {
    // [1 1 1] same: out(x) = in(x-1) + in(x) + in(x+1), the outside value at both ends.
    const std::vector<float> in = {1, 2, 3}, k = {1, 1, 1};
    conv::options c;
    c.border = boundary::constant;
    c.constant_value = 10.f;
    CHECK(convolve(in, 1, 3, k, 1, 3, c) == std::vector<double>{13, 6, 15});
    c.border = boundary::zero;
    CHECK(convolve(in, 1, 3, k, 1, 3, c) == std::vector<double>{3, 6, 5});
  }

  SECTION("full on zero boundary is numpy.convolve(a, v, 'full') on rows") {
    // numpy.convolve([1, 2, 3], [1, 0, -1]) = [1, 2, 2, -2, -3]
    zero.mode = output_mode::full;
    CHECK(convolve({1, 2, 3}, 1, 3, {1, 0, -1}, 1, 3, zero) == std::vector<double>{1, 2, 2, -2, -3});
    // numpy's definition c[n] = sum_m a[m] v[n - m], on random rows, kernels shorter and longer.
    const auto seed = test::fresh_seed();
    INFO("seed = " << seed);
    for (const auto& [W, Kw] : {std::pair{7, 3}, std::pair{8, 4}, std::pair{5, 1}, std::pair{3, 6}}) {
      const auto a = random_ints(W, seed + W), v = random_ints(Kw, seed + 100 + Kw);
      std::vector<double> expect(W + Kw - 1, 0.0);
      for (int n = 0; n < W + Kw - 1; ++n)
        for (int m = 0; m < W; ++m)
          if (n - m >= 0 && n - m < Kw) expect[n] += double(a[m]) * v[n - m];
      INFO("W = " << W << ", Kw = " << Kw);
      CHECK(convolve(a, 1, W, v, 1, Kw, zero) == expect);
    }
  }

  SECTION("even 2x2 kernel, same, replicate boundary") {
    // Kh = Kw = 2: oy = ox = (2-1)/2 = 0, so out(y, x) = sum_{i,j in {0,1}} in(y-i, x-j), the 2x2
    // block ending at (y, x), with rows and columns below 0 clamped to 0. On 1..9:
    //   (0,0): 1+1+1+1 = 4    (0,1): 2+1+2+1 = 6    (0,2): 3+2+3+2 = 10
    //   (1,0): 4+4+1+1 = 10   (1,1): 5+4+2+1 = 12   (1,2): 6+5+3+2 = 16
    //   (2,0): 7+7+4+4 = 22   (2,1): 8+7+5+4 = 24   (2,2): 9+8+6+5 = 28
    // (cv::filter2D with BORDER_REPLICATE and the default anchor (1, 1) gives the same.)
    conv::options rep;
    rep.border = boundary::replicate;
    const std::vector<float> in = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    CHECK(convolve(in, 3, 3, {1, 1, 1, 1}, 2, 2, rep) == std::vector<double>{4, 6, 10, 10, 12, 16, 22, 24, 28});
  }
}

TEST_CASE("correlation with k is convolution with the flipped k", "[conv]") {
  const auto seed = test::fresh_seed();
  const int Kh = GENERATE(1, 2, 3, 4), Kw = GENERATE(1, 3, 4);
  const long long H = 6, W = 7;
  INFO("Kh x Kw = " << Kh << " x " << Kw << ", seed = " << seed);
  const auto in = random_ints(2 * H * W, seed), k = random_ints(std::size_t(Kh) * Kw, seed + 1);
  const auto flipped = conv::flipped_kernel(k.data(), Kh, Kw);
  for (const output_mode m : all_modes)
    for (const boundary b : all_borders) {
      INFO("mode " << int(m) << ", border " << int(b));
      conv::options corr{operation::correlation, m, b, 3.f};
      conv::options conv_flipped{operation::convolution, m, b, 3.f};
      CHECK(convolve(in, H, W, k, Kh, Kw, corr, 2) == convolve(in, H, W, flipped, Kh, Kw, conv_flipped, 2));
    }
}

TEST_CASE("direct_convolve treats planes independently", "[conv]") {
  const auto seed = test::fresh_seed();
  INFO("seed = " << seed);
  const long long H = 5, W = 4;
  const int Kh = 3, Kw = 2;
  const auto in = random_ints(3 * H * W, seed), k = random_ints(Kh * Kw, seed + 1);
  for (const output_mode m : all_modes) {
    INFO("mode " << int(m));
    const conv::options opt{operation::convolution, m, boundary::reflect, 0.f};
    const auto all = convolve(in, H, W, k, Kh, Kw, opt, 3);
    const std::size_t out_plane = all.size() / 3;
    for (int p = 0; p < 3; ++p) {
      const std::vector<float> plane(in.begin() + p * H * W, in.begin() + (p + 1) * H * W);
      CHECK(convolve(plane, H, W, k, Kh, Kw, opt) ==
            std::vector<double>(all.begin() + p * out_plane, all.begin() + (p + 1) * out_plane));
    }
  }
}

TEST_CASE("same mode is cv::filter2D's formula with the default anchor", "[conv]") {
  // filter2D: dst(y, x) = sum_{i,j} k(i, j) src_ext(y + i - Kh/2, x + j - Kw/2), written here
  // from that formula alone. Correlation is filter2D on k; convolution is filter2D on the
  // flipped kernel. Kernels up to larger than the image exercise far overshoots.
  const auto seed = test::fresh_seed();
  const int Kh = GENERATE(1, 2, 3, 4, 7), Kw = GENERATE(1, 2, 5, 6);
  const int H = 4, W = 5;
  INFO("Kh x Kw = " << Kh << " x " << Kw << ", seed = " << seed);
  const auto in = random_ints(std::size_t(H) * W, seed), k = random_ints(std::size_t(Kh) * Kw, seed + 1);
  for (const boundary b : all_borders)
    for (const operation op : {operation::convolution, operation::correlation}) {
      INFO("border " << int(b) << ", op " << int(op));
      const conv::options opt{op, output_mode::same, b, -2.f};
      const auto kk = op == operation::correlation ? k : conv::flipped_kernel(k.data(), Kh, Kw);
      const double outside = b == boundary::constant ? -2.0 : 0.0;
      std::vector<double> expect(std::size_t(H) * W, 0.0);
      for (int y = 0; y < H; ++y)
        for (int x = 0; x < W; ++x)
          for (int i = 0; i < Kh; ++i)
            for (int j = 0; j < Kw; ++j) {
              const int r = opencv_border_interpolate(y + i - Kh / 2, H, b);
              const int c = opencv_border_interpolate(x + j - Kw / 2, W, b);
              expect[y * W + x] += double(kk[i * Kw + j]) * (r < 0 || c < 0 ? outside : double(in[r * W + c]));
            }
      CHECK(convolve(in, H, W, k, Kh, Kw, opt) == expect);
    }
}

TEST_CASE("zero boundary matches SciPy's fftconvolve and correlate", "[conv]") {
  // Produced by SciPy 1.17.1 (NumPy 2.4.6) with this snippet, its lists pasted as C++
  // initialisers; the FFT results are within 1e-9 of integers and rounded, so they are exact.
  // scipy.signal.correlate, not correlate2d: the latter's 'same' is shifted by one sample
  // along axes of even kernel size (Kh = 4 below).
  //
  //   import numpy as np, scipy.signal as ss
  //   rng = np.random.default_rng(2024)
  //   for name, H, W, Kh, Kw, op in [("odd 3x3", 5, 6, 3, 3, "convolution"),
  //                                  ("even 2x4", 5, 7, 2, 4, "convolution"),
  //                                  ("mixed 4x3", 6, 5, 4, 3, "correlation")]:
  //       a = rng.integers(-4, 5, (H, W)).astype(float)
  //       k = rng.integers(-3, 4, (Kh, Kw)).astype(float)
  //       print(name, a.astype(int).ravel().tolist(), k.astype(int).ravel().tolist())
  //       for mode in ("same", "full", "valid"):
  //           r = (ss.fftconvolve(a, k, mode=mode) if op == "convolution"
  //                else ss.correlate(a, k, mode=mode, method="fft"))
  //           assert np.abs(r - np.rint(r)).max() < 1e-9
  //           print(name, mode, r.shape, np.rint(r).astype(int).ravel().tolist())
  struct scipy_output {
    output_mode mode;
    long long out_h, out_w;
    std::vector<double> values;
  };
  struct scipy_case {
    const char* name;
    long long H, W;
    std::vector<float> image;
    int Kh, Kw;
    std::vector<float> kernel;
    operation op;
    std::vector<scipy_output> outputs;
  };
  // clang-format off
  const scipy_case cases[] = {
    {"odd 3x3 convolution", 5, 6, {-2, 2, -4, -3, -2, -2, 4, 3, 4, 4, -4, -3, 3, -4, -3, -3, 4, -1, -2, -3, 0, 1, 3, 1, 4, -4, 0, 1, 2, -4},
     3, 3, {-2, 0, -3, 3, 1, 2, 0, 1, -1}, operation::convolution,
     {
      {output_mode::same, 5, 6, {-2, -34, -26, -21, -20, 6, 19, 24, 34, 2, 7, -23, 1, -2, -12, -3, -18, -1, 0, -26, 8, 6, 20, -4, -10, 3, -2, 8, -6, -2}},
      {output_mode::full, 7, 8, {4, -4, 14, 0, 16, 13, 6, 6, -14, -2, -34, -26, -21, -20, 6, 5, 6, 19, 24, 34, 2, 7, -23, -1, 13, 1, -2, -12, -3, -18, -1, -2, -14, 0, -26, 8, 6, 20, -4, 15, 12, -10, 3, -2, 8, -6, -2, -9, 0, 4, -8, 4, 1, 1, -6, 4}},
      {output_mode::valid, 3, 4, {24, 34, 2, 7, -2, -12, -3, -18, -26, 8, 6, 20}},
     }},
    {"even 2x4 convolution", 5, 7, {-2, -3, -3, 2, -1, 3, -2, 2, 3, 3, -3, -1, -2, 3, 3, -1, -2, -4, -2, -3, -4, 3, 0, 4, -2, -1, 4, 1, -2, -1, 2, -1, 0, 0, 0},
     2, 4, {0, 3, -2, 3, -2, -3, -1, -2}, operation::convolution,
     {
      {output_mode::same, 5, 7, {-6, -5, -9, 3, -16, 17, -15, 18, 22, 21, -1, 13, -21, 15, -3, -26, -5, -9, 0, -10, -17, 2, -2, 30, 6, 33, 35, 11, -15, -10, -12, -6, -3, -12, -5}},
      {output_mode::full, 6, 10, {0, -6, -5, -9, 3, -16, 17, -15, 13, -6, 4, 18, 22, 21, -1, 13, -21, 15, -16, 13, -4, -3, -26, -5, -9, 0, -10, -17, 0, -18, -6, 2, -2, 30, 6, 33, 35, 11, 20, 11, -6, -15, -10, -12, -6, -3, -12, -5, -9, -2, 4, 8, 1, 1, 3, -3, 2, 0, 0, 0}},
      {output_mode::valid, 4, 4, {21, -1, 13, -21, -5, -9, 0, -10, 30, 6, 33, 35, -12, -6, -3, -12}},
     }},
    {"mixed 4x3 correlation", 6, 5, {1, -3, -3, 4, 3, 0, 4, -1, -4, 3, -4, -1, 0, 2, -3, -2, -4, -4, -3, 2, 0, -1, 2, -1, 4, -2, 2, -2, 1, 1},
     4, 3, {3, -1, -3, -1, 1, -2, 3, 0, 0, 1, 0, -1}, operation::correlation,
     {
      {output_mode::same, 6, 5, {-4, 4, -1, -13, 8, 8, -2, 1, 1, -11, 4, 11, -19, -37, 19, -13, -6, 10, -14, -30, 11, -5, -5, 7, 12, 16, -1, 12, -32, -3}},
      {output_mode::full, 9, 7, {-1, 3, 4, -7, -6, 4, 3, 0, -4, 4, -1, -13, 8, 12, 2, 8, -2, 1, 1, -11, 3, -1, 4, 11, -19, -37, 19, -1, 8, -13, -6, 10, -14, -30, 22, 18, 11, -5, -5, 7, 12, 2, 6, 16, -1, 12, -32, -3, 5, 4, -3, 3, -8, -4, -7, 11, 6, -4, -2, 5, -10, 2, 3}},
      {output_mode::valid, 3, 3, {11, -19, -37, -6, 10, -14, -5, -5, 7}},
     }},
  };
  // clang-format on
  for (const scipy_case& c : cases)
    for (const scipy_output& o : c.outputs) {
      INFO(c.name << ", mode " << int(o.mode));
      const conv::options opt{c.op, o.mode, boundary::zero, 0.f};
      const auto g = conv::make_geometry(c.H, c.W, c.Kh, c.Kw, o.mode);
      CHECK(g.out_h == o.out_h);
      CHECK(g.out_w == o.out_w);
      CHECK(convolve(c.image, c.H, c.W, c.kernel, c.Kh, c.Kw, opt) == o.values);
    }
}
