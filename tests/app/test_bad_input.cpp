// Bad input through the built gpuconv binary (issue 6): zero-byte, truncated and corrupt
// PNG/JPEG/TIFF files, a PNG whose header claims 100000 x 100000 pixels, an unsupported
// format, directories where files are expected, and bad kernels. Every case must give one
// line on stderr naming the file and the problem, the documented exit code for its class
// (README "Errors and exit codes": 3 input, 2 usage), no output file and no temp file, and
// leave every input byte for byte and mtime as it was.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <map>

#include <opencv2/imgcodecs.hpp>

#include "errors.hpp"
#include "image_io.hpp"
#include "support.hpp"

using namespace gpuconv;
using namespace gpuconv::app;
using Catch::Matchers::ContainsSubstring;
namespace fs = std::filesystem;

namespace {

std::string encode(const cv::Mat& image, const std::string& ext) {
  std::vector<uchar> bytes;
  REQUIRE(cv::imencode(ext, image, bytes));
  return std::string(bytes.begin(), bytes.end());
}

std::string be32(std::uint32_t v) {
  return {char(v >> 24), char(v >> 16), char(v >> 8), char(v)};
}

// A PNG chunk with a correct CRC.
std::string png_chunk(const std::string& type, const std::string& data) {
  const std::string body = type + data;
  const auto crc = std::uint32_t(::crc32(0, reinterpret_cast<const Bytef*>(body.data()), uInt(body.size())));
  return be32(std::uint32_t(data.size())) + body + be32(crc);
}

// A well-formed PNG header for width x height RGB 8-bit, with a tiny IDAT: a decoder that
// trusts the header would try to allocate width * height * 3 bytes.
std::string png_claiming(std::uint32_t width, std::uint32_t height) {
  const std::string ihdr = be32(width) + be32(height) + std::string("\x08\x02\x00\x00\x00", 5);
  const std::string raw(64, '\0');
  std::string z(256, '\0');
  uLongf zsize = uLongf(z.size());
  REQUIRE(::compress(reinterpret_cast<Bytef*>(z.data()), &zsize, reinterpret_cast<const Bytef*>(raw.data()),
                     uLong(raw.size())) == Z_OK);
  z.resize(zsize);
  return std::string("\x89PNG\r\n\x1a\n", 8) + png_chunk("IHDR", ihdr) + png_chunk("IDAT", z) + png_chunk("IEND", "");
}

std::string flip_bytes(std::string bytes, std::size_t from, std::size_t count) {
  for (std::size_t i = from; i < std::min(bytes.size(), from + count); ++i) bytes[i] = char(bytes[i] ^ 0x5a);
  return bytes;
}

// Bytes and mtime of every file under `dir`.
std::map<fs::path, std::pair<std::string, fs::file_time_type>> snapshot(const fs::path& dir) {
  std::map<fs::path, std::pair<std::string, fs::file_time_type>> s;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file() && e.path().filename().string()[0] != '.')
      s[e.path()] = {test::read_file(e.path()), fs::last_write_time(e.path())};
  return s;
}

struct bad_case {
  std::string name;                    // for the report
  std::vector<std::string> args;       // gpuconv arguments (the output is added)
  int code;                            // expected exit code
  std::vector<std::string> message;    // substrings the error line must hold
};

}  // namespace

TEST_CASE("bad input: one-line error naming the file, the class's exit code, no output, inputs unchanged",
          "[app][cli]") {
  test::scratch_dir dir;
  const auto in = dir / "in";
  fs::create_directories(in / "a-directory.png");
  const cv::Mat image = test::test_image(48, 64, CV_8UC3, 7);
  const std::string png = encode(image, ".png"), jpg = encode(image, ".jpg"), tif = encode(image, ".tif");
  const auto put = [&](const std::string& name, const std::string& bytes) {
    test::write_file(in / name, bytes);
    return (in / name).string();
  };
  const std::string good = put("good.png", png);
  const std::string kernel = put("k.txt", "1 2 1\n2 4 2\n1 2 1\n");
  // corrupt PNG: bytes of the IDAT changed (CRC error); corrupt JPEG: entropy-coded data
  // changed (libjpeg warns and would fill with gray); corrupt TIFF: the IFD offset points
  // past the end of the file
  std::string bad_tif = tif;
  for (int i = 4; i < 8; ++i) bad_tif[i] = char(0x7f);

  const std::vector<bad_case> cases{
      {"zero-byte PNG", {put("zero.png", ""), kernel}, exit_input, {"zero.png", "empty file"}},
      {"zero-byte JPEG", {put("zero.jpg", ""), kernel}, exit_input, {"zero.jpg", "empty file"}},
      {"zero-byte TIFF", {put("zero.tif", ""), kernel}, exit_input, {"zero.tif", "empty file"}},
      {"truncated PNG", {put("trunc.png", png.substr(0, png.size() / 2)), kernel}, exit_input,
       {"trunc.png", "cannot be read or decoded"}},
      {"truncated JPEG", {put("trunc.jpg", jpg.substr(0, jpg.size() / 2)), kernel}, exit_input,
       {"trunc.jpg", "truncated or corrupt", "Premature end of JPEG file"}},
      {"truncated TIFF", {put("trunc.tif", tif.substr(0, tif.size() / 2)), kernel}, exit_input,
       {"trunc.tif", "cannot be read or decoded"}},
      {"corrupt PNG", {put("corrupt.png", flip_bytes(png, png.size() / 2, 64)), kernel}, exit_input,
       {"corrupt.png", "cannot be read or decoded", "libpng error"}},
      {"corrupt JPEG", {put("corrupt.jpg", flip_bytes(jpg, jpg.size() / 3, 200)), kernel}, exit_input,
       {"corrupt.jpg", "truncated or corrupt", "Corrupt JPEG data"}},
      {"corrupt TIFF", {put("corrupt.tif", bad_tif), kernel}, exit_input, {"corrupt.tif", "cannot be read or decoded"}},
      {"PNG header claiming 100000 x 100000", {put("huge.png", png_claiming(100000, 100000)), kernel}, exit_input,
       {"huge.png", "100000 x 100000 pixels, more than the limit of 268435456"}},
      {"PNG header claiming 4294967295 x 4294967295 (a product beyond 64 bits)",
       {put("huger.png", png_claiming(0xFFFFFFFFu, 0xFFFFFFFFu)), kernel}, exit_input,
       {"huger.png", "4294967295 x 4294967295 pixels, more than the limit"}},
      {"unsupported format (GIF)", {put("anim.gif", "GIF89a\x01\x00\x01\x00\x00\x00\x00;"), kernel}, exit_input,
       {"anim.gif", "cannot be read or decoded"}},
      {"text file named .png", {put("notes.png", "just some text\n"), kernel}, exit_input,
       {"notes.png", "cannot be read or decoded"}},
      {"directory as INPUT", {(in / "a-directory.png").string(), kernel}, exit_input,
       {"a-directory.png", "is a directory"}},
      {"missing INPUT", {(in / "missing.png").string(), kernel}, exit_input, {"missing.png", "no such file"}},
      {"directory as KERNEL", {good, in.string()}, exit_input, {in.string(), "is a directory"}},
      {"missing kernel", {good, (in / "nope.txt").string()}, exit_input,
       {"nope.txt", "no such file and not a named kernel"}},
      {"kernel with text", {good, put("text.txt", "1 2 1\n2 four 2\n1 2 1\n")}, exit_input,
       {"text.txt", "line 2", "'four' is not a number"}},
      {"ragged kernel rows", {good, put("ragged.txt", "1 2 1\n2 4\n1 2 1\n")}, exit_input,
       {"ragged.txt", "line 2", "2 values, expected 3"}},
      {"NaN in kernel", {good, put("nan.txt", "1 nan 1\n")}, exit_input, {"nan.txt", "'nan' is not a finite number"}},
      {"Inf in kernel", {good, put("inf.txt", "1 1\n-inf 1\n")}, exit_input,
       {"inf.txt", "line 2", "'-inf' is not a finite number"}},
      {"empty kernel file", {good, put("empty.txt", "")}, exit_input, {"empty.txt", "no kernel values"}},
      {"kernel of comments only", {good, put("comments.txt", "# nothing\n\n")}, exit_input,
       {"comments.txt", "no kernel values"}},
      {"truncated PSF image kernel", {good, put("psf.png", png.substr(0, 40))}, exit_input,
       {"psf.png", "PSF image"}},
      {"kernel larger than the image in 'valid' mode", {good, "box:65", "--mode", "valid"}, exit_usage,
       {"good.png", "box:65", "valid"}},
  };

  const auto before = snapshot(dir.path());
  for (const auto& c : cases) {
    DYNAMIC_SECTION(c.name) {
      const auto out = dir / "out" / "result.png";
      fs::create_directories(out.parent_path());
      std::vector<std::string> args{c.args[0], c.args[1], out.string(), "--device", "cpu"};
      args.insert(args.end(), c.args.begin() + 2, c.args.end());
      const auto r = test::run_gpuconv(args, dir.path());
      INFO(r.err);
      CHECK(r.exit_code == c.code);
      CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
      CHECK_THAT(r.err, ContainsSubstring("gpuconv: error: "));
      for (const auto& m : c.message) CHECK_THAT(r.err, ContainsSubstring(m));
      CHECK(r.out.empty());
      CHECK(fs::is_empty(out.parent_path()));  // no output, no temp file
      CHECK(snapshot(dir.path()) == before);
    }
  }
}

TEST_CASE("bad input in a batch: each bad file reported on one line and skipped, the good ones done", "[app][cli]") {
  test::scratch_dir dir;
  const auto in = dir / "in", out = dir / "out";
  fs::create_directories(in);
  const cv::Mat image = test::test_image(32, 32, CV_8UC1, 3);
  const std::string png = encode(image, ".png"), jpg = encode(image, ".jpg");
  test::write_file(in / "good.png", png);
  test::write_file(in / "zero.png", "");
  test::write_file(in / "trunc.jpg", jpg.substr(0, jpg.size() / 2));
  test::write_file(in / "huge.png", png_claiming(100000, 100000));
  const auto before = snapshot(in);
  const auto r = test::run_gpuconv({"batch", in.string(), "box:3", out.string(), "--device", "cpu", "--jobs", "2"},
                                   dir.path());
  INFO(r.err);
  CHECK(r.exit_code == exit_failure);
  CHECK_THAT(r.err, ContainsSubstring("done 1, skipped 0, failed 3"));
  CHECK_THAT(r.err, ContainsSubstring("zero.png': empty file"));
  CHECK_THAT(r.err, ContainsSubstring("trunc.jpg': truncated or corrupt"));
  CHECK_THAT(r.err, ContainsSubstring("huge.png': 100000 x 100000 pixels"));
  CHECK(r.err.find("libjpeg") == std::string::npos);
  CHECK(r.err.find("\nPremature") == std::string::npos);  // no decoder chatter on lines of its own
  CHECK(fs::exists(out / "good.png"));
  CHECK_FALSE(fs::exists(out / "zero.png"));
  CHECK_FALSE(fs::exists(out / "trunc.jpg"));
  CHECK_FALSE(fs::exists(out / "huge.png"));
  CHECK(test::temp_files_under(dir.path()).empty());
  CHECK(snapshot(in) == before);
}

TEST_CASE("peek_image_size reads PNG, JPEG, TIFF and BMP headers without decoding", "[app]") {
  test::scratch_dir dir;
  const cv::Mat image = test::test_image(37, 53, CV_8UC3, 1);
  for (const char* ext : {".png", ".jpg", ".tif", ".bmp"}) {
    INFO(ext);
    const auto file = dir / (std::string("i") + ext);
    REQUIRE(cv::imwrite(file.string(), image));
    const auto size = peek_image_size(file);
    REQUIRE(size.has_value());
    CHECK(size->width == 53);
    CHECK(size->height == 37);
  }
  test::write_file(dir / "h.png", png_claiming(100000, 70000));
  const auto size = peek_image_size(dir / "h.png");
  REQUIRE(size.has_value());
  CHECK(size->width == 100000);
  CHECK(size->height == 70000);
  test::write_file(dir / "junk.png", "junk");
  CHECK_FALSE(peek_image_size(dir / "junk.png").has_value());
  CHECK_FALSE(peek_image_size(dir / "missing.png").has_value());
}
