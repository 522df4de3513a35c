#include "image_io.hpp"
#include "jpeg_strips.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "atomic_write.hpp"
#include "errors.hpp"
#include "kernel_io.hpp"
#include "stack_io.hpp"

namespace gpuconv::app {

namespace fs = std::filesystem;

namespace {

bool ext_in(const fs::path& file, std::initializer_list<const char*> list) {
  const std::string ext = to_lower(file.extension().string());
  return std::any_of(list.begin(), list.end(), [&](const char* e) { return ext == e; });
}

// Big- and little-endian unsigned integers from bytes.
std::uint32_t be(const unsigned char* p, int n) {
  std::uint32_t v = 0;
  for (int i = 0; i < n; ++i) v = v << 8 | p[i];
  return v;
}
std::uint32_t le(const unsigned char* p, int n) {
  std::uint32_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = v << 8 | p[i];
  return v;
}

bool read_at(std::ifstream& in, std::uint64_t offset, unsigned char* out, std::size_t n) {
  in.clear();
  in.seekg(std::streamoff(offset));
  return bool(in.read(reinterpret_cast<char*>(out), std::streamsize(n)));
}

// JPEG: walk the marker segments from SOI to the first SOFn (C0-CF except C4 DHT, C8 JPG,
// CC DAC); its payload is precision, height, width.
std::optional<image_size> jpeg_size(std::ifstream& in) {
  std::uint64_t pos = 2;
  unsigned char m[9];
  for (int segments = 0; segments < 10000; ++segments) {
    if (!read_at(in, pos, m, 4)) return std::nullopt;
    if (m[0] != 0xFF) return std::nullopt;
    if (m[1] == 0xFF) {  // fill byte
      ++pos;
      continue;
    }
    const int marker = m[1];
    if (marker == 0xD8 || (marker >= 0xD0 && marker <= 0xD7) || marker == 0x01) {  // no payload
      pos += 2;
      continue;
    }
    if (marker == 0xD9 || marker == 0xDA) return std::nullopt;  // EOI / SOS before any SOF
    const std::uint32_t length = be(m + 2, 2);
    if (length < 2) return std::nullopt;
    if (marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 && marker != 0xCC) {
      if (!read_at(in, pos + 4, m, 5)) return std::nullopt;
      return image_size{be(m + 3, 2), be(m + 1, 2)};
    }
    pos += 2 + length;
  }
  return std::nullopt;
}

// TIFF: the first IFD's ImageWidth (256) and ImageLength (257), SHORT or LONG.
std::optional<image_size> tiff_size(std::ifstream& in, bool little) {
  auto u = [&](const unsigned char* p, int n) { return little ? le(p, n) : be(p, n); };
  unsigned char b[12];
  if (!read_at(in, 4, b, 4)) return std::nullopt;
  const std::uint32_t ifd = u(b, 4);
  if (!read_at(in, ifd, b, 2)) return std::nullopt;
  const std::uint32_t entries = u(b, 2);
  long long width = -1, height = -1;
  for (std::uint32_t i = 0; i < entries && i < 4096; ++i) {
    if (!read_at(in, std::uint64_t(ifd) + 2 + 12ull * i, b, 12)) return std::nullopt;
    const std::uint32_t tag = u(b, 2), type = u(b + 2, 2);
    const std::uint32_t value = type == 3 ? u(b + 8, 2) : type == 4 ? u(b + 8, 4) : 0;
    if (tag == 256) width = value;
    if (tag == 257) height = value;
  }
  if (width < 0 || height < 0) return std::nullopt;
  return image_size{width, height};
}

// Per-thread decoder messages: what libpng/libjpeg print on the C stderr while this thread
// decodes (the stream is unbuffered, so each fprintf reaches `write_message` in its thread).
thread_local std::string decoder_text;

ssize_t write_message(void*, const char* data, std::size_t size) {
  decoder_text.append(data, size);
  if (decoder_text.size() > 4096) decoder_text.erase(0, decoder_text.size() - 4096);
  return ssize_t(size);
}

}  // namespace

std::string one_line(std::string text) {
  std::string out;
  for (char ch : text) {
    if (ch == '\n' || ch == '\r') {
      if (!out.empty() && out.back() != ' ') out += "; ";
    } else {
      out += ch;
    }
  }
  while (!out.empty() && (out.back() == ' ' || out.back() == ';')) out.pop_back();
  return out;
}

long long max_image_pixels() {
  if (const char* env = std::getenv("GPUCONV_MAX_PIXELS")) {
    char* end = nullptr;
    const long long v = std::strtoll(env, &end, 10);
    if (end != env && *end == 0 && v > 0) return v;
  }
  return 1ll << 28;
}

std::optional<image_size> peek_image_size(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  unsigned char h[26];
  if (!in.read(reinterpret_cast<char*>(h), 4)) return std::nullopt;
  if (h[0] == 0xFF && h[1] == 0xD8) return jpeg_size(in);
  if (h[0] == 'I' && h[1] == 'I' && h[2] == 42 && h[3] == 0) return tiff_size(in, true);
  if (h[0] == 'M' && h[1] == 'M' && h[2] == 0 && h[3] == 42) return tiff_size(in, false);
  if (!read_at(in, 0, h, 26)) return std::nullopt;
  if (std::memcmp(h, "\x89PNG\r\n\x1a\n", 8) == 0 && std::memcmp(h + 12, "IHDR", 4) == 0)
    return image_size{be(h + 16, 4), be(h + 20, 4)};
  if (h[0] == 'B' && h[1] == 'M') {
    const auto height = std::int32_t(le(h + 22, 4));  // negative: a top-down bitmap
    return image_size{std::int32_t(le(h + 18, 4)), height < 0 ? -(long long)height : height};
  }
  return std::nullopt;
}

void capture_decoder_messages() {
  if (const char* env = std::getenv("GPUCONV_DECODER_MESSAGES"); env && std::string(env) == "1") return;
  cookie_io_functions_t io{};
  io.write = write_message;
  if (FILE* f = ::fopencookie(nullptr, "w", io)) {
    std::setvbuf(f, nullptr, _IONBF, 0);
    stderr = f;  // glibc: stderr is an assignable variable; std::cerr keeps the real one
  }
}

std::string depth_name(int cv_depth) {
  switch (cv_depth) {
    case CV_8U: return "8-bit";
    case CV_8S: return "8-bit signed";
    case CV_16U: return "16-bit";
    case CV_16S: return "16-bit signed";
    case CV_32S: return "32-bit integer";
    case CV_32F: return "32-bit float";
    case CV_64F: return "64-bit float";
    default: return "depth " + std::to_string(cv_depth);
  }
}

namespace {

input_error too_large(const std::string& name, long long w, long long h) {
  return input_error(name + ": " + std::to_string(w) + " x " + std::to_string(h) + " pixels, more than the limit of " +
                     std::to_string(max_image_pixels()) + " (GPUCONV_MAX_PIXELS)");
}

}  // namespace

void check_before_decoding(const fs::path& file, const std::string& name) {
  std::error_code ec;
  const auto status = fs::status(file, ec);
  if (!fs::exists(status))
    throw input_error(name + (fs::is_symlink(fs::symlink_status(file, ec)) ? ": dangling symbolic link" : ": no such file"));
  if (fs::is_directory(status)) throw input_error(name + ": is a directory");
  if (::access(file.c_str(), R_OK) != 0) throw input_error(name + ": cannot be read: " + std::strerror(errno));
  if (fs::is_regular_file(status) && fs::file_size(file, ec) == 0 && !ec) throw input_error(name + ": empty file (0 bytes)");
  if (const auto size = peek_image_size(file); size && double(size->width) * double(size->height) > double(max_image_pixels()))
    throw too_large(name, size->width, size->height);
}

std::string take_decoder_messages() {
  std::string said = one_line(decoder_text);
  decoder_text.clear();
  return said;
}

namespace {

// After decoding: the decoder's words, the pixel limit, depth and channels.
cv::Mat checked(cv::Mat img, const std::string& name) {
  const std::string said = take_decoder_messages();
  if (img.empty())
    throw input_error(name + ": cannot be read or decoded (" +
                      (said.empty() ? std::string("unreadable, corrupt or unsupported") : said) + ")");
  if (said.find("Premature end of JPEG file") != std::string::npos || said.find("Corrupt JPEG data") != std::string::npos)
    throw input_error(name + ": truncated or corrupt (" + said + ")");
  if (static_cast<long long>(img.rows) * img.cols > max_image_pixels()) throw too_large(name, img.cols, img.rows);
  if (img.depth() != CV_8U && img.depth() != CV_16U && img.depth() != CV_32F)
    throw input_error(name + ": " + depth_name(img.depth()) + " samples are not supported (8-bit, 16-bit, 32-bit float)");
  if (img.channels() < 1 || img.channels() > 4)
    throw input_error(name + ": " + std::to_string(img.channels()) + " channels are not supported (1 to 4)");
  return img;
}

}  // namespace

cv::Mat read_image(const fs::path& file) {
  const std::string name = "input '" + file.string() + "'";
  check_before_decoding(file, name);
  cv::Mat img;
  decoder_text.clear();
  try {
    img = cv::imread(file.string(), cv::IMREAD_UNCHANGED);
  } catch (const cv::Exception& e) {
    throw input_error(name + ": cannot be decoded (" + e.err + ")");
  }
  return checked(std::move(img), name);
}

std::vector<unsigned char> read_image_bytes(const fs::path& file) {
  const std::string name = "input '" + file.string() + "'";
  check_before_decoding(file, name);
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw input_error(name + ": cannot be read: " + std::strerror(errno));
  std::vector<unsigned char> bytes;
  struct stat st {};
  if (::fstat(fd, &st) == 0 && st.st_size > 0) bytes.reserve(std::size_t(st.st_size));
  unsigned char chunk[1 << 16];
  for (;;) {  // read(2) straight into the buffer: a 4 MB photo in ~1 ms from the page cache
    const std::size_t have = bytes.size();
    if (bytes.capacity() > have) {
      bytes.resize(bytes.capacity());
      const ssize_t n = ::read(fd, bytes.data() + have, bytes.size() - have);
      bytes.resize(have + std::size_t(std::max<ssize_t>(n, 0)));
      if (n > 0) continue;
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        const int e = errno;
        ::close(fd);
        throw input_error(name + ": cannot be read: " + std::strerror(e));
      }
    }
    const ssize_t n = ::read(fd, chunk, sizeof chunk);  // past the size fstat gave, or none given
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int e = errno;
      ::close(fd);
      throw input_error(name + ": cannot be read: " + std::strerror(e));
    }
    if (n == 0) break;
    bytes.insert(bytes.end(), chunk, chunk + n);
  }
  ::close(fd);
  return bytes;
}

int output_cv_depth(output_depth d, int input_depth) {
  switch (d) {
    case output_depth::same: return input_depth;
    case output_depth::u8: return CV_8U;
    case output_depth::u16: return CV_16U;
    case output_depth::f32: return CV_32F;
  }
  return input_depth;
}

double alpha_max(int cv_depth) {
  switch (cv_depth) {
    case CV_8U: return 255.0;
    case CV_16U: return 65535.0;
    default: return 1.0;
  }
}

void check_output_format(const fs::path& file, int cv_depth, int channels) {
  const std::string name = "output '" + file.string() + "'";
  if (file.extension().empty())
    throw usage_error(name + ": no extension, so no image format (use .png, .tif, .jpg, ...)");
  if (!cv::haveImageWriter(file.string()))
    throw usage_error(name + ": OpenCV has no writer for '" + file.extension().string() + "' files");
  if (cv_depth == CV_16U && !ext_in(file, {".png", ".tif", ".tiff", ".pgm", ".ppm", ".pnm", ".jp2"}))
    throw usage_error(name + ": the format cannot hold 16-bit samples; use .png or .tif, or --depth 8");
  if (cv_depth == CV_32F && !ext_in(file, {".tif", ".tiff", ".exr", ".pfm"}))
    throw usage_error(name + ": the format cannot hold 32-bit float samples; use .tif, .exr or .pfm, or --depth 8/16");
  if (ext_in(file, {".pfm"}) && channels != 1 && channels != 3)
    throw usage_error(name + ": PFM holds 1 or 3 channels, not " + std::to_string(channels));
}

cv::Mat for_writing(const cv::Mat& image) {
  if (image.channels() != 2) return image;
  std::vector<cv::Mat> ga;
  cv::split(image, ga);
  cv::Mat bgra;
  cv::merge(std::vector<cv::Mat>{ga[0], ga[0], ga[0], ga[1]}, bgra);
  return bgra;
}

std::vector<int> write_params(const fs::path& file, const cv::Mat& image, const codec_options& codec) {
  constexpr int tiff_lzw = 5;  // libtiff's COMPRESSION_LZW
  if (image.depth() == CV_32F && ext_in(file, {".tif", ".tiff"})) return {cv::IMWRITE_TIFF_COMPRESSION, tiff_lzw};
  if (is_jpeg_name(file)) return {cv::IMWRITE_JPEG_QUALITY, codec.jpeg_quality};
  if (ext_in(file, {".png"}) && codec.png_level >= 0) return {cv::IMWRITE_PNG_COMPRESSION, codec.png_level};
  return {};
}

bool tiff_written_directly(const fs::path& file, const cv::Mat& image) {
  return image.channels() == 1 && image.depth() == CV_32F && ext_in(file, {".tif", ".tiff"});
}

void write_output(const fs::path& file, const cv::Mat& image, bool overwrite, const codec_options& codec) {
  const cv::Mat m = for_writing(image);
  if (tiff_written_directly(file, m)) {
    write_tiff_pages(file, {m}, overwrite);
    return;
  }
  write_image_atomic(file, m, overwrite, write_params(file, m, codec));
}

std::vector<unsigned char> encode_output(const fs::path& file, const cv::Mat& image, const codec_options& codec) {
  const cv::Mat m = for_writing(image);
  const std::string name = "output '" + file.string() + "'";
  if (tiff_written_directly(file, m)) return tiff_stack_bytes({m}, file);
  std::vector<unsigned char> bytes;
  try {
    if (is_jpeg_name(file) && codec.jpeg_threads > 1)
      if (auto strips = encode_jpeg_strips(m, codec.jpeg_quality, codec.jpeg_threads)) return std::move(*strips);
    if (!cv::imencode(file.extension().string(), m, bytes, write_params(file, m, codec)))
      throw output_error(name + ": OpenCV could not encode it as '" + file.extension().string() + "'");
  } catch (const cv::Exception& e) {
    throw output_error(name + ": cannot be encoded (" + e.err + ")");
  }
  return bytes;
}

bool is_jpeg_name(const fs::path& file) { return ext_in(file, {".jpg", ".jpeg"}); }

bool is_png_name(const fs::path& file) { return ext_in(file, {".png"}); }

}  // namespace gpuconv::app
