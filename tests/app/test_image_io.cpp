// Image files: round trips per depth and channel count through the atomic writer, the
// format checks that refuse silent conversions, errors naming the file, no temp files left.
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <fstream>
#include <iterator>
#include <stdexcept>

#include <opencv2/imgcodecs.hpp>

#include "atomic_write.hpp"
#include "errors.hpp"
#include "image_io.hpp"
#include "support.hpp"

using namespace gpuconv;
using namespace gpuconv::app;
using Catch::Matchers::ContainsSubstring;
namespace fs = std::filesystem;

TEST_CASE("round trips through the atomic writer: 8U/16U/32F x 1/3/4 channels", "[app]") {
  test::scratch_dir dir;
  const auto depth = GENERATE(CV_8U, CV_16U, CV_32F);
  const auto channels = GENERATE(1, 3, 4);
  const std::string generated_ext = GENERATE(as<std::string>{}, ".png", ".tif");
  const std::string ext = depth == CV_32F ? ".tif" : generated_ext;  // PNG holds no float
  INFO("depth " << depth << ", " << channels << " channels, " << ext);
  const cv::Mat img = test::test_image(23, 31, CV_MAKETYPE(depth, channels), 3);
  const auto file = dir / ("img" + ext);
  check_output_format(file, depth, channels);
  write_output(file, img);
  const cv::Mat back = read_image(file);
  REQUIRE(back.type() == img.type());
  CHECK(cv::norm(back, img, cv::NORM_INF) == 0);
  CHECK(test::temp_files_under(dir.path()).empty());
}

TEST_CASE("1-channel float TIFF: gpuconv's own writer, encode_output's bytes, OpenCV reads it back", "[app]") {
  test::scratch_dir dir;
  const cv::Mat img = test::test_image(37, 53, CV_32FC1, 5);
  CHECK(tiff_written_directly(dir / "a.tif", img));
  CHECK(tiff_written_directly(dir / "a.TIFF", img));
  CHECK_FALSE(tiff_written_directly(dir / "a.tif", test::test_image(4, 4, CV_32FC3)));
  CHECK_FALSE(tiff_written_directly(dir / "a.tif", test::test_image(4, 4, CV_16UC1)));
  CHECK_FALSE(tiff_written_directly(dir / "a.exr", img));
  const cv::Mat roi = img(cv::Rect(3, 2, 40, 30));  // rows not contiguous
  for (const cv::Mat& m : {img, roi}) {
    INFO("continuous " << m.isContinuous());
    const auto file = dir / "f.tif";
    write_output(file, m);
    const cv::Mat back = read_image(file);
    REQUIRE(back.type() == CV_32FC1);
    CHECK(cv::norm(back, m, cv::NORM_INF) == 0);
    const std::vector<unsigned char> bytes = encode_output(file, m);
    CHECK(test::read_file(file) == std::string(bytes.begin(), bytes.end()));
  }
  write_output(dir / "keep.tif", img);
  CHECK_THROWS_AS(write_output(dir / "keep.tif", roi, false), output_error);
  CHECK(cv::norm(read_image(dir / "keep.tif"), img, cv::NORM_INF) == 0);
  CHECK(test::temp_files_under(dir.path()).empty());
}

TEST_CASE("atomic writer: no overwrite without permission, temp removed on failure", "[app]") {
  test::scratch_dir dir;
  const cv::Mat img = test::test_image(8, 8, CV_8UC3);
  const auto file = dir / "out.png";
  write_image_atomic(file, img);
  test::write_file(dir / "keep.png", "precious");
  CHECK_THROWS_AS(write_image_atomic(dir / "keep.png", img, false), output_error);
  CHECK(test::read_file(dir / "keep.png") == "precious");
  write_image_atomic(dir / "keep.png", img, true);
  CHECK(read_image(dir / "keep.png").cols == 8);

  CHECK_THROWS_AS(write_image_atomic(dir / "missing" / "x.png", img), output_error);
  // an extension OpenCV has no writer for: the encoder fails; the temp file must not survive
  CHECK_THROWS_AS(write_image_atomic(dir / "f.xyz", img), output_error);
  CHECK_FALSE(fs::exists(dir / "f.xyz"));
  CHECK(test::temp_files_under(dir.path()).empty());
  CHECK(is_temp_name(".a.png.gpuconv-tmp-12-3.png"));
  CHECK_FALSE(is_temp_name("a.png"));
}

TEST_CASE("atomic writer: spans land in order, more of them than one writev takes", "[app]") {
  test::scratch_dir dir;
  // 3000 spans (IOV_MAX is 1024 on Linux) of 0..4095 bytes, some empty, from one buffer out of order
  std::vector<unsigned char> pool(1 << 20);
  for (std::size_t i = 0; i < pool.size(); ++i) pool[i] = static_cast<unsigned char>(i * 131 + (i >> 9));
  std::vector<byte_span> spans;
  std::vector<unsigned char> expected;
  for (std::size_t i = 0; i < 3000; ++i) {
    const std::size_t n = (i * 2654435761u >> 7) % 4096 * (i % 7 != 3), at = (i * 40503u) % (pool.size() - 4096);
    spans.push_back({pool.data() + at, n});
    expected.insert(expected.end(), pool.data() + at, pool.data() + at + n);
  }
  const fs::path out = dir / "spans.bin";
  write_spans_atomic(out, spans);
  std::ifstream in(out, std::ios::binary);
  const std::vector<unsigned char> got((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(got.size() == expected.size());
  CHECK(got == expected);
  CHECK(test::temp_files_under(dir.path()).empty());
}

TEST_CASE("atomic writer in two steps: staged bytes show under no name until committed, dropped ones leave nothing",
          "[app]") {
  test::scratch_dir dir;
  const std::string text = "staged bytes";
  const std::vector<byte_span> spans{{reinterpret_cast<const unsigned char*>(text.data()), text.size()}};
  {
    staged_output s = stage_output(dir / "a.bin", spans);
    CHECK_FALSE(fs::exists(dir / "a.bin"));
    CHECK(test::temp_files_under(dir.path()).size() == 1);
    staged_output moved = std::move(s);  // the temp file follows the object
    commit_output(moved, nullptr);
    CHECK_THROWS_AS(commit_output(moved, nullptr), std::logic_error);  // once
  }
  CHECK(test::read_file(dir / "a.bin") == text);
  {
    staged_output s = stage_output(dir / "b.bin", spans);
  }  // dropped uncommitted (an error or an interrupt in the batch)
  CHECK_FALSE(fs::exists(dir / "b.bin"));
  // an output that appears between the two steps is kept, without --overwrite; the staged one goes
  {
    staged_output s = stage_output(dir / "c.bin", spans, false);
    test::write_file(dir / "c.bin", "precious");
    CHECK_THROWS_AS(commit_output(s, nullptr), output_error);
  }
  CHECK(test::read_file(dir / "c.bin") == "precious");
  // with --overwrite it is replaced whole; the directory's sync left to a shared directory_syncs
  directory_syncs syncs;
  {
    staged_output s = stage_output(dir / "c.bin", spans, true);
    commit_output(s, &syncs);
  }
  syncs.sync();
  CHECK(syncs.synced() >= 1);
  CHECK(test::read_file(dir / "c.bin") == text);
  CHECK_THROWS_AS(stage_output(dir / "missing" / "d.bin", spans), output_error);
  CHECK(test::temp_files_under(dir.path()).empty());
}

TEST_CASE("formats that cannot hold the depth are refused up front", "[app]") {
  CHECK_NOTHROW(check_output_format("a.jpg", CV_8U, 3));
  CHECK_NOTHROW(check_output_format("a.PNG", CV_16U, 1));
  CHECK_NOTHROW(check_output_format("a.tiff", CV_32F, 4));
  CHECK_NOTHROW(check_output_format("a.pfm", CV_32F, 3));
  CHECK_THROWS_AS(check_output_format("a.jpg", CV_16U, 3), usage_error);
  CHECK_THROWS_AS(check_output_format("a.png", CV_32F, 1), usage_error);
  CHECK_THROWS_AS(check_output_format("a.pfm", CV_32F, 4), usage_error);
  CHECK_THROWS_AS(check_output_format("a", CV_8U, 1), usage_error);
  CHECK_THROWS_AS(check_output_format("a.xyz", CV_8U, 1), usage_error);
}

TEST_CASE("unreadable inputs are input errors naming the file", "[app]") {
  test::scratch_dir dir;
  auto message = [](const fs::path& p) {
    try {
      read_image(p);
    } catch (const input_error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK_THAT(message(dir / "none.png"), ContainsSubstring("none.png") && ContainsSubstring("no such file"));
  test::write_file(dir / "corrupt.png", std::string(500, '\x42'));
  CHECK_THAT(message(dir / "corrupt.png"), ContainsSubstring("corrupt.png") && ContainsSubstring("cannot be"));
  fs::create_symlink(dir / "nowhere.png", dir / "link.png");
  CHECK_THAT(message(dir / "link.png"), ContainsSubstring("dangling"));
  CHECK_THAT(message(dir.path()), ContainsSubstring("directory"));
}

TEST_CASE("2-channel images are written as BGRA (cv::imwrite takes 1, 3 or 4 channels)", "[app]") {
  test::scratch_dir dir;
  const cv::Mat ga = test::test_image(4, 4, CV_8UC2);
  CHECK(for_writing(ga).channels() == 4);
  CHECK(for_writing(test::test_image(4, 4, CV_8UC3)).channels() == 3);
  write_output(dir / "ga.tif", ga);
  const cv::Mat back = read_image(dir / "ga.tif");
  REQUIRE(back.channels() == 4);
  CHECK(back.at<cv::Vec4b>(1, 2)[1] == ga.at<cv::Vec2b>(1, 2)[0]);
  CHECK(back.at<cv::Vec4b>(1, 2)[3] == ga.at<cv::Vec2b>(1, 2)[1]);
}
