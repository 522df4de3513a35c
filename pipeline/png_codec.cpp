#include "png_codec.hpp"

#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <utility>
#include <string>

namespace gpuconv::pipeline {

namespace {

constexpr unsigned char signature[8] = {137, 'P', 'N', 'G', '\r', '\n', 26, '\n'};

std::uint32_t be32(const unsigned char* p) {
  return (std::uint32_t(p[0]) << 24) | (std::uint32_t(p[1]) << 16) | (std::uint32_t(p[2]) << 8) | std::uint32_t(p[3]);
}

void put_be32(std::vector<unsigned char>& v, std::size_t at, std::uint32_t x) {
  v[at] = (unsigned char)(x >> 24);
  v[at + 1] = (unsigned char)(x >> 16);
  v[at + 2] = (unsigned char)(x >> 8);
  v[at + 3] = (unsigned char)x;
}

bool is_type(const unsigned char* p, const char* type) { return std::memcmp(p, type, 4) == 0; }

int channels_of(int colour_type) { return colour_type == 0 ? 1 : colour_type == 2 ? 3 : colour_type == 6 ? 4 : 0; }

int colour_type_of(int channels) { return channels == 1 ? 0 : channels == 3 ? 2 : 6; }

// The CRC of a chunk: over its type and data
std::uint32_t chunk_crc(const unsigned char* type_and_data, std::size_t n) {
  uLong crc = crc32(0L, Z_NULL, 0);
  for (std::size_t done = 0; done < n;) {  // crc32 takes a uInt length
    const uInt part = (uInt)std::min<std::size_t>(n - done, 1u << 30);
    crc = crc32(crc, type_and_data + done, part);
    done += part;
  }
  return std::uint32_t(crc);
}

unsigned char paeth(int a, int b, int c) {
  const int p = a + b - c, pa = std::abs(p - a), pb = std::abs(p - b), pc = std::abs(p - c);
  return (unsigned char)(pa <= pb && pa <= pc ? a : pb <= pc ? b : c);
}

// IDAT chunks of at most 256 MiB
constexpr std::size_t chunk_max = std::size_t(1) << 28;

// A chunk of `length` data bytes appended to png (its data left to the caller); returns where it starts
std::size_t begin_chunk(std::vector<unsigned char>& png, const char* type, std::size_t length) {
  const std::size_t at = png.size();
  png.resize(at + 8 + length);
  put_be32(png, at, std::uint32_t(length));
  std::memcpy(png.data() + at + 4, type, 4);
  return at;
}

// The chunk at `at`, complete up to png.size(): its length and CRC
void end_chunk(std::vector<unsigned char>& png, std::size_t at) {
  const std::size_t length = png.size() - at - 8;
  put_be32(png, at, std::uint32_t(length));
  const std::uint32_t crc = chunk_crc(png.data() + at + 4, 4 + length);
  png.resize(png.size() + 4);
  put_be32(png, png.size() - 4, crc);
}

// The signature and IHDR of an h x w image of `channels` samples of `depth` bits; throws
// std::invalid_argument (naming `who`) for a shape PNG's writers here do not take
std::vector<unsigned char> png_start(const char* who, int height, int width, int channels, int depth) {
  if (height < 1 || width < 1 || (channels != 1 && channels != 3 && channels != 4) || (depth != 8 && depth != 16))
    throw std::invalid_argument(std::string(who) + ": " + std::to_string(height) + " x " + std::to_string(width) +
                                " x " + std::to_string(channels) + ", " + std::to_string(depth) + "-bit");
  std::vector<unsigned char> png(signature, signature + 8);
  const std::size_t ihdr = begin_chunk(png, "IHDR", 13);
  put_be32(png, ihdr + 8, std::uint32_t(width));
  put_be32(png, ihdr + 12, std::uint32_t(height));
  png[ihdr + 16] = (unsigned char)depth;
  png[ihdr + 17] = (unsigned char)colour_type_of(channels);
  png[ihdr + 18] = png[ihdr + 19] = png[ihdr + 20] = 0;
  end_chunk(png, ihdr);
  return png;
}

}  // namespace

bool png_scanlines::none_or_sub() const {
  const std::size_t stride = 1 + std::size_t(width) * std::size_t(pixel_bytes());
  for (std::size_t y = 0; y < std::size_t(height); ++y)
    if (rows[y * stride] > 1) return false;
  return true;
}

std::optional<png_scanlines> inflate_png(const unsigned char* file, std::size_t size) {
  if (size < 8 + 25 || std::memcmp(file, signature, 8) != 0) return std::nullopt;
  png_scanlines s;
  // the chunks first: IHDR, every CRC, the IDAT chunks' data (one after another), IEND
  std::vector<std::pair<const unsigned char*, std::size_t>> idat;
  bool header = false, ended = false, idat_closed = false;
  std::size_t expected = 0, compressed = 0;
  for (std::size_t at = 8; at < size && !ended;) {
    if (size - at < 12) return std::nullopt;
    const std::uint32_t length = be32(file + at);
    if (length > (1u << 31) - 1 || size - at - 12 < length) return std::nullopt;
    const unsigned char* type = file + at + 4;
    const unsigned char* data = type + 4;
    if (chunk_crc(type, 4 + std::size_t(length)) != be32(data + length)) return std::nullopt;
    if (!header) {
      // IHDR first: 8- or 16-bit gray, RGB or RGBA, compression, filter method 0, not interlaced
      if (!is_type(type, "IHDR") || length != 13) return std::nullopt;
      const std::uint32_t w = be32(data), h = be32(data + 4);
      const int depth = data[8], colour = data[9];
      s.channels = channels_of(colour);
      if (w == 0 || h == 0 || w > (1u << 30) || h > (1u << 30) || (depth != 8 && depth != 16) || s.channels == 0 ||
          data[10] != 0 || data[11] != 0 || data[12] != 0)
        return std::nullopt;
      s.width = int(w);
      s.height = int(h);
      s.depth = depth;
      expected = std::size_t(h) * (1 + std::size_t(w) * std::size_t(s.pixel_bytes()));
      if (expected > (std::size_t(1) << 34)) return std::nullopt;
      header = true;
    } else if (is_type(type, "IDAT")) {
      if (idat_closed) return std::nullopt;  // IDAT chunks follow one another
      idat.emplace_back(data, std::size_t(length));
      compressed += length;
    } else if (is_type(type, "IEND")) {
      ended = true;
    } else {
      idat_closed = !idat.empty();
      // critical chunks (upper-case first letter: PLTE, ...) and transparency change the
      // decoded pixels: OpenCV decodes those files
      if ((type[0] & 0x20) == 0 || is_type(type, "tRNS")) return std::nullopt;
    }
    at += 12 + std::size_t(length);
  }
  if (!ended || idat.empty()) return std::nullopt;
  // deflate expands at most 1032 times (258-byte matches in 2 bits): a header that claims more
  // than the stream can hold is refused before its rows are allocated
  if (expected / 1032 > compressed + 64) return std::nullopt;
  // One inflate call over the whole stream: zlib copies up to 32 KB of output into its window
  // at the end of every call, and a call per IDAT chunk (libpng writes 8 KB chunks: 238 for a
  // 1024^2 RGB image) took 12.3 ms an image against 11.6-12.0 (Zen 5 core)
  thread_local std::vector<unsigned char> joined;
  const unsigned char* in = idat.front().first;
  if (idat.size() > 1) {
    joined.resize(compressed);
    std::size_t at = 0;
    for (const auto& [p, n] : idat) {
      std::memcpy(joined.data() + at, p, n);
      at += n;
    }
    in = joined.data();
  }
  s.rows.resize(expected);
  z_stream z{};
  if (inflateInit(&z) != Z_OK) return std::nullopt;
  struct closer {
    z_stream* z;
    ~closer() { inflateEnd(z); }
  } close_z{&z};
  z.next_in = const_cast<unsigned char*>(in);
  std::size_t in_left = compressed;
  for (;;) {
    unsigned char spare;  // where the rows are all there: room for a byte too many
    const std::size_t room = expected - std::size_t(z.total_out);
    z.next_out = room > 0 ? s.rows.data() + z.total_out : &spare;
    z.avail_out = room > 0 ? (uInt)std::min<std::size_t>(room, 1u << 30) : 1u;
    if (z.avail_in == 0) {
      z.avail_in = (uInt)std::min<std::size_t>(in_left, 1u << 30);
      in_left -= z.avail_in;
    }
    const int rc = inflate(&z, Z_NO_FLUSH);
    if (std::size_t(z.total_out) > expected) return std::nullopt;  // longer than the image
    if (rc == Z_STREAM_END) {
      // short, or data after the stream's end
      if (std::size_t(z.total_out) != expected || z.avail_in > 0 || in_left > 0) return std::nullopt;
      return s;
    }
    if (rc != Z_OK || (z.avail_in == 0 && in_left == 0)) return std::nullopt;  // damaged, or the stream ends early
  }
}

bool unfilter_png(const png_scanlines& s, unsigned char* out) {
  const int c = s.channels, b = s.depth / 8, bpp = c * b;  // bytes a sample, a pixel
  const std::size_t w = std::size_t(s.width), line = w * std::size_t(bpp), stride = 1 + line;
  std::vector<unsigned char> previous(line, 0), current(line);
  const std::size_t back = std::size_t(bpp);
  for (std::size_t y = 0; y < std::size_t(s.height); ++y) {
    const unsigned char* r = s.rows.data() + y * stride;
    const unsigned char* f = r + 1;
    unsigned char* x = current.data();
    const unsigned char* up = previous.data();
    switch (r[0]) {
      case 0: std::memcpy(x, f, line); break;
      case 1:
        for (std::size_t i = 0; i < line; ++i) x[i] = (unsigned char)(f[i] + (i >= back ? x[i - back] : 0));
        break;
      case 2:
        for (std::size_t i = 0; i < line; ++i) x[i] = (unsigned char)(f[i] + up[i]);
        break;
      case 3:
        for (std::size_t i = 0; i < line; ++i)
          x[i] = (unsigned char)(f[i] + ((i >= back ? x[i - back] : 0) + up[i]) / 2);
        break;
      case 4:
        for (std::size_t i = 0; i < line; ++i)
          x[i] = (unsigned char)(f[i] + (i >= back ? paeth(x[i - back], up[i], up[i - back]) : paeth(0, up[i], 0)));
        break;
      default: return false;
    }
    // PNG's RGB(A) to OpenCV's BGR(A); 16-bit samples from big-endian to the host's order
    unsigned char* o = out + y * line;
    for (std::size_t p = 0; p < w; ++p)
      for (int k = 0; k < c; ++k) {
        const int to = (c >= 3 && k < 3) ? 2 - k : k;
        const unsigned char* from = x + p * std::size_t(bpp) + std::size_t(k * b);
        if (b == 1) {
          o[p * std::size_t(c) + std::size_t(to)] = from[0];
        } else {
          const std::uint16_t v = std::uint16_t((from[0] << 8) | from[1]);
          std::memcpy(o + (p * std::size_t(c) + std::size_t(to)) * 2, &v, 2);
        }
      }
    previous.swap(current);
  }
  return true;
}

std::vector<unsigned char> png_from_zlib(const unsigned char* zlib, std::size_t size, int height, int width,
                                         int channels, int depth) {
  std::vector<unsigned char> png = png_start("png_from_zlib", height, width, channels, depth);
  png.reserve(png.size() + size + 12 * (size / chunk_max + 1) + 12);
  for (std::size_t done = 0; done < size; done += chunk_max) {
    const std::size_t n = std::min(chunk_max, size - done);
    const std::size_t at = begin_chunk(png, "IDAT", n);
    std::memcpy(png.data() + at + 8, zlib + done, n);
    end_chunk(png, at);
  }
  end_chunk(png, begin_chunk(png, "IEND", 0));
  return png;
}

std::vector<unsigned char> png_from_scanlines(const unsigned char* rows, int height, int width, int channels,
                                              int depth) {
  std::vector<unsigned char> png = png_start("png_from_scanlines", height, width, channels, depth);
  const std::size_t raw = std::size_t(height) * (1 + std::size_t(width) * std::size_t(channels * depth / 8));
  z_stream z{};
  if (deflateInit2(&z, Z_BEST_SPEED, Z_DEFLATED, 15, 8, Z_RLE) != Z_OK)
    throw std::runtime_error("png_from_scanlines: zlib's deflateInit2 failed");
  struct closer {
    z_stream* z;
    ~closer() { deflateEnd(z); }
  } close_z{&z};
  // IDAT chunks of at most chunk_max bytes, deflate writing straight into them
  const std::size_t bound = deflateBound(&z, uLong(std::min<std::size_t>(raw, std::numeric_limits<uLong>::max())));
  z.next_in = const_cast<unsigned char*>(rows);
  std::size_t in_left = raw;
  for (bool finished = false; !finished;) {
    const std::size_t room = std::min(chunk_max, bound + 64);
    const std::size_t at = begin_chunk(png, "IDAT", room);
    z.next_out = png.data() + at + 8;
    z.avail_out = uInt(room);
    int rc = Z_OK;
    while (z.avail_out > 0) {
      if (z.avail_in == 0 && in_left > 0) {
        z.avail_in = uInt(std::min<std::size_t>(in_left, 1u << 30));
        in_left -= z.avail_in;
      }
      rc = deflate(&z, in_left == 0 ? Z_FINISH : Z_NO_FLUSH);
      if (rc == Z_STREAM_END) break;
      if (rc != Z_OK && rc != Z_BUF_ERROR) throw std::runtime_error("png_from_scanlines: zlib's deflate failed");
    }
    png.resize(png.size() - z.avail_out);
    end_chunk(png, at);
    finished = rc == Z_STREAM_END;
  }
  end_chunk(png, begin_chunk(png, "IEND", 0));
  return png;
}

}  // namespace gpuconv::pipeline
