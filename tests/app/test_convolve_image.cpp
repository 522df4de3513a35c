// One-image convolution against independent references: conv/reference.hpp's direct
// double-precision convolution + round half to even + saturation, and cv::filter2D.
//
// Why off-by-one is allowed on a few values: the FFT result carries an fp32 error of ~1e-6
// of the magnitudes summed (~1e-4 for 8-bit data), so when the exact value lies within that
// of a half-way point x.5 the two roundings can land on neighbouring integers. Such values
// are rare (random data puts ~2e-4 of them within 1e-4 of a tie); the tests allow |diff| <= 1
// on at most 0.1% of the values and require equality everywhere else.
#include <catch2/catch_approx.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>

#include <cmath>

#include <opencv2/imgproc.hpp>

#include "conv/reference.hpp"
#include "convolve_image.hpp"
#include "errors.hpp"
#include "named_kernels.hpp"
#include "fft/device/cuda_check.hpp"
#include "support.hpp"

using namespace gpuconv;
using namespace gpuconv::app;

namespace {

using test::make_kernel;

// Direct convolution of every channel of `img` (any depth) in double: a CV_64FC(n) image.
cv::Mat direct(const cv::Mat& img, const kernel& k, const conv::options& o) {
  const int n = img.channels();
  cv::Mat f;
  img.convertTo(f, CV_32F);
  std::vector<cv::Mat> planes;
  cv::split(f, planes);
  const auto g = conv::make_geometry(img.rows, img.cols, k.height, k.width, o.mode);
  std::vector<cv::Mat> outs;
  for (int c = 0; c < n; ++c) {
    cv::Mat p = planes[c].clone(), out(int(g.out_h), int(g.out_w), CV_64F);
    conv::direct_convolve(p.ptr<float>(), img.rows, img.cols, 1, k.values.data(), k.height, k.width, o,
                          out.ptr<double>());
    outs.push_back(out);
  }
  cv::Mat merged;
  cv::merge(outs, merged);
  return merged;
}

// Rounds half to even and saturates to `depth`, counting pixels with any channel clipped.
cv::Mat round_saturate(const cv::Mat& exact, int depth, long long* clipped = nullptr) {
  cv::Mat out(exact.size(), CV_MAKETYPE(depth, exact.channels()));
  const double lo = 0, hi = depth == CV_8U ? 255 : 65535;
  long long count = 0;
  const int n = exact.channels();
  for (int y = 0; y < exact.rows; ++y)
    for (int x = 0; x < exact.cols; ++x) {
      bool clip = false;
      for (int c = 0; c < n; ++c) {
        double r = std::nearbyint(exact.ptr<double>(y)[x * n + c]);
        if (r < lo || r > hi) clip = true;
        r = std::min(hi, std::max(lo, r));
        if (depth == CV_8U)
          out.ptr<uchar>(y)[x * n + c] = uchar(r);
        else
          out.ptr<ushort>(y)[x * n + c] = ushort(r);
      }
      count += clip;
    }
  if (clipped) *clipped = count;
  return out;
}

struct diff_stats {
  double max_abs = 0;
  long long differing = 0, total = 0;
};

diff_stats compare(const cv::Mat& a, const cv::Mat& b) {
  REQUIRE(a.size() == b.size());
  REQUIRE(a.type() == b.type());
  cv::Mat da, db, d;
  a.convertTo(da, CV_64F);
  b.convertTo(db, CV_64F);
  cv::absdiff(da, db, d);
  diff_stats s;
  cv::minMaxLoc(d.reshape(1), nullptr, &s.max_abs);
  s.differing = cv::countNonZero(d.reshape(1));
  s.total = d.total() * d.channels();
  return s;
}

// Equal except for off-by-one roundings of near-ties on < 0.1% of the values (top of file).
void check_rounded_equal(const cv::Mat& got, const cv::Mat& expected) {
  const diff_stats s = compare(got, expected);
  INFO("max |diff| " << s.max_abs << ", " << s.differing << " of " << s.total << " values differ");
  CHECK(s.max_abs <= 1);
  CHECK(s.differing * 1000 <= s.total);
}

convolve_settings cpu_settings() {
  convolve_settings s;
  s.device = conv::backend::cpu;
  return s;
}

output_image run(const cv::Mat& img, const kernel& k, const convolve_settings& s) {
  convolver c(k, s);
  return convolve_image(img, c);
}

}  // namespace

TEST_CASE("8-bit RGB: direct reference + round half to even + saturate, every mode and boundary", "[app]") {
  const cv::Mat img = test::test_image(37, 52, CV_8UC3, 5);
  const auto kh = GENERATE(1, 3, 4, 7);
  // Sums to 1.6: bright values clip at 255. Not 1.15: a flat patch of value n then gives
  // n * 1.15, an exact tie for n = 10, 30, ... (16 n is never 10 m + 5, so 1.6 gives none).
  const kernel k = make_kernel(kh, 5, 100 + kh, 1.6);
  for (auto mode : {conv::output_mode::same, conv::output_mode::full, conv::output_mode::valid})
    for (auto border : {conv::boundary::zero, conv::boundary::constant, conv::boundary::replicate,
                        conv::boundary::reflect, conv::boundary::reflect101, conv::boundary::wrap})
      for (auto op : {conv::operation::convolution, conv::operation::correlation}) {
        convolve_settings s = cpu_settings();
        s.semantics = {op, mode, border, 77.f};
        INFO("kernel " << kh << "x5, mode " << int(mode) << ", border " << int(border) << ", op " << int(op));
        const output_image got = run(img, k, s);
        long long clipped = 0;
        const cv::Mat expected = round_saturate(direct(img, k, s.semantics), CV_8U, &clipped);
        check_rounded_equal(got.image, expected);
        CHECK(std::abs(got.clipped - clipped) <= 1 + clipped / 1000);
        if (kh == 7 && mode == conv::output_mode::same) CHECK(clipped > 0);  // the clipping path is exercised
      }
}

TEST_CASE("8-bit --correlate --boundary reflect101 equals cv::filter2D(img, -1, k)", "[app]") {
  const auto channels = GENERATE(1, 3, 4);
  const cv::Mat img = test::test_image(64, 80, CV_8UC(channels), 9);
  const kernel k = make_kernel(5, 3, 31, 1.0);
  convolve_settings s = cpu_settings();
  s.semantics.op = conv::operation::correlation;
  s.alpha = alpha_mode::separate;  // filter2D treats the 4th channel like the others
  cv::Mat expected;
  cv::filter2D(img, expected, -1, cv::Mat(k.height, k.width, CV_32F, const_cast<float*>(k.values.data())));
  INFO(channels << " channels");
  check_rounded_equal(run(img, k, s).image, expected);
}

TEST_CASE("16-bit and float images keep their units; float is not rounded", "[app]") {
  const kernel k = make_kernel(3, 3, 7, 1.0);
  const convolve_settings s = cpu_settings();
  const cv::Mat img16 = test::test_image(40, 33, CV_16UC1, 2);
  check_rounded_equal(run(img16, k, s).image, round_saturate(direct(img16, k, s.semantics), CV_16U));

  const cv::Mat img32 = test::test_image(40, 33, CV_32FC3, 3);
  const output_image out = run(img32, k, s);
  REQUIRE(out.image.type() == CV_32FC3);
  cv::Mat expected;
  direct(img32, k, s.semantics).convertTo(expected, CV_32F);
  CHECK(cv::norm(out.image, expected, cv::NORM_INF) < 1e-5);
  CHECK(out.clipped == 0);
}

TEST_CASE("depth (--depth) converts without rescaling; --scale and --offset apply before rounding", "[app]") {
  const cv::Mat img = test::test_image(30, 30, CV_8UC3, 4);
  const kernel k = make_kernel(3, 3, 8, 1.0);
  convolve_settings s = cpu_settings();
  const cv::Mat exact = direct(img, k, s.semantics);

  s.depth = output_depth::u16;  // 8 -> 16: values stay in 0..255 units
  const output_image o16 = run(img, k, s);
  REQUIRE(o16.image.depth() == CV_16U);
  check_rounded_equal(o16.image, round_saturate(exact, CV_16U));

  s.depth = output_depth::f32;
  const output_image of = run(img, k, s);
  cv::Mat exact32;
  exact.convertTo(exact32, CV_32F);
  CHECK(cv::norm(of.image, exact32, cv::NORM_INF) < 1e-3);

  // 16 -> 8 saturates: most pixels clip, and are counted
  const cv::Mat img16 = test::test_image(30, 30, CV_16UC1, 6);
  s.depth = output_depth::u8;
  const output_image o8 = run(img16, k, s);
  long long clipped = 0;
  const cv::Mat expected8 = round_saturate(direct(img16, k, s.semantics), CV_8U, &clipped);
  check_rounded_equal(o8.image, expected8);
  CHECK(clipped > 800);
  CHECK(std::abs(o8.clipped - clipped) <= 1);

  // out = S * conv + B, then rounding: a derivative kernel offset to mid-grey
  s.depth = output_depth::same;
  s.scale = 0.5;
  s.offset = 128.25;  // integer conv * 0.5 + 0.25 is never a tie x.5
  kernel dx;
  dx.height = 1;
  dx.width = 3;
  dx.values = {1, 0, -1};
  const cv::Mat expected = round_saturate(direct(img, dx, s.semantics) * 0.5 + cv::Scalar::all(128.25), CV_8U);
  check_rounded_equal(run(img, dx, s).image, expected);
}

TEST_CASE("alpha: separate, keep and premultiply", "[app]") {
  cv::Mat img = test::test_image(48, 40, CV_8UC4, 11);
  // alpha 64..255 (well conditioned), with a fully transparent block
  for (int y = 0; y < img.rows; ++y)
    for (int x = 0; x < img.cols; ++x) {
      auto& px = img.at<cv::Vec4b>(y, x);
      px[3] = (x < 12 && y < 12) ? 0 : uchar(64 + (x * 191) / (img.cols - 1));
    }
  const kernel k = make_kernel(5, 5, 12, 1.0);
  convolve_settings s = cpu_settings();
  const cv::Mat exact = direct(img, k, s.semantics);

  SECTION("separate: every channel convolved on its own") {
    s.alpha = alpha_mode::separate;
    check_rounded_equal(run(img, k, s).image, round_saturate(exact, CV_8U));
  }
  SECTION("keep: colour convolved, alpha copied bit for bit") {
    s.alpha = alpha_mode::keep;
    const cv::Mat out = run(img, k, s).image;
    std::vector<cv::Mat> got, in, ref;
    cv::split(out, got);
    cv::split(img, in);
    cv::split(round_saturate(exact, CV_8U), ref);
    CHECK(cv::countNonZero(got[3] != in[3]) == 0);
    for (int c = 0; c < 3; ++c) check_rounded_equal(got[c], ref[c]);
  }
  SECTION("keep with mode full: alpha from the input under the kernel centre, through the boundary") {
    s.alpha = alpha_mode::keep;
    s.semantics.mode = conv::output_mode::full;
    s.semantics.border = conv::boundary::replicate;
    const cv::Mat out = run(img, k, s).image;
    REQUIRE(out.rows == img.rows + 4);
    cv::Mat padded;  // full output (y, x) is centred on input (y - 2, x - 2)
    cv::copyMakeBorder(img, padded, 2, 2, 2, 2, cv::BORDER_REPLICATE);
    std::vector<cv::Mat> got, want;
    cv::split(out, got);
    cv::split(padded, want);
    CHECK(cv::countNonZero(got[3] != want[3]) == 0);
  }
  SECTION("premultiply: conv(colour * alpha) / conv(alpha), transparent stays transparent") {
    cv::Mat pre(img.size(), CV_64FC4);
    for (int y = 0; y < img.rows; ++y)
      for (int x = 0; x < img.cols; ++x) {
        const auto& px = img.at<cv::Vec4b>(y, x);
        const double a = px[3] / 255.0;
        pre.at<cv::Vec4d>(y, x) = cv::Vec4d(px[0] * a, px[1] * a, px[2] * a, px[3]);
      }
    cv::Mat pre32;
    pre.convertTo(pre32, CV_32F);
    const cv::Mat conv_pre = direct(pre32, k, s.semantics);
    cv::Mat expected_exact(conv_pre.size(), CV_64FC4);
    for (int y = 0; y < img.rows; ++y)
      for (int x = 0; x < img.cols; ++x) {
        const cv::Vec4d v = conv_pre.at<cv::Vec4d>(y, x);
        const double w = v[3] >= 0.5 ? 255.0 / v[3] : 0;
        expected_exact.at<cv::Vec4d>(y, x) = cv::Vec4d(v[0] * w, v[1] * w, v[2] * w, v[3]);
      }
    const cv::Mat out = run(img, k, s).image;
    check_rounded_equal(out, round_saturate(expected_exact, CV_8U));
    CHECK(out.at<cv::Vec4b>(2, 2) == cv::Vec4b(0, 0, 0, 0));  // inside the transparent block
  }
  SECTION("premultiply with an opaque image equals separate") {
    for (int y = 0; y < img.rows; ++y)
      for (int x = 0; x < img.cols; ++x) img.at<cv::Vec4b>(y, x)[3] = 255;
    const cv::Mat pm = run(img, k, s).image;
    s.alpha = alpha_mode::separate;
    check_rounded_equal(pm, run(img, k, s).image);
  }
  SECTION("premultiply with constant:V: the outside pixel is V in every channel, alpha included") {
    // 'valid' on the image padded with V is 'same' with constant V: an independent geometry
    s.semantics.border = conv::boundary::constant;
    s.semantics.constant_value = 128;
    const cv::Mat same = run(img, k, s).image;
    cv::Mat padded;
    cv::copyMakeBorder(img, padded, 2, 2, 2, 2, cv::BORDER_CONSTANT, cv::Scalar::all(128));
    s.semantics.mode = conv::output_mode::valid;
    check_rounded_equal(same, run(padded, k, s).image);
  }
}

TEST_CASE("gray + alpha (2 channels) is handled like RGBA", "[app]") {
  cv::Mat img = test::test_image(20, 24, CV_8UC2, 13);
  const kernel k = make_kernel(3, 3, 14, 1.0);
  convolve_settings s = cpu_settings();
  s.alpha = alpha_mode::keep;
  const cv::Mat out = run(img, k, s).image;
  REQUIRE(out.type() == CV_8UC2);
  std::vector<cv::Mat> got, in, ref;
  cv::split(out, got);
  cv::split(img, in);
  cv::split(round_saturate(direct(img, k, s.semantics), CV_8U), ref);
  CHECK(cv::countNonZero(got[1] != in[1]) == 0);
  check_rounded_equal(got[0], ref[0]);
}

TEST_CASE("plans are cached by shape and reused", "[app]") {
  convolver c(make_kernel(3, 3, 1, 1.0), cpu_settings());
  convolve_image(test::test_image(16, 16, CV_8UC3), c);
  convolve_image(test::test_image(16, 16, CV_8UC3, 2), c);
  CHECK(c.cached_plans() == 1);
  convolve_image(test::test_image(16, 20, CV_8UC3), c);
  convolve_image(test::test_image(16, 16, CV_8UC1), c);
  CHECK(c.cached_plans() == 3);
}

TEST_CASE("the plan cache is bounded: many sizes evict the least recently used, results unchanged", "[app]") {
  convolver c(make_kernel(3, 3, 1, 1.0), cpu_settings());
  const cv::Mat first = test::test_image(9, 9, CV_8UC3);
  const output_image before = convolve_image(first, c);
  for (int w = 10; w < 10 + 2 * int(convolver::max_cached_plans); ++w) {
    convolve_image(test::test_image(9, w, CV_8UC3), c);
    CHECK(c.cached_plans() <= convolver::max_cached_plans);
  }
  CHECK(c.cached_plans() == convolver::max_cached_plans);
  const output_image after = convolve_image(first, c);  // its plan was evicted and is built again
  CHECK(cv::countNonZero(cv::Mat(before.image != after.image).reshape(1)) == 0);
}

TEST_CASE("device (--device): automatic falls back to the CPU with a notice; cuda without a device is an error", "[app]") {
  std::ostringstream notices;
  CHECK(resolve_device(conv::backend::cpu, false, notices) == conv::backend::cpu);
  CHECK(notices.str().empty());
  if (cuda_device_available()) {
    CHECK(resolve_device(conv::backend::automatic, false, notices) == conv::backend::cuda);
    SKIP("a CUDA device is present: the fallback cannot be tested here");
  }
  CHECK(resolve_device(conv::backend::automatic, false, notices) == conv::backend::cpu);
  CHECK(notices.str().find("CPU") != std::string::npos);
  std::ostringstream quiet;
  resolve_device(conv::backend::automatic, true, quiet);
  CHECK(quiet.str().empty());
  CHECK_THROWS_AS(resolve_device(conv::backend::cuda, false, notices), gpuconv::app::error);
}

TEST_CASE("GPU: the CUDA backend gives the CPU backend's 8-bit result", "[app][gpu]") {
  if (!cuda_device_available()) SKIP("no CUDA device present");
  const cv::Mat img = test::test_image(300, 257, CV_8UC3, 21);
  const kernel k = make_kernel(9, 9, 22, 1.0);
  convolve_settings s = cpu_settings();
  const cv::Mat cpu = run(img, k, s).image;
  s.device = conv::backend::cuda;
  check_rounded_equal(run(img, k, s).image, cpu);
}

TEST_CASE("one image on several threads (copy_threads): the conversions in bands give the one-thread result", "[app]") {
  // to_planes and from_planes cut the rows into bands on the CPU backend's pool for the
  // one-image command; every step is per pixel, so the output is the same to the bit
  struct shape {
    int rows, cols, type;
  };
  const kernel k = make_kernel(5, 7, 21, 1.0);
  for (const shape sh : {shape{200, 131, CV_8UC3}, shape{157, 90, CV_8UC4}, shape{130, 70, CV_16UC2},
                         shape{97, 101, CV_32FC1}, shape{300, 41, CV_8UC1}}) {
    cv::Mat img = test::test_image(sh.rows, sh.cols, sh.type, 31);
    for (const alpha_mode a : {alpha_mode::premultiply, alpha_mode::separate, alpha_mode::keep})
      for (const conv::output_mode m : {conv::output_mode::same, conv::output_mode::full, conv::output_mode::valid})
        for (const conv::boundary b : {conv::boundary::reflect101, conv::boundary::constant}) {
          convolve_settings s = cpu_settings();
          s.alpha = a;
          s.semantics.mode = m;
          s.semantics.border = b;
          s.semantics.constant_value = 7;
          s.scale = 1.25;
          s.offset = -3;
          const output_image one = run(img, k, s);
          s.copy_threads = 3;
          const output_image three = run(img, k, s);
          CAPTURE(sh.rows, sh.cols, sh.type, int(a), int(m), int(b));
          REQUIRE(three.image.size() == one.image.size());
          REQUIRE(three.image.type() == one.image.type());
          CHECK(cv::norm(three.image, one.image, cv::NORM_INF) == 0);
          CHECK(three.clipped == one.clipped);
        }
  }
}

TEST_CASE("one float channel: read in place, the result is the output image, the same pixels as through the planes", "[app]") {
  const kernel k = make_kernel(5, 7, 23, 1.0);
  const cv::Mat img = test::test_image(97, 101, CV_32FC1, 41);
  for (const conv::output_mode m : {conv::output_mode::same, conv::output_mode::full, conv::output_mode::valid}) {
    convolve_settings s = cpu_settings();
    s.semantics.mode = m;
    convolver c(k, s);
    // through float planes (a copy in, a copy out): the reference
    planar_image copied = to_planes(img, s.alpha);
    REQUIRE(copied.source == nullptr);
    c.run(copied);
    // the image's own samples in, the result as the output
    planar_image viewed = to_planes(img, s.alpha, 1, true);
    CHECK(viewed.source == img.ptr<float>());
    CHECK(viewed.planes.empty());
    c.run(viewed);
    REQUIRE(result_is_output(viewed, s));
    REQUIRE(!viewed.result_image.empty());
    const uchar* result = viewed.result_image.data;
    const output_image a = from_planes(copied, s), b = from_planes(viewed, s);
    CHECK(b.image.data == result);  // no copy
    REQUIRE(b.image.size() == a.image.size());
    REQUIRE(b.image.type() == CV_32FC1);
    CHECK(cv::norm(b.image, a.image, cv::NORM_INF) == 0);
    CHECK(cv::norm(convolve_image(img, c).image, a.image, cv::NORM_INF) == 0);
  }
  // not the output: another depth, a scale, an offset, a second channel, a ROI (not continuous)
  convolve_settings s = cpu_settings();
  s.depth = output_depth::u16;
  planar_image p = to_planes(img, s.alpha, 1, true);
  CHECK_FALSE(result_is_output(p, s));
  s = cpu_settings();
  s.scale = 2;
  CHECK_FALSE(result_is_output(p, s));
  s.scale = 1;
  s.offset = 1;
  CHECK_FALSE(result_is_output(p, s));
  CHECK(to_planes(test::test_image(9, 9, CV_32FC3, 1), alpha_mode::premultiply, 1, true).source == nullptr);
  CHECK(to_planes(img(cv::Rect(1, 1, 50, 40)), alpha_mode::premultiply, 1, true).source == nullptr);
  CHECK(to_planes(test::test_image(9, 9, CV_16UC1, 1), alpha_mode::premultiply, 1, true).source == nullptr);
}

namespace {

// A kh x kw kernel of non-negative values summing to `sum` (an 8-bit image cannot clip under
// it for sum <= 1)
kernel positive_kernel(int kh, int kw, std::uint64_t seed, double sum) {
  kernel k = make_kernel(kh, kw, seed, 1.0);
  double total = 0;
  for (float& v : k.values) total += (v = std::abs(v));
  for (float& v : k.values) v = float(v * sum / total);
  return k;
}

// The float route's output for `img`: to_planes without the narrow route
output_image through_floats(const cv::Mat& img, convolver& c, const convolve_settings& s) {
  planar_image p = to_planes(img, s.alpha);
  REQUIRE_FALSE(p.narrow);
  c.run(p);
  return from_planes(p, s);
}

}  // namespace

TEST_CASE("narrow route: taken only where it gives the float route's output and clip count", "[app]") {
  const kernel gauss = *make_named_kernel("gaussian:2");
  convolve_settings s = cpu_settings();
  CHECK(convolver(gauss, s).narrow_route(CV_8U, 3));
  CHECK(convolver(gauss, s).narrow_route(CV_8U, 1));
  CHECK_FALSE(convolver(gauss, s).narrow_route(CV_32F, 1));
  CHECK(convolver(gauss, s).narrow_route(CV_16U, 3));
  CHECK(convolver(positive_kernel(5, 5, 3, 0.5), s).narrow_route(CV_16U, 3));
  // summing to 1 + 6e-6: 65535 x that is 65535.39, below 65535.5 but not with the room (0.13) at 16 bits
  CHECK(convolver(positive_kernel(5, 5, 3, 1 + 6e-6), s).narrow_route(CV_8U, 3));
  CHECK_FALSE(convolver(positive_kernel(5, 5, 3, 1 + 6e-6), s).narrow_route(CV_16U, 3));
  // may clip: a kernel with negative weights (sharpening), one summing to more than 1
  CHECK_FALSE(convolver(make_kernel(3, 3, 4, 1.0), s).narrow_route(CV_8U, 3));
  CHECK_FALSE(convolver(positive_kernel(3, 3, 4, 1.01), s).narrow_route(CV_8U, 3));
  // alpha: premultiplied or kept needs the float route; 'separate' is every channel on its own
  CHECK_FALSE(convolver(gauss, s).narrow_route(CV_8U, 4));
  CHECK_FALSE(convolver(gauss, s).narrow_route(CV_8U, 2));
  s.alpha = alpha_mode::keep;
  CHECK_FALSE(convolver(gauss, s).narrow_route(CV_8U, 4));
  s.alpha = alpha_mode::separate;
  CHECK(convolver(gauss, s).narrow_route(CV_8U, 4));
  // another output depth, a scale, an offset
  s = cpu_settings();
  s.depth = output_depth::u16;
  CHECK_FALSE(convolver(gauss, s).narrow_route(CV_8U, 3));
  s.depth = output_depth::f32;
  CHECK_FALSE(convolver(gauss, s).narrow_route(CV_8U, 3));
  s = cpu_settings();
  s.scale = 0.5;
  CHECK_FALSE(convolver(gauss, s).narrow_route(CV_8U, 3));
  s = cpu_settings();
  s.offset = 1;
  CHECK_FALSE(convolver(gauss, s).narrow_route(CV_8U, 3));
  // a 'constant' border: a sample value only (the library rounds it to one)
  s = cpu_settings();
  s.semantics.border = conv::boundary::constant;
  s.semantics.constant_value = 7;
  CHECK(convolver(gauss, s).narrow_route(CV_8U, 3));
  s.semantics.constant_value = 7.5f;
  CHECK_FALSE(convolver(gauss, s).narrow_route(CV_8U, 3));
  s.semantics.constant_value = 256;
  CHECK_FALSE(convolver(gauss, s).narrow_route(CV_8U, 3));
  CHECK(convolver(gauss, s).narrow_route(CV_16U, 3));  // 256 is a 16-bit sample but not an 8-bit one
  s.semantics.constant_value = 65536;
  CHECK_FALSE(convolver(gauss, s).narrow_route(CV_16U, 3));
  CHECK_THROWS_AS(to_planes(test::test_image(9, 9, CV_32FC1, 1), alpha_mode::premultiply, 1, false, true), std::logic_error);
  CHECK_THROWS_AS(to_planes(test::test_image(9, 9, CV_8UC4, 1), alpha_mode::premultiply, 1, false, true), std::logic_error);
}

TEST_CASE("narrow route: stored samples through the library's narrow pixels give the float route's output", "[app]") {
  struct kernel_case {
    kernel k;
    bool exact;  // false: a uint8 kernel the library may run in fixed point (within a level)
  };
  // kh + kw < conv::fixed_min_taps (20) keeps the float passes: 5 x 7, gaussian:1 (9 x 9)
  const std::vector<kernel_case> kernels_8 = {{positive_kernel(5, 7, 51, 1.0), true},
                                              {*make_named_kernel("gaussian:1"), true},
                                              {*make_named_kernel("gaussian:2"), false},
                                              {*make_named_kernel("gaussian:8"), false}};
  struct shape {
    int rows, cols, type;
  };
  for (const shape sh : {shape{97, 101, CV_8UC1}, shape{120, 83, CV_8UC3}, shape{64, 90, CV_8UC4}, shape{71, 66, CV_8UC2},
                         shape{90, 77, CV_16UC1}, shape{66, 70, CV_16UC3}}) {
    const cv::Mat img = test::test_image(sh.rows, sh.cols, sh.type, 61);
    const bool wide = CV_MAT_DEPTH(sh.type) == CV_16U;
    const std::vector<kernel_case> kernels =
        wide ? std::vector<kernel_case>{{positive_kernel(9, 9, 52, 0.5), true}, {*make_named_kernel("gaussian:2"), true}}
             : kernels_8;
    for (const kernel_case& kc : kernels)
      for (const conv::output_mode m : {conv::output_mode::same, conv::output_mode::full, conv::output_mode::valid})
        for (const conv::boundary b : {conv::boundary::reflect101, conv::boundary::constant, conv::boundary::zero}) {
          if (m == conv::output_mode::valid && (kc.k.height >= sh.rows || kc.k.width >= sh.cols)) continue;
          convolve_settings s = cpu_settings();
          s.alpha = alpha_mode::separate;
          s.semantics.mode = m;
          s.semantics.border = b;
          s.semantics.constant_value = 7;
          CAPTURE(sh.rows, sh.cols, sh.type, kc.k.height, int(m), int(b));
          convolver c(kc.k, s);
          REQUIRE(c.narrow_route(img.depth(), img.channels()));
          const output_image expected = through_floats(img, c, s);
          planar_image p = c.planes(img, 1, true);
          REQUIRE(p.narrow);
          CHECK(p.planes.empty());
          if (img.channels() == 1) CHECK(p.source == img.data);  // read in place
          c.run(p);
          const bool in_place = img.channels() == 1;
          CHECK(result_is_output(p, s) == in_place);
          const uchar* result = p.result_image.data;
          const output_image got = from_planes(p, s);
          if (in_place) CHECK(got.image.data == result);  // the result is the output, no copy
          REQUIRE(got.image.size() == expected.image.size());
          REQUIRE(got.image.type() == expected.image.type());
          CHECK(got.clipped == 0);
          CHECK(expected.clipped == 0);
          if (kc.exact) {
            CHECK(cv::norm(got.image, expected.image, cv::NORM_INF) == 0);
          } else {  // fixed point: within a level (its error bound is a quarter level)
            const diff_stats d = compare(got.image, expected.image);
            INFO("max |diff| " << d.max_abs << ", " << d.differing << " of " << d.total << " values differ");
            CHECK(d.max_abs <= 1);
            CHECK(d.differing * 100 <= d.total);
          }
          // the whole command's call, conversions in bands on three threads: the same
          s.copy_threads = 3;
          convolver c3(kc.k, s);
          CHECK(cv::norm(convolve_image(img, c3).image, got.image, cv::NORM_INF) == 0);
        }
  }
}

TEST_CASE("one image under --device auto: the CPU when it is expected to finish before CUDA starts", "[app]") {
  const kernel gauss2 = *make_named_kernel("gaussian:2");  // 17 x 17, rank-1
  const kernel box63 = *make_named_kernel("box:63");
  const kernel dense127 = make_kernel(127, 127, 3, 1.0);
  // a 12 MP photo with a small separable kernel: the CPU on 16 cores (measured on the H100
  // host: 0.22 s on the CPU, 0.40 s on CUDA) and on 2
  CHECK(cpu_before_cuda_starts(3000, 4000, gauss2, 16));
  CHECK(cpu_before_cuda_starts(3000, 4000, gauss2, 2));
  CHECK(cpu_before_cuda_starts(3000, 4000, box63, 16));
  // large images with a large dense kernel: CUDA, and so on a single core
  CHECK_FALSE(cpu_before_cuda_starts(10000, 10000, dense127, 16));
  CHECK_FALSE(cpu_before_cuda_starts(3000, 4000, dense127, 1));
  // more pixels never turn CUDA into CPU
  for (const kernel* k : {&gauss2, &box63, &dense127})
    for (int threads : {1, 2, 16}) {
      bool cpu = true;
      for (long long side = 256; side <= 32768; side *= 2) {
        const bool now = cpu_before_cuda_starts(side, side, *k, threads);
        CAPTURE(k->width, threads, side);
        CHECK((cpu || !now));
        cpu = now;
      }
    }
}
