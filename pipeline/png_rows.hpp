// PNG's scanlines on the GPU: the filter step of PNG's codec, so that the CPU's share of a PNG is
// zlib alone (png_codec.hpp). A scanline is one filter-type byte and the row's samples in PNG's
// channel order (gray, RGB, RGBA; 8-bit, or 16-bit big-endian); OpenCV's images, and this
// pipeline's interleaved ones, store BGR(A) (16-bit samples in the host's order).
//   png_sub_rows:   interleaved BGR(A) / gray -> scanlines with the Sub filter (type 1: each byte
//                   less the byte one pixel to its left, modulo 256), what OpenCV's PNG encoder
//                   writes by default
//   png_unsub_rows: scanlines of filter types None (0) and Sub (1) -> interleaved BGR(A) / gray
//                   (rows of other types must be unfiltered on the CPU: png_codec.hpp)
#pragma once
#include <cstdint>

#include <cuda_runtime.h>

namespace gpuconv::pipeline {

// Bytes of the scanlines of an h x w image of `channels` samples of `depth` bits (8, 16).
inline long long png_scanline_bytes(long long height, long long width, int channels, int depth = 8) {
  return height * (1 + width * channels * (depth / 8));
}

// in: height x width x channels samples of `depth` bits (channels 1, 3 or 4), rows width *
// channels samples apart.
void png_sub_rows(const std::uint8_t* in, long long height, long long width, int channels, int depth,
                  std::uint8_t* scanlines, cudaStream_t stream);
// every row's filter type must be 0 or 1 (png_codec.hpp, png_scanlines::none_or_sub)
void png_unsub_rows(const std::uint8_t* scanlines, long long height, long long width, int channels, int depth,
                    std::uint8_t* out, cudaStream_t stream);

}  // namespace gpuconv::pipeline
