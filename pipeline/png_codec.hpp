// PNG's CPU side for the GPU pipeline: zlib and the file's chunks, nothing else. The filter step
// (and OpenCV's BGR order) is the GPU's (png_rows.hpp), so a batch's decoder and encoder threads
// spend their time in inflate and deflate alone (1024^2 RGB on a Zen 5 core: OpenCV's imdecode
// 14.9 ms of which inflate 10.5-11.0, imencode 23.7 of which deflate 21.9).
//
// Only what OpenCV reads and writes the same way is taken: 8- and 16-bit gray, RGB and RGBA,
// not interlaced, no palette, no transparency chunk. Anything else - and any damage: a bad CRC, a
// short or overlong zlib stream - gives nullopt, and the caller decodes the file with OpenCV
// (which reports the damage as it always has).
#pragma once
#include <cstddef>
#include <optional>
#include <vector>

namespace gpuconv::pipeline {

// An inflated PNG: height rows of 1 + width * pixel_bytes() bytes (the filter type, then the
// row's samples in PNG's order, 16-bit ones big-endian), channels 1 (gray), 3 (RGB) or 4
// (RGBA), depth 8 or 16.
struct png_scanlines {
  int height = 0, width = 0, channels = 0, depth = 8;
  std::vector<unsigned char> rows;
  int pixel_bytes() const { return channels * depth / 8; }
  // every row's filter is None or Sub: png_unsub_rows can undo them on the GPU
  bool none_or_sub() const;
};

// The scanlines of `file` (a whole PNG file's bytes), or nullopt (above).
std::optional<png_scanlines> inflate_png(const unsigned char* file, std::size_t size);

// The image of `s` in OpenCV's layout (interleaved BGR(A) or gray, rows width * channels
// samples apart, 16-bit ones in the host's order), every filter type undone on the CPU: `out`
// holds height * width * pixel_bytes() bytes.
// false where a row's filter type is not one of PNG's five (a damaged file).
bool unfilter_png(const png_scanlines& s, unsigned char* out);

// A PNG file of the scanlines `rows` (any filter types; png_sub_rows makes Sub rows): the
// signature, IHDR, IDAT chunks of zlib at level 1 with run-length matches only (OpenCV's
// default: Z_BEST_SPEED, Z_RLE), IEND.
std::vector<unsigned char> png_from_scanlines(const unsigned char* rows, int height, int width, int channels,
                                              int depth = 8);

// A PNG file around `zlib`, a whole zlib stream of the image's scanlines (png_deflate.hpp):
// the signature, IHDR, IDAT chunks of at most 256 MiB, IEND.
std::vector<unsigned char> png_from_zlib(const unsigned char* zlib, std::size_t size, int height, int width,
                                         int channels, int depth = 8);

}  // namespace gpuconv::pipeline
