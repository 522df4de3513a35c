// The recycling Mat allocator (src/mat_pool.hpp): large Mats reuse freed buffers, small ones
// and Mats made after use_opencv_mat_allocator() stay with OpenCV, the cap on kept bytes holds,
// and pooled Mats behave as any Mat (steps, copies, ROIs, codecs).
#include <catch2/catch_test_macros.hpp>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include "mat_pool.hpp"

using namespace gpuconv::app;

namespace {

struct pool_delta {
  mat_pool_stats before = mat_pool_statistics();
  long long mapped() const { return mat_pool_statistics().mapped - before.mapped; }
  long long reused() const { return mat_pool_statistics().reused - before.reused; }
  long long released() const { return mat_pool_statistics().released - before.released; }
};

// Restores OpenCV's allocator when a test ends, so that other tests see plain Mats.
struct opencv_allocator_after {
  ~opencv_allocator_after() { use_opencv_mat_allocator(); }
};

}  // namespace

TEST_CASE("mat pool: a freed 12 MP image buffer is handed to the next image of its size", "[app][mat_pool]") {
  opencv_allocator_after restore;
  use_recycling_mat_allocator(std::size_t(256) << 20);
  pool_delta d;
  const unsigned char* first = nullptr;
  {
    cv::Mat a(3000, 4000, CV_8UC3, cv::Scalar(1, 2, 3));
    first = a.data;
    CHECK(a.isContinuous());
    CHECK(a.step[0] == 12000);
    CHECK(a.at<cv::Vec3b>(2999, 3999) == cv::Vec3b(1, 2, 3));
  }
  CHECK(d.mapped() == 1);
  cv::Mat b(3000, 4000, CV_8UC3);
  CHECK(b.data == first);
  CHECK(d.reused() == 1);
  // one a little smaller takes a kept buffer too; b holds the one above, so this one is new
  cv::Mat c(2900, 4000, CV_8UC3);
  CHECK(d.mapped() == 2);
  c.release();
  cv::Mat e(2800, 4000, CV_8UC3);  // within a quarter of the kept length
  CHECK(d.reused() == 2);
  CHECK(d.mapped() == 2);
}

TEST_CASE("mat pool: small Mats stay with OpenCV's allocator", "[app][mat_pool]") {
  opencv_allocator_after restore;
  use_recycling_mat_allocator(std::size_t(256) << 20);
  pool_delta d;
  cv::Mat small(100, 100, CV_8UC3, cv::Scalar::all(7));
  cv::Mat copy = small.clone();
  CHECK(cv::countNonZero(copy.reshape(1) != 7) == 0);
  CHECK(d.mapped() == 0);
  CHECK(d.reused() == 0);
}

TEST_CASE("mat pool: freed buffers past the cap are unmapped", "[app][mat_pool]") {
  opencv_allocator_after restore;
  pool_delta d;
  use_recycling_mat_allocator(std::size_t(64) << 20);  // room for one 36 MB image at most
  std::vector<cv::Mat> images;
  for (int i = 0; i < 3; ++i) images.emplace_back(3001, 4001, CV_8UC3, cv::Scalar::all(i));
  // the kept bytes may already hold buffers of other tests: at least two of the three 36 MB
  // buffers cannot be kept under 64 MB
  const std::size_t kept_before = mat_pool_statistics().kept_bytes;
  images.clear();
  CHECK(d.released() >= 2);
  CHECK(mat_pool_statistics().kept_bytes <= std::max(kept_before, std::size_t(64) << 20));
}

TEST_CASE("mat pool: pooled Mats copy, crop, convert and go through the codecs like any Mat", "[app][mat_pool]") {
  opencv_allocator_after restore;
  use_recycling_mat_allocator(std::size_t(256) << 20);
  cv::Mat img(1024, 1024, CV_8UC3);
  cv::randu(img, 0, 255);
  cv::Mat f;
  img.convertTo(f, CV_32F, 0.5);  // 12 MB: pooled
  CHECK(f.at<cv::Vec3f>(5, 7)[1] == 0.5f * img.at<cv::Vec3b>(5, 7)[1]);
  const cv::Mat roi = f(cv::Rect(100, 200, 300, 400)).clone();
  CHECK(roi.at<cv::Vec3f>(0, 0) == f.at<cv::Vec3f>(200, 100));
  std::vector<unsigned char> png;
  REQUIRE(cv::imencode(".png", img, png));
  const cv::Mat back = cv::imdecode(png, cv::IMREAD_UNCHANGED);
  REQUIRE(back.size() == img.size());
  CHECK(cv::norm(back, img, cv::NORM_INF) == 0);
}

TEST_CASE("mat pool: after use_opencv_mat_allocator new Mats bypass the pool; pooled ones still return",
          "[app][mat_pool]") {
  use_recycling_mat_allocator(std::size_t(256) << 20);
  cv::Mat pooled(2000, 2000, CV_8UC3);
  use_opencv_mat_allocator();
  pool_delta d;
  {
    cv::Mat plain(2000, 2000, CV_8UC3);
    CHECK(plain.data != pooled.data);
  }
  CHECK(d.mapped() == 0);
  CHECK(d.reused() == 0);
  pooled.release();  // back into the pool: no crash, no OpenCV free of a mapping
  CHECK(mat_pool_statistics().kept_bytes > 0);
}
