// libFuzzer target: PNG's CPU side for the GPU pipeline (pipeline/png_codec.cpp). Any bytes must
// either be refused by inflate_png (nullopt: OpenCV then decodes or rejects the file) or give
// scanlines of exactly the size the header states, which unfilter_png undoes unless a row's
// filter type is unknown, and which png_from_scanlines writes into a file that inflate_png reads
// back to the same scanlines. Anything else (a crash, a sanitizer report, an exception, a broken
// invariant) is a finding.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include <zlib.h>

#include "png_codec.hpp"

namespace {

// The input with every chunk's CRC made right (so that mutations reach past the CRC checks)
std::vector<std::uint8_t> with_good_crcs(const std::uint8_t* data, std::size_t size) {
  std::vector<std::uint8_t> v(data, data + size);
  for (std::size_t at = 8; at + 12 <= v.size();) {
    const std::size_t n = (std::size_t(v[at]) << 24) | (std::size_t(v[at + 1]) << 16) | (std::size_t(v[at + 2]) << 8) | v[at + 3];
    if (n > v.size() - at - 12) break;
    const uLong crc = crc32(crc32(0L, Z_NULL, 0), v.data() + at + 4, uInt(4 + n));
    for (int k = 0; k < 4; ++k) v[at + 8 + n + std::size_t(k)] = std::uint8_t(crc >> (24 - 8 * k));
    at += 12 + n;
  }
  return v;
}

void check(const std::uint8_t* data, std::size_t size) {
  using namespace gpuconv::pipeline;
  const auto s = inflate_png(data, size);
  if (!s) return;
  if (s->height < 1 || s->width < 1 || (s->channels != 1 && s->channels != 3 && s->channels != 4) ||
      (s->depth != 8 && s->depth != 16))
    std::abort();
  const std::size_t stride = 1 + std::size_t(s->width) * std::size_t(s->pixel_bytes());
  if (s->rows.size() != std::size_t(s->height) * stride) std::abort();
  bool known = true, none_or_sub = true;
  for (int y = 0; y < s->height; ++y) {
    known = known && s->rows[std::size_t(y) * stride] <= 4;
    none_or_sub = none_or_sub && s->rows[std::size_t(y) * stride] <= 1;
  }
  if (s->none_or_sub() != none_or_sub) std::abort();
  std::vector<unsigned char> image(std::size_t(s->height) * std::size_t(s->width) * std::size_t(s->pixel_bytes()));
  if (unfilter_png(*s, image.data()) != known) std::abort();
  const auto png = png_from_scanlines(s->rows.data(), s->height, s->width, s->channels, s->depth);
  const auto back = inflate_png(png.data(), png.size());
  if (!back || back->rows != s->rows || back->height != s->height || back->width != s->width ||
      back->channels != s->channels || back->depth != s->depth)
    std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  check(data, size);
  const auto fixed = with_good_crcs(data, size);
  check(fixed.data(), fixed.size());
  return 0;
}
