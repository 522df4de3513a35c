// encode_jpeg_strips: the joined stream decodes to exactly the pixels of a one-piece encode.
#include <catch2/catch_test_macros.hpp>

#include <cmath>
#include <random>

#include <opencv2/imgcodecs.hpp>

#include "jpeg_strips.hpp"

using gpuconv::app::encode_jpeg_strips;

namespace {

// Smooth gradients with texture and noise: coefficients in every band, both signs.
cv::Mat photo_like(int rows, int cols, int channels, unsigned seed) {
  cv::Mat m(rows, cols, CV_8UC(channels));
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> noise(-20, 20);
  for (int y = 0; y < rows; ++y)
    for (int x = 0; x < cols; ++x)
      for (int c = 0; c < channels; ++c) {
        const double v = 128 + 70 * std::sin(0.013 * x * (c + 1) + 0.021 * y) + 30 * std::cos(0.2 * x - 0.17 * y);
        m.ptr<unsigned char>(y)[x * channels + c] = cv::saturate_cast<unsigned char>(v + noise(rng));
      }
  return m;
}

cv::Mat decoded(const std::vector<unsigned char>& bytes) {
  return cv::imdecode(bytes, cv::IMREAD_UNCHANGED);
}

}  // namespace

TEST_CASE("JPEG strips: the same pixels as one cv::imencode", "[app][jpeg]") {
  struct shape {
    int rows, cols, channels;
  };
  for (const shape s : {shape{1000, 1333, 3}, shape{517, 301, 3}, shape{640, 480, 1}, shape{273, 1029, 1},
                        shape{3000, 4000, 3}}) {
    const cv::Mat image = photo_like(s.rows, s.cols, s.channels, unsigned(s.rows * 7 + s.cols));
    for (const int quality : {95, 60}) {
      std::vector<unsigned char> whole;
      REQUIRE(cv::imencode(".jpg", image, whole, {cv::IMWRITE_JPEG_QUALITY, quality}));
      const cv::Mat expected = decoded(whole);
      for (const int threads : {2, 3, 8, 16}) {
        CAPTURE(s.rows, s.cols, s.channels, quality, threads);
        const auto joined = encode_jpeg_strips(image, quality, threads);
        REQUIRE(joined.has_value());
        const cv::Mat got = decoded(*joined);
        REQUIRE(got.rows == s.rows);
        REQUIRE(got.cols == s.cols);
        REQUIRE(got.type() == expected.type());
        CHECK(cv::norm(got, expected, cv::NORM_INF) == 0);
        // restart markers cost bytes, not much: a DRI segment and two bytes per MCU row
        CHECK(joined->size() <= whole.size() + 6 + 2 * std::size_t(s.rows));
        CHECK(joined->size() >= whole.size());
      }
    }
  }
}

TEST_CASE("JPEG strips: declined where they do not apply", "[app][jpeg]") {
  const cv::Mat small = photo_like(40, 64, 3, 1);
  CHECK_FALSE(encode_jpeg_strips(small, 95, 8).has_value());  // too few MCU rows to split
  const cv::Mat image = photo_like(512, 512, 3, 2);
  CHECK_FALSE(encode_jpeg_strips(image, 95, 1).has_value());
  cv::Mat wide;
  image.convertTo(wide, CV_16U, 256);
  CHECK_FALSE(encode_jpeg_strips(wide, 95, 8).has_value());
  cv::Mat four(512, 512, CV_8UC4, cv::Scalar(1, 2, 3, 4));
  CHECK_FALSE(encode_jpeg_strips(four, 95, 8).has_value());
}
