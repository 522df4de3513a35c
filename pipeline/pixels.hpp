// The GPU side of the application's pixel rules (src/convolve_image.hpp states them): the
// two kernels between an image as stored (8/16-bit or float samples, 1..4 channels,
// interleaved or planar, anywhere in device memory) and the float planes the convolution
// works on.
//   load:   stored samples -> float planes in stored units, colour premultiplied by
//           alpha / max when asked
//   store:  convolved planes -> unpremultiply, out = S * conv + B, alpha kept from the input
//           under the kernel's centre ('keep'), rounding half to even and saturation for
//           narrow outputs, the count of clipped pixels, written in any layout
// The arithmetic is the CPU path's, operation by operation in float, without contractions
// (__fmul_rn / __fadd_rn), so the results agree bit for bit except where OpenCV's own
// vector code orders a product differently (then within 1 LSB; tests/pipeline).
#pragma once
#include <cstdint>

#include <cuda_runtime.h>

#include "conv/semantics.hpp"

namespace gpuconv::pipeline {

enum class sample { u8, u16, f32 };
enum class alpha_rule { premultiply, separate, keep };

inline int sample_bytes(sample s) { return s == sample::u8 ? 1 : s == sample::u16 ? 2 : 4; }
// The value of an opaque alpha: 255, 65535, 1.0.
inline float alpha_max(sample s) { return s == sample::u8 ? 255.f : s == sample::u16 ? 65535.f : 1.f; }

// Where the samples of an image are, in samples (not bytes): sample (y, x, c) is at
// y * row + x * pixel + c * channel.
struct layout {
  long long pixel = 1, channel = 1, row = 1;
  static layout interleaved(long long width, int channels) { return {channels, 1, width * channels}; }
  static layout planar(long long height, long long width) { return {1, height * width, width}; }
  long long bytes_for(long long height, long long width, int channels, sample s) const {
    // the extent of the last sample + 1, whichever axis is outermost
    return ((height - 1) * row + (width - 1) * pixel + (channels - 1) * channel + 1) * sample_bytes(s);
  }
};

// An image as stored, somewhere in device memory.
struct stored_image {
  const void* data = nullptr;
  sample type = sample::u8;
  int height = 0, width = 0, channels = 0;  // 2 and 4 channels: the last is alpha
  layout at;
  HOST_DEVICE bool has_alpha() const { return channels == 2 || channels == 4; }
  HOST_DEVICE int colour() const { return has_alpha() ? channels - 1 : channels; }
};

// load: planes[c] (c < colour) = sample c, times alpha / max when premultiply; planes[colour]
// = alpha when alpha is convolved (premultiply, separate). planes: conv_planes x H x W.
void load_planes(const stored_image& in, alpha_rule alpha, float* planes, cudaStream_t stream);

struct store_rules {
  alpha_rule alpha = alpha_rule::premultiply;
  float scale = 1, offset = 0;
  conv::options semantics;  // border and constant value, for the kept alpha outside the image
  int shift_y = 0, shift_x = 0;  // 'keep': output (y, x) takes the input alpha at (y + shift_y, x + shift_x)
};

// store: result holds the convolved planes (colour, then alpha unless 'keep'), out_h x out_w
// each; `in` is the input (for a kept alpha); writes out (same channel count as `in`,
// sample type out_type, layout out_at). For narrow outputs adds to *clipped (device) the
// pixels with a channel that rounds outside the range (NaN included).
void store_planes(const float* result, long long out_h, long long out_w, const stored_image& in, const store_rules& r,
                  void* out, sample out_type, layout out_at, unsigned long long* clipped, cudaStream_t stream);

}  // namespace gpuconv::pipeline
