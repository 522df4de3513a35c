// Kernel files: text kernels (separators, comments, errors naming file, line and token),
// PSF images, and the order in which the KERNEL argument is resolved.
#include <catch2/catch_approx.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <sstream>

#include <opencv2/imgcodecs.hpp>

#include "errors.hpp"
#include "kernel_io.hpp"
#include "support.hpp"

using namespace gpuconv;
using namespace gpuconv::app;
using Catch::Matchers::ContainsSubstring;

namespace {

kernel parse(const std::string& text) {
  std::istringstream in(text);
  return parse_text_kernel(in, "k.txt");
}

// The message of the input_error that parsing `text` throws ("" if it does not throw).
std::string parse_error(const std::string& text) {
  try {
    parse(text);
  } catch (const input_error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("text kernels: spaces, tabs, commas, comments and blank lines", "[app]") {
  const kernel k = parse("# a comment line\n\n 1 2\t3 # trailing comment\n4,5,6\n\t7 ,8,\t9,\n\n# end\n");
  REQUIRE(k.height == 3);
  REQUIRE(k.width == 3);
  CHECK(k.values == std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8, 9});

  const kernel signs = parse("-1.5e0 +2 .25\r\n");  // CRLF, a '+' and a leading dot
  CHECK(signs.height == 1);
  CHECK(signs.values == std::vector<float>{-1.5f, 2.f, 0.25f});

  const kernel wide = parse("1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25\n");
  CHECK(wide.width == 25);
  CHECK(wide.height == 1);
}

TEST_CASE("text kernels: errors name the file, the line and the token", "[app]") {
  CHECK_THAT(parse_error("1 2 3\n4 5\n"), ContainsSubstring("k.txt") && ContainsSubstring("line 2") &&
                                              ContainsSubstring("2 values, expected 3"));
  CHECK_THAT(parse_error("# header\n1 2\n\n3 4 5\n"), ContainsSubstring("line 4") && ContainsSubstring("line 2"));
  CHECK_THAT(parse_error("1 2\n3 x4\n"), ContainsSubstring("line 2") && ContainsSubstring("'x4' is not a number"));
  CHECK_THAT(parse_error("hello world\n"), ContainsSubstring("line 1") && ContainsSubstring("'hello'"));
  CHECK_THAT(parse_error("1 nan\n"), ContainsSubstring("'nan' is not a finite number"));
  CHECK_THAT(parse_error("1\ninf\n"), ContainsSubstring("line 2") && ContainsSubstring("'inf'"));
  CHECK_THAT(parse_error("1e39\n"), ContainsSubstring("outside the float range"));
  CHECK_THAT(parse_error("1e999\n"), ContainsSubstring("outside the float range"));
  CHECK_THAT(parse_error("+-1\n"), ContainsSubstring("'+-1' is not a number"));
  CHECK_THAT(parse_error(""), ContainsSubstring("no kernel values"));
  CHECK_THAT(parse_error("# only\n\n  # comments\n"), ContainsSubstring("no kernel values"));
}

TEST_CASE("kernel argument: file, PSF image, named kernel, or an error", "[app]") {
  test::scratch_dir dir;
  const auto text = dir / "k.txt";
  test::write_file(text, "0 1 0\n1 -4 1\n0 1 0\n");
  const kernel k = resolve_kernel(text.string());
  CHECK(k.height == 3);
  CHECK(k.values[4] == -4.f);

  // a file named like a named kernel wins over the named kernel
  const auto tricky = dir / "box:3";
  test::write_file(tricky, "2\n");
  CHECK(resolve_kernel(tricky.string()).values == std::vector<float>{2.f});

  // a PSF image: gray, stored units, normalised to sum 1
  cv::Mat psf(3, 5, CV_8UC1, cv::Scalar(0));
  psf.at<uchar>(1, 1) = 100;
  psf.at<uchar>(1, 3) = 255;
  psf.at<uchar>(0, 0) = 45;
  REQUIRE(cv::imwrite((dir / "psf.png").string(), psf));
  const kernel p = resolve_kernel((dir / "psf.png").string());
  REQUIRE(p.height == 3);
  REQUIRE(p.width == 5);
  CHECK(p.sum() == Catch::Approx(1.0).epsilon(1e-6));
  CHECK(p.values[0] == Catch::Approx(45.0 / 400));
  CHECK(p.values[8] == Catch::Approx(255.0 / 400));

  // a black PSF cannot be normalised
  REQUIRE(cv::imwrite((dir / "black.png").string(), cv::Mat(4, 4, CV_8UC1, cv::Scalar(0))));
  CHECK_THROWS_AS(resolve_kernel((dir / "black.png").string()), input_error);
  // an image extension on a file that is not an image
  test::write_file(dir / "fake.png", "1 2 3\n");
  CHECK_THROWS_AS(resolve_kernel((dir / "fake.png").string()), input_error);

  CHECK(resolve_kernel("box:3").width == 3);
  try {
    resolve_kernel((dir / "missing.txt").string());
    FAIL("no exception");
  } catch (const input_error& e) {
    CHECK_THAT(std::string(e.what()), ContainsSubstring("no such file and not a named kernel"));
  }
  CHECK_THROWS_AS(resolve_kernel("blur:3"), input_error);
  CHECK_THROWS_AS(resolve_kernel("gaussian:-1"), usage_error);  // a named kernel with bad parameters
}

TEST_CASE("normalize (--normalize) scales to sum 1 and refuses a kernel that sums to ~0", "[app]") {
  kernel k = parse("1 2\n3 4\n");
  normalize(k);
  CHECK(k.sum() == Catch::Approx(1.0));
  CHECK(k.values[3] == Catch::Approx(0.4));
  kernel zero = parse("1 -1\n");
  CHECK_THROWS_AS(normalize(zero), usage_error);
  kernel tiny = parse("1 -1 1e-20\n");  // |sum| < 1e-12 sum|k|
  CHECK_THROWS_AS(normalize(tiny), usage_error);
  kernel negative = parse("-2 -2\n");
  normalize(negative);
  CHECK(negative.values[0] == Catch::Approx(0.5));
}
