// Named kernels: sizes, sums, symmetry, the sign conventions (sobel against cv::Sobel on a
// ramp, laplacian/log negative at the centre), and one-line errors for bad parameters.
#include <catch2/catch_approx.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <cmath>

#include <opencv2/imgproc.hpp>

#include "convolve_image.hpp"
#include "errors.hpp"
#include "named_kernels.hpp"

using namespace gpuconv;
using namespace gpuconv::app;
using Catch::Matchers::ContainsSubstring;

namespace {

kernel named(const std::string& spec) {
  auto k = make_named_kernel(spec);
  REQUIRE(k.has_value());
  return *k;
}

float at(const kernel& k, int row, int col) { return k.values[std::size_t(row) * k.width + col]; }

bool point_symmetric(const kernel& k) {
  for (std::size_t i = 0; i < k.values.size(); ++i)
    if (std::abs(k.values[i] - k.values[k.values.size() - 1 - i]) > 1e-7f) return false;
  return true;
}

bool transpose_symmetric(const kernel& k) {
  for (int r = 0; r < k.height; ++r)
    for (int c = 0; c < k.width; ++c)
      if (std::abs(at(k, r, c) - at(k, c, r)) > 1e-7f) return false;
  return true;
}

}  // namespace

TEST_CASE("gaussian: SciPy's default size, sum 1, symmetric, peak at the centre", "[app]") {
  CHECK(named("gaussian:1").width == 9);     // 2 * round(4) + 1
  CHECK(named("gaussian:2").width == 17);
  CHECK(named("gaussian:0.3").width == 3);   // round(1.2) = 1
  CHECK(named("gaussian:0.1").width == 1);   // round(0.4) = 0: the identity
  CHECK(named("gaussian:1.5,7").width == 7);
  const kernel g = named("gaussian:1.3");
  CHECK(g.height == g.width);
  CHECK(g.sum() == Catch::Approx(1.0).epsilon(1e-6));
  CHECK(point_symmetric(g));
  CHECK(transpose_symmetric(g));
  const int c = g.width / 2;
  CHECK(at(g, c, c) > at(g, c, c + 1));
  // the outer product of exp(-x^2 / 2 sigma^2): ratio of neighbours on the axis
  CHECK(at(g, c, c + 1) / at(g, c, c) == Catch::Approx(std::exp(-1 / (2 * 1.3 * 1.3))).epsilon(1e-5));
}

TEST_CASE("box, disk, motion: sizes and sums", "[app]") {
  const kernel b = named("box:4");
  CHECK(b.width == 4);
  CHECK(b.values[5] == Catch::Approx(1.0 / 16));
  const kernel d = named("disk:2");
  CHECK(d.width == 5);
  CHECK(d.sum() == Catch::Approx(1.0));
  CHECK(at(d, 0, 0) == 0.f);                     // corner outside the disk
  CHECK(at(d, 0, 2) == Catch::Approx(1.0 / 13)); // 13 pixels with x^2 + y^2 <= 4
  CHECK(point_symmetric(d));

  const kernel m0 = named("motion:5,0");
  REQUIRE(m0.width == 5);
  for (int c = 0; c < 5; ++c) CHECK(at(m0, 2, c) == Catch::Approx(0.2));
  CHECK(at(m0, 1, 2) == 0.f);
  const kernel m90 = named("motion:5,90");  // vertical
  CHECK(at(m90, 0, 2) == Catch::Approx(0.2));
  CHECK(at(m90, 2, 0) == Catch::Approx(0.0).margin(1e-7));
  const kernel m45 = named("motion:7,45");  // counter-clockwise on screen: up and to the right
  CHECK(at(m45, 1, 5) > 0.05f);  // (col +2, row -2) lies on the line
  CHECK(at(m45, 1, 1) == 0.f);   // the other diagonal does not
  CHECK(m45.sum() == Catch::Approx(1.0));
  CHECK(point_symmetric(m45));
  const kernel m4 = named("motion:4,0");  // even length: half-weight ends
  REQUIRE(m4.width == 5);
  CHECK(at(m4, 2, 0) == Catch::Approx(0.125));
  CHECK(at(m4, 2, 2) == Catch::Approx(0.25));
}

TEST_CASE("laplacian, log, unsharp: sums and signs", "[app]") {
  const kernel l = named("laplacian");
  CHECK(l.values == std::vector<float>{0, 1, 0, 1, -4, 1, 0, 1, 0});
  const kernel lg = named("log:1.5");
  CHECK(lg.width == 13);
  CHECK(lg.sum() == Catch::Approx(0.0).margin(1e-6));
  CHECK(lg.values[lg.values.size() / 2] < 0);
  CHECK(point_symmetric(lg));
  const kernel u = named("unsharp:1,0.5");
  CHECK(u.sum() == Catch::Approx(1.0).epsilon(1e-6));
  CHECK(u.values[u.values.size() / 2] > 1);
}

TEST_CASE("sobel-x / sobel-y convolved have the sign of cv::Sobel", "[app]") {
  // a ramp growing to the right and, more slowly, downwards
  cv::Mat img(12, 16, CV_32FC1);
  for (int y = 0; y < img.rows; ++y)
    for (int x = 0; x < img.cols; ++x) img.at<float>(y, x) = 3.f * x + 1.f * y + 0.1f * (x * y % 5);
  for (const auto& [spec, dx] : {std::pair{"sobel-x", 1}, std::pair{"sobel-y", 0}}) {
    INFO(spec);
    cv::Mat expected;
    cv::Sobel(img, expected, CV_32F, dx, 1 - dx, 3, 1, 0, cv::BORDER_REFLECT_101);
    convolve_settings s;  // convolution, same, reflect101
    s.device = conv::backend::cpu;
    convolver c(named(spec), s);
    const cv::Mat out = convolve_image(img, c).image;
    CHECK(cv::norm(out, expected, cv::NORM_INF) < 1e-3);
    CHECK(out.at<float>(5, 5) > 0);
  }
}

TEST_CASE("named kernels: bad parameters are one-line usage errors naming the spec", "[app]") {
  const auto bad = GENERATE(as<std::string>{}, "gaussian", "gaussian:", "gaussian:0", "gaussian:-1", "gaussian:nan",
                            "gaussian:inf", "gaussian:1,4", "gaussian:1,0", "gaussian:1,3,5", "gaussian:x",
                            "gaussian:1,", "box:0", "box:2.5", "box:", "box:3,3", "disk:0", "motion:5",
                            "motion:0.5,10", "motion:5,nan", "sobel-x:1", "laplacian:3", "log:0", "unsharp:1",
                            "unsharp:1,-1", "gaussian:100000");
  INFO(bad);
  try {
    make_named_kernel(bad);
    FAIL("no exception for " << bad);
  } catch (const usage_error& e) {
    const std::string what = e.what();
    CHECK_THAT(what, ContainsSubstring("kernel '" + bad + "'"));
    CHECK(what.find('\n') == std::string::npos);
  }
}

// Found by fuzz/fuzz_named_kernel (scripts/fuzz.sh): huge sizes were converted to int before
// the size check (undefined behaviour: motion:4022222222222222222,5), and extreme parameters
// gave values that are not finite floats (unsharp with a huge AMOUNT; log and gaussian with
// a sigma whose square or fourth power underflows to 0).
TEST_CASE("named kernels: fuzzer regressions are usage errors, not undefined behaviour", "[app][fuzz]") {
  const auto bad = GENERATE(as<std::string>{}, "motion:4022222222222222222,5", "motion:1e300,0", "disk:1e300",
                            "disk:3e9", "gaussian:1e300", "unsharp:2555555555555555555555,6", "unsharp:1,1e300",
                            "log:1e-100", "gaussian:1e-200,3", "unsharp:1e-200,1");
  INFO(bad);
  try {
    const auto k = make_named_kernel(bad);
    FAIL("no exception for " << bad);
  } catch (const usage_error& e) {
    CHECK_THAT(std::string(e.what()), ContainsSubstring("kernel '" + bad + "'"));
  }
}

TEST_CASE("names that are not ours are not named kernels", "[app]") {
  CHECK_FALSE(make_named_kernel("blur:3").has_value());
  CHECK_FALSE(make_named_kernel("Gaussian:2").has_value());
  CHECK_FALSE(make_named_kernel("").has_value());
  CHECK(named_kernels_help().find("sobel-x") != std::string::npos);
}
