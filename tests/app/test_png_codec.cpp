// PNG's CPU side for the GPU pipeline (pipeline/png_codec.hpp): which files it takes, its
// inflated scanlines and CPU unfiltering against OpenCV's decoder, and the files it writes
// (read back by OpenCV). The GPU's half (png_rows.hpp) is in test_gpu_pipeline.cpp.
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>

#include <cstring>
#include <vector>

#include <opencv2/imgcodecs.hpp>
#include <zlib.h>

#include "png_codec.hpp"
#include "support.hpp"

using namespace gpuconv;

namespace {

std::vector<unsigned char> png_of(const cv::Mat& img, std::vector<int> params = {}) {
  std::vector<unsigned char> bytes;
  REQUIRE(cv::imencode(".png", img, bytes, params));
  return bytes;
}

cv::Mat decoded(const std::vector<unsigned char>& bytes) { return cv::imdecode(bytes, cv::IMREAD_UNCHANGED); }

bool same(const cv::Mat& a, const cv::Mat& b) {
  return a.size() == b.size() && a.type() == b.type() && cv::norm(a, b, cv::NORM_INF) == 0;
}

// the rows' filter types, counted
std::vector<int> filter_counts(const pipeline::png_scanlines& s) {
  std::vector<int> n(256, 0);
  const std::size_t stride = 1 + std::size_t(s.width) * std::size_t(s.pixel_bytes());
  for (int y = 0; y < s.height; ++y) ++n[s.rows[std::size_t(y) * stride]];
  return n;
}

// scanlines of an 8-bit BGR(A)/gray image, every row filtered Sub, or (alternate) row y None
// for even y and Sub for odd y
std::vector<unsigned char> scanlines_of(const cv::Mat& img, bool alternate) {
  const int c = img.channels();
  const std::size_t line = std::size_t(img.cols) * c;
  std::vector<unsigned char> rows(std::size_t(img.rows) * (line + 1));
  for (int y = 0; y < img.rows; ++y) {
    unsigned char* r = rows.data() + std::size_t(y) * (line + 1);
    const bool sub = !alternate || y % 2 == 1;
    r[0] = sub ? 1 : 0;
    const unsigned char* p = img.ptr<unsigned char>(y);
    for (int x = 0; x < img.cols; ++x)
      for (int k = 0; k < c; ++k) {
        const int s = (c >= 3 && k < 3) ? 2 - k : k;  // PNG's RGB(A) from BGR(A)
        const unsigned char v = p[x * c + s], left = x > 0 ? p[(x - 1) * c + s] : 0;
        r[1 + x * c + k] = (unsigned char)(sub ? v - left : v);
      }
  }
  return rows;
}

// a chunk's CRC field at `at` (its length field) recomputed after an edit
void fix_crc(std::vector<unsigned char>& png, std::size_t at) {
  const std::size_t n = (std::size_t(png[at]) << 24) | (std::size_t(png[at + 1]) << 16) |
                        (std::size_t(png[at + 2]) << 8) | png[at + 3];
  const uLong crc = crc32(crc32(0L, Z_NULL, 0), png.data() + at + 4, uInt(4 + n));
  for (int i = 0; i < 4; ++i) png[at + 8 + n + i] = (unsigned char)(crc >> (24 - 8 * i));
}

// the offset of the first chunk of `type`
std::size_t chunk_at(const std::vector<unsigned char>& png, const char* type) {
  for (std::size_t at = 8; at + 12 <= png.size();) {
    const std::size_t n = (std::size_t(png[at]) << 24) | (std::size_t(png[at + 1]) << 16) |
                          (std::size_t(png[at + 2]) << 8) | png[at + 3];
    if (std::memcmp(png.data() + at + 4, type, 4) == 0) return at;
    at += 12 + n;
  }
  FAIL("no " << type << " chunk");
  return 0;
}

}  // namespace

TEST_CASE("png_codec: OpenCV's PNGs inflated and unfiltered as OpenCV decodes them", "[app]") {
  const int type = GENERATE(CV_8UC1, CV_8UC3, CV_8UC4, CV_16UC1, CV_16UC3, CV_16UC4);
  const int level = GENERATE(-1, 1, 6, 9);  // -1: OpenCV's default (Sub rows); others: libpng's adaptive filters
  const cv::Mat img = test::test_image(67, 45, type, 3);
  const auto bytes = png_of(img, level < 0 ? std::vector<int>{} : std::vector<int>{cv::IMWRITE_PNG_COMPRESSION, level});
  const auto s = pipeline::inflate_png(bytes.data(), bytes.size());
  INFO("type " << type << ", level " << level);
  REQUIRE(s);
  CHECK(s->height == 67);
  CHECK(s->width == 45);
  CHECK(s->channels == img.channels());
  CHECK(s->depth == (img.depth() == CV_16U ? 16 : 8));
  const auto n = filter_counts(*s);
  if (level < 0) CHECK(s->none_or_sub());
  cv::Mat mine(67, 45, type);
  REQUIRE(pipeline::unfilter_png(*s, mine.data));
  CHECK(same(mine, decoded(bytes)));
  CHECK(same(mine, img));
  INFO("filters None/Sub/Up/Avg/Paeth " << n[0] << " " << n[1] << " " << n[2] << " " << n[3] << " " << n[4]);
  CHECK(n[0] + n[1] + n[2] + n[3] + n[4] == 67);
}

TEST_CASE("png_codec: every filter type undone (a noisy image makes libpng use them all)", "[app]") {
  // smooth gradients with noise: libpng's adaptive choice at level 9 picks several types
  cv::Mat img(96, 128, CV_8UC3);
  for (int y = 0; y < img.rows; ++y)
    for (int x = 0; x < img.cols; ++x)
      img.at<cv::Vec3b>(y, x) = cv::Vec3b((unsigned char)(x * 2 + y), (unsigned char)(y * 3 + (x * y) % 7),
                                          (unsigned char)((x ^ y) * 5));
  const auto bytes = png_of(img, {cv::IMWRITE_PNG_COMPRESSION, 9});
  const auto s = pipeline::inflate_png(bytes.data(), bytes.size());
  REQUIRE(s);
  const auto n = filter_counts(*s);
  INFO("filters None/Sub/Up/Avg/Paeth " << n[0] << " " << n[1] << " " << n[2] << " " << n[3] << " " << n[4]);
  CHECK(int(n[2] > 0) + int(n[3] > 0) + int(n[4] > 0) >= 2);
  CHECK_FALSE(s->none_or_sub());
  cv::Mat mine(img.size(), img.type());
  REQUIRE(pipeline::unfilter_png(*s, mine.data));
  CHECK(same(mine, img));
}

TEST_CASE("png_codec: the PNGs it writes read back as the image", "[app]") {
  const int type = GENERATE(CV_8UC1, CV_8UC3, CV_8UC4);
  const auto shape = GENERATE(cv::Size(1, 1), cv::Size(45, 67), cv::Size(700, 3));
  const cv::Mat img = test::test_image(shape.height, shape.width, type, 11);
  const bool alternate = GENERATE(false, true);
  const auto rows = scanlines_of(img, alternate);
  const auto png = pipeline::png_from_scanlines(rows.data(), img.rows, img.cols, img.channels());
  INFO("type " << type << ", " << shape.width << " x " << shape.height);
  CHECK(same(decoded(png), img));
  // and its own reader takes it back, scanline for scanline
  const auto s = pipeline::inflate_png(png.data(), png.size());
  REQUIRE(s);
  CHECK(s->rows == rows);
  CHECK(s->none_or_sub());
  // OpenCV's default settings (Sub rows, zlib level 1, run-length matches): OpenCV's size
  if (!alternate) {
    const auto theirs = png_of(img);
    CHECK(png.size() <= theirs.size() + theirs.size() / 100 + 64);
  }
}

TEST_CASE("png_codec: files OpenCV must decode (or reject) are not taken", "[app]") {
  const cv::Mat img = test::test_image(20, 30, CV_8UC3, 5);
  const auto good = png_of(img);
  REQUIRE(pipeline::inflate_png(good.data(), good.size()));
  SECTION("other depths (1, 2, 4 bits)") {
    auto b = good;
    const std::size_t ihdr = chunk_at(b, "IHDR");
    b[ihdr + 8 + 8] = 4;  // bit depth
    fix_crc(b, ihdr);
    CHECK_FALSE(pipeline::inflate_png(b.data(), b.size()));
  }
  SECTION("gray + alpha (OpenCV makes it BGRA)") {
    auto b = good;
    const std::size_t ihdr = chunk_at(b, "IHDR");
    b[ihdr + 8 + 9] = 4;  // colour type: gray + alpha
    fix_crc(b, ihdr);
    CHECK_FALSE(pipeline::inflate_png(b.data(), b.size()));
  }
  SECTION("interlaced") {
    auto b = good;
    const std::size_t ihdr = chunk_at(b, "IHDR");
    b[ihdr + 8 + 12] = 1;
    fix_crc(b, ihdr);
    CHECK_FALSE(pipeline::inflate_png(b.data(), b.size()));
  }
  SECTION("a bad CRC") {
    auto b = good;
    b[chunk_at(b, "IDAT") + 8] ^= 0x40;
    CHECK_FALSE(pipeline::inflate_png(b.data(), b.size()));
  }
  SECTION("truncated") {
    for (std::size_t keep : {std::size_t(8), std::size_t(40), good.size() / 2, good.size() - 12, good.size() - 1}) {
      const std::vector<unsigned char> b(good.begin(), good.begin() + long(keep));
      INFO(keep << " of " << good.size() << " bytes");
      CHECK_FALSE(pipeline::inflate_png(b.data(), b.size()));
    }
  }
  SECTION("not a PNG") {
    const std::vector<unsigned char> b(100, 7);
    CHECK_FALSE(pipeline::inflate_png(b.data(), b.size()));
  }
  SECTION("a transparency chunk, a palette chunk") {
    for (const char* type : {"tRNS", "PLTE"}) {
      // inserted after IHDR: 6 bytes of data
      auto b = good;
      const std::size_t at = chunk_at(b, "IHDR") + 12 + 13;
      std::vector<unsigned char> chunk = {0, 0, 0, 6};
      chunk.insert(chunk.end(), type, type + 4);
      chunk.insert(chunk.end(), {0, 1, 0, 2, 0, 3, 0, 0, 0, 0});
      b.insert(b.begin() + long(at), chunk.begin(), chunk.end());
      fix_crc(b, at);
      INFO(type);
      CHECK_FALSE(pipeline::inflate_png(b.data(), b.size()));
    }
  }
  SECTION("an ancillary chunk is ignored, as OpenCV ignores it") {
    auto b = good;
    const std::size_t at = chunk_at(b, "IHDR") + 12 + 13;
    std::vector<unsigned char> chunk = {0, 0, 0, 3, 't', 'E', 'X', 't', 'a', 0, 'b', 0, 0, 0, 0};
    b.insert(b.begin() + long(at), chunk.begin(), chunk.end());
    fix_crc(b, at);
    const auto s = pipeline::inflate_png(b.data(), b.size());
    REQUIRE(s);
    cv::Mat mine(img.size(), img.type());
    REQUIRE(pipeline::unfilter_png(*s, mine.data));
    CHECK(same(mine, img));
  }
}

TEST_CASE("png_codec: a stream over many IDAT chunks (libpng's 8 KB each)", "[app]") {
  const cv::Mat img = test::test_image(256, 192, CV_8UC3, 8);
  const auto bytes = png_of(img);
  int chunks = 0;
  for (std::size_t at = 8; at + 12 <= bytes.size();) {
    const std::size_t n = (std::size_t(bytes[at]) << 24) | (std::size_t(bytes[at + 1]) << 16) |
                          (std::size_t(bytes[at + 2]) << 8) | bytes[at + 3];
    chunks += std::memcmp(bytes.data() + at + 4, "IDAT", 4) == 0;
    at += 12 + n;
  }
  INFO(chunks << " IDAT chunks");
  REQUIRE(chunks >= 3);
  const auto s = pipeline::inflate_png(bytes.data(), bytes.size());
  REQUIRE(s);
  cv::Mat mine(img.size(), img.type());
  REQUIRE(pipeline::unfilter_png(*s, mine.data));
  CHECK(same(mine, img));
  // an IDAT chunk dropped from the middle: refused
  auto b = bytes;
  const std::size_t first = chunk_at(b, "IDAT");
  const std::size_t n = (std::size_t(b[first]) << 24) | (std::size_t(b[first + 1]) << 16) |
                        (std::size_t(b[first + 2]) << 8) | b[first + 3];
  b.erase(b.begin() + long(first), b.begin() + long(first + 12 + n));
  CHECK_FALSE(pipeline::inflate_png(b.data(), b.size()));
}

TEST_CASE("png_codec: a PNG around a zlib stream of the scanlines reads back as the image", "[app]") {
  const int type = GENERATE(CV_8UC1, CV_8UC3, CV_8UC4);
  const cv::Mat img = test::test_image(37, 53, type, 4);
  const auto rows = scanlines_of(img, true);
  std::vector<unsigned char> z(compressBound(uLong(rows.size())));
  uLongf zn = uLongf(z.size());
  REQUIRE(compress2(z.data(), &zn, rows.data(), uLong(rows.size()), 1) == Z_OK);
  const auto png = pipeline::png_from_zlib(z.data(), zn, img.rows, img.cols, img.channels());
  INFO("type " << type);
  CHECK(same(decoded(png), img));
  const auto s = pipeline::inflate_png(png.data(), png.size());
  REQUIRE(s);
  CHECK(s->rows == rows);
}

TEST_CASE("png_codec: 16-bit scanlines written back read as the image", "[app]") {
  const int type = GENERATE(CV_16UC1, CV_16UC3, CV_16UC4);
  const cv::Mat img = test::test_image(29, 41, type, 6);
  const auto bytes = png_of(img);
  const auto s = pipeline::inflate_png(bytes.data(), bytes.size());
  REQUIRE(s);
  REQUIRE(s->depth == 16);
  const auto png = pipeline::png_from_scanlines(s->rows.data(), s->height, s->width, s->channels, 16);
  CHECK(same(decoded(png), img));
  std::vector<unsigned char> z(compressBound(uLong(s->rows.size())));
  uLongf zn = uLongf(z.size());
  REQUIRE(compress2(z.data(), &zn, s->rows.data(), uLong(s->rows.size()), 1) == Z_OK);
  CHECK(same(decoded(pipeline::png_from_zlib(z.data(), zn, s->height, s->width, s->channels, 16)), img));
}
