// Multi-page TIFF stacks (stack_io.hpp): our encoder's bytes read back by OpenCV/libtiff for
// 8-bit, 16-bit and float pages, bad stacks refused with messages naming the file and page,
// 3D kernels (PSF stacks, gaussian3d) and the 2D commands' refusal of them.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <cmath>
#include <cstdint>
#include <fstream>

#include <opencv2/imgcodecs.hpp>

#include "errors.hpp"
#include "kernel_io.hpp"
#include "named_kernels.hpp"
#include "stack_io.hpp"
#include "support.hpp"

using namespace gpuconv;
using namespace gpuconv::app;
using Catch::Matchers::ContainsSubstring;
namespace fs = std::filesystem;

namespace {

std::vector<cv::Mat> random_pages(int count, int rows, int cols, int type, std::uint64_t seed) {
  std::vector<cv::Mat> pages;
  cv::RNG rng(seed);
  for (int i = 0; i < count; ++i) {
    cv::Mat m(rows, cols, type);
    const double top = CV_MAT_DEPTH(type) == CV_8U ? 256 : CV_MAT_DEPTH(type) == CV_16U ? 65536 : 1;
    rng.fill(m, cv::RNG::UNIFORM, 0, top);
    pages.push_back(m);
  }
  return pages;
}

void write_bytes(const fs::path& p, const std::vector<unsigned char>& b) {
  test::write_file(p, std::string(b.begin(), b.end()));
}

template <typename F>
std::string input_error_of(F&& f) {
  try {
    f();
  } catch (const input_error& e) {
    return e.what();
  }
  return "(no input_error)";
}

}  // namespace

TEST_CASE("stacks: our TIFF bytes read back by OpenCV, 8/16-bit and float", "[app][stack]") {
  test::scratch_dir dir;
  for (const int type : {CV_8U, CV_16U, CV_32F}) {
    CAPTURE(type);
    const auto pages = random_pages(5, 13, 17, type, 7 + type);
    const fs::path file = dir / ("s" + std::to_string(type) + ".tif");
    write_bytes(file, tiff_stack_bytes(pages, file));
    std::vector<cv::Mat> back;
    REQUIRE(cv::imreadmulti(file.string(), back, cv::IMREAD_UNCHANGED));
    REQUIRE(back.size() == pages.size());
    for (std::size_t z = 0; z < pages.size(); ++z) {
      REQUIRE(back[z].type() == type);
      CHECK(cv::norm(back[z], pages[z], cv::NORM_INF) == 0);
    }
    CHECK(tiff_page_count(file) == 5);
    CHECK(is_stack_file(file));
    const volume v = read_stack(file, "input '" + file.string() + "'");
    CHECK(v.depth == 5);
    CHECK(v.height == 13);
    CHECK(v.width == 17);
    CHECK(v.cv_depth == type);
    cv::Mat p3;
    pages[3].convertTo(p3, CV_32F);
    CHECK(v.values[(3 * 13 + 4) * 17 + 5] == p3.at<float>(4, 5));
  }
}

TEST_CASE("stacks: uncompressed pages read from their strips equal OpenCV's decode; others go through OpenCV",
          "[app][stack]") {
  test::scratch_dir dir;
  cv::RNG rng(5);
  for (const int type : {CV_8U, CV_16U, CV_32F}) {
    std::vector<cv::Mat> pages;
    for (int z = 0; z < 4; ++z) {
      cv::Mat m(37, 301, type);  // odd sizes: 8-bit pages of odd bytes; OpenCV writes ~8 KB strips
      rng.fill(m, cv::RNG::UNIFORM, 0, type == CV_32F ? 1 : type == CV_8U ? 256 : 65536);
      pages.push_back(m);
    }
    // our writer (one strip a page), OpenCV's uncompressed writer (strips of ~8 KB) and
    // OpenCV's LZW (compressed: decoded by OpenCV)
    const fs::path ours = dir / "ours.tif", strips = dir / "strips.tif", lzw = dir / "lzw.tif";
    volume v;
    v.depth = 4;
    v.height = 37;
    v.width = 301;
    for (const cv::Mat& m : pages) {
      cv::Mat f;
      m.convertTo(f, CV_32F);
      v.values.insert(v.values.end(), f.begin<float>(), f.end<float>());
    }
    write_stack(ours, v, type);
    REQUIRE(cv::imwritemulti(strips.string(), pages, std::vector<int>{cv::IMWRITE_TIFF_COMPRESSION, 1}));
    REQUIRE(cv::imwritemulti(lzw.string(), pages, std::vector<int>{cv::IMWRITE_TIFF_COMPRESSION, 5}));
    for (const fs::path& file : {ours, strips, lzw}) {
      CAPTURE(type, file.filename().string());
      if (file != lzw) CHECK(stack_reads_raw(file));
      else if (type != CV_32F) CHECK_FALSE(stack_reads_raw(file));  // (OpenCV writes float pages without LZW)
      const stored_volume s = read_stack_stored(file, "input");
      REQUIRE(s.depth == 4);
      REQUIRE(s.height == 37);
      REQUIRE(s.width == 301);
      REQUIRE(s.cv_depth == type);
      const std::size_t page_bytes = std::size_t(37 * 301) * CV_ELEM_SIZE(type);
      bool same = true;
      for (int z = 0; z < 4; ++z) {
        const cv::Mat got(37, 301, type, const_cast<unsigned char*>(s.bytes.data()) + z * page_bytes);
        same = same && cv::norm(got, pages[z], cv::NORM_INF) == 0;
      }
      CHECK(same);
    }
  }
}

namespace {

// A big-endian ('MM') baseline TIFF of gray pages, one strip each, as ImageJ and Fiji write
// stacks: SHORT values left-justified in their entries, samples in big-endian order.
std::vector<unsigned char> big_endian_tiff(const std::vector<cv::Mat>& pages) {
  std::vector<unsigned char> b{'M', 'M', 0, 42};
  auto put = [&](std::uint64_t v, int n) {
    for (int i = n - 1; i >= 0; --i) b.push_back(static_cast<unsigned char>(v >> (8 * i)));
  };
  auto patch32 = [&](std::size_t at, std::uint64_t v) {
    for (int i = 0; i < 4; ++i) b[at + i] = static_cast<unsigned char>(v >> (8 * (3 - i)));
  };
  std::size_t link = b.size();
  put(0, 4);
  for (const cv::Mat& m : pages) {
    const int bytes = int(m.elemSize());
    const std::uint64_t data = std::uint64_t(m.total()) * bytes;
    patch32(link, b.size());
    const std::uint64_t data_at = b.size() + 2 + 10 * 12 + 4;
    put(10, 2);
    auto entry = [&](int tag, int type, std::uint64_t value) {
      put(tag, 2);
      put(type, 2);
      put(1, 4);
      if (type == 3) {
        put(value, 2);
        put(0, 2);
      } else {
        put(value, 4);
      }
    };
    entry(256, 4, m.cols);
    entry(257, 4, m.rows);
    entry(258, 3, bytes * 8);
    entry(259, 3, 1);
    entry(262, 3, 1);
    entry(273, 4, data_at);
    entry(277, 3, 1);
    entry(278, 4, m.rows);
    entry(279, 4, data);
    entry(339, 3, m.depth() == CV_32F ? 3 : 1);
    link = b.size();
    put(0, 4);
    for (int y = 0; y < m.rows; ++y) {
      const unsigned char* row = m.ptr<unsigned char>(y);
      for (int x = 0; x < m.cols; ++x)
        for (int k = bytes - 1; k >= 0; --k) b.push_back(row[x * bytes + k]);  // host (LE) -> BE
    }
  }
  return b;
}

}  // namespace

TEST_CASE("stacks: big-endian stacks (ImageJ's byte order) read from their strips equal OpenCV's decode",
          "[app][stack]") {
  test::scratch_dir dir;
  cv::RNG rng(9);
  for (const int type : {CV_8U, CV_16U, CV_32F}) {
    std::vector<cv::Mat> pages;
    for (int z = 0; z < 3; ++z) {
      cv::Mat m(21, 17, type);
      rng.fill(m, cv::RNG::UNIFORM, 0, type == CV_32F ? 1 : type == CV_8U ? 256 : 65536);
      pages.push_back(m);
    }
    const fs::path file = dir / "mm.tif";
    const std::vector<unsigned char> bytes = big_endian_tiff(pages);
    std::ofstream(file, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
    CAPTURE(type);
    std::vector<cv::Mat> decoded;  // libtiff's reading of the same file
    REQUIRE(cv::imreadmulti(file.string(), decoded, cv::IMREAD_UNCHANGED));
    REQUIRE(decoded.size() == 3);
    CHECK(stack_reads_raw(file));
    const stored_volume s = read_stack_stored(file, "input");
    REQUIRE(s.cv_depth == type);
    const std::size_t page_bytes = std::size_t(21 * 17) * CV_ELEM_SIZE(type);
    for (int z = 0; z < 3; ++z) {
      const cv::Mat got(21, 17, type, const_cast<unsigned char*>(s.bytes.data()) + z * page_bytes);
      CHECK(cv::norm(got, pages[z], cv::NORM_INF) == 0);
      CHECK(cv::norm(decoded[z], pages[z], cv::NORM_INF) == 0);
    }
  }
}

TEST_CASE("stacks: volume -> file -> volume, rounding half to even and clipping counted", "[app][stack]") {
  test::scratch_dir dir;
  volume v;
  v.depth = 2;
  v.height = 1;
  v.width = 4;
  v.values = {0.5f, 1.5f, 2.5f, -3.f, 254.5f, 255.5f, 300.f, std::nanf("")};
  const fs::path file = dir / "r.tif";
  CHECK(write_stack(file, v, CV_8U) == 4);  // -3, 255.5 (rounds to 256), 300 and NaN
  const volume back = read_stack(file, "input");
  CHECK(std::vector<float>(back.values.begin(), back.values.end()) == std::vector<float>{0, 2, 2, 0, 254, 255, 255, 0});
  CHECK(write_stack(file, v, CV_16U, 2, 1) == 2);  // -5, NaN; 601 fits
  CHECK(read_stack(file, "input").values[6] == 601);
  write_stack(file, v, CV_32F);
  const volume f = read_stack(file, "input");
  CHECK(f.values[4] == 254.5f);
  CHECK(std::isnan(f.values[7]));
  CHECK(test::temp_files_under(dir.path()).empty());
}

TEST_CASE("stacks: bad stacks are input errors naming the file and the page", "[app][stack]") {
  test::scratch_dir dir;
  const fs::path good = dir / "good.tif";
  write_bytes(good, tiff_stack_bytes(random_pages(4, 32, 32, CV_16U, 3), good));
  const std::string bytes = test::read_file(good);

  const fs::path empty = dir / "empty.tif";
  test::write_file(empty, "");
  CHECK_THAT(input_error_of([&] { read_stack(empty, "input 'empty.tif'"); }), ContainsSubstring("empty file"));
  CHECK_THAT(input_error_of([&] { read_stack(dir / "none.tif", "input 'none.tif'"); }), ContainsSubstring("no such file"));

  // cut inside the last page's samples, and inside the second IFD
  for (const std::size_t keep : {bytes.size() - 100, std::size_t(2200)}) {
    CAPTURE(keep);
    const fs::path cut = dir / "cut.tif";
    test::write_file(cut, bytes.substr(0, keep));
    const std::string e = input_error_of([&] { read_stack(cut, "input 'cut.tif'"); });
    CHECK_THAT(e, ContainsSubstring("input 'cut.tif'"));
    CHECK(e != "(no input_error)");
  }

  const fs::path png = dir / "not.tif";
  cv::imwrite(png.string() + ".png", cv::Mat(4, 4, CV_8U, cv::Scalar(1)));
  fs::rename(png.string() + ".png", png);
  CHECK_THAT(input_error_of([&] { read_stack(png, "input 'not.tif'"); }), ContainsSubstring("not a TIFF"));

  const fs::path rgb = dir / "rgb.tif";
  REQUIRE(cv::imwritemulti(rgb.string(), random_pages(3, 8, 8, CV_8UC3, 4)));
  CHECK_THAT(input_error_of([&] { read_stack(rgb, "input 'rgb.tif'"); }),
             ContainsSubstring("page 1 of 3: 3 channels"));

  const fs::path mixed = dir / "mixed.tif";
  auto pages = random_pages(3, 8, 8, CV_8U, 5);
  pages[2] = cv::Mat(9, 8, CV_8U, cv::Scalar(3));
  REQUIRE(cv::imwritemulti(mixed.string(), pages));
  CHECK_THAT(input_error_of([&] { read_stack(mixed, "input 'mixed.tif'"); }),
             ContainsSubstring("page 3 of 3: 8 x 9, but page 1 is 8 x 8"));

  setenv("GPUCONV_MAX_PIXELS", "4000", 1);
  CHECK_THAT(input_error_of([&] { read_stack(good, "input 'good.tif'"); }), ContainsSubstring("more voxels than the limit"));
  unsetenv("GPUCONV_MAX_PIXELS");
}

TEST_CASE("stacks: outputs must be TIFF; pages must agree", "[app][stack]") {
  CHECK_THROWS_AS(check_stack_output("out.png"), usage_error);
  CHECK_NOTHROW(check_stack_output("out.TIFF"));
  auto pages = random_pages(2, 4, 4, CV_8U, 1);
  pages[1] = cv::Mat(4, 4, CV_16U);
  CHECK_THROWS_AS(tiff_stack_bytes(pages, "o.tif"), output_error);
}

TEST_CASE("3D kernels: gaussian3d, PSF stacks, and the 2D commands refuse them", "[app][stack]") {
  const auto g = make_named_kernel("gaussian3d:1,2,0.5");
  REQUIRE(g);
  CHECK(g->width == 9);
  CHECK(g->height == 17);
  CHECK(g->depth == 5);  // 2 * round(2) + 1
  CHECK(std::abs(g->sum() - 1) < 1e-5);
  // separable: the centre row along x is the 1D gaussian of sigma 1, up to the other axes' weight
  const auto at = [&](int z, int y, int x) { return g->values[(std::size_t(z) * 17 + y) * 9 + x]; };
  CHECK(std::abs(at(2, 8, 5) / at(2, 8, 4) - std::exp(-0.5)) < 1e-6);
  CHECK(std::abs(at(3, 8, 4) / at(2, 8, 4) - std::exp(-2.0)) < 1e-5);
  const auto iso = make_named_kernel("gaussian3d:1.5");
  REQUIRE(iso);
  CHECK((iso->width == 13 && iso->height == 13 && iso->depth == 13));
  CHECK_THROWS_AS(make_named_kernel("gaussian3d:1,2"), usage_error);
  CHECK_THROWS_AS(make_named_kernel("gaussian3d:1,2,0"), usage_error);
  CHECK_THROWS_AS(make_named_kernel("gaussian3d:100,100,100"), usage_error);

  try {
    resolve_kernel("gaussian3d:1");
    FAIL("resolve_kernel took a 3D kernel");
  } catch (const usage_error& e) {
    CHECK_THAT(e.what(), ContainsSubstring("is 3D (9 x 9 x 9)"));
  }

  test::scratch_dir dir;
  const fs::path psf = dir / "psf.tif";
  auto pages = random_pages(3, 5, 7, CV_32F, 9);
  write_bytes(psf, tiff_stack_bytes(pages, psf));
  const kernel k = resolve_volume_kernel(psf.string());
  CHECK((k.depth == 3 && k.height == 5 && k.width == 7));
  CHECK(std::abs(k.sum() - 1) < 1e-5);
  CHECK_THROWS_AS(resolve_kernel(psf.string()), usage_error);
  // a one-page TIFF stays a 2D PSF image
  const fs::path flat = dir / "flat.tif";
  write_bytes(flat, tiff_stack_bytes({pages[0]}, flat));
  CHECK(resolve_kernel(flat.string()).depth == 1);
  // zero-sum PSF stack
  const fs::path zero = dir / "zero.tif";
  write_bytes(zero, tiff_stack_bytes(std::vector<cv::Mat>(2, cv::Mat(3, 3, CV_32F, cv::Scalar(0))), zero));
  CHECK_THAT(input_error_of([&] { resolve_volume_kernel(zero.string()); }), ContainsSubstring("sums to ~0"));
}
