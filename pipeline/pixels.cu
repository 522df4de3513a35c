// GPU kernels of pixels.hpp: stored samples <-> float planes, one thread per pixel.
#include "pixels.hpp"

#include <cmath>

#include "conv/pixel.cuh"
#include "grid.cuh"
#include "fft/device/cuda_check.hpp"

namespace gpuconv::pipeline {

namespace {

constexpr int block = 256;

template <typename T>
__device__ __forceinline__ float sample_at(const void* data, long long i) {
  return float(static_cast<const T*>(data)[i]);
}

template <typename T>
__device__ __forceinline__ void put_sample(void* data, long long i, float v) {
  static_cast<T*>(data)[i] = conv::store_pixel<T>(v);
}

template <typename T>
__global__ void load_kernel(stored_image in, bool premultiply, bool alpha_plane, float inv_max, float* planes) {
  const long long area = (long long)in.height * in.width;
  const int colour = in.colour();
  for (long long p = blockIdx.x * (long long)blockDim.x + threadIdx.x; p < area; p += (long long)gridDim.x * blockDim.x) {
    const long long y = p / in.width, x = p - y * in.width;
    const long long base = y * in.at.row + x * in.at.pixel;
    const float a = in.has_alpha() ? sample_at<T>(in.data, base + colour * in.at.channel) : 0.f;
    for (int c = 0; c < colour; ++c) {
      const float v = sample_at<T>(in.data, base + c * in.at.channel);
      // cv::multiply(colour, alpha, colour, 1 / max): (v * a) * (1 / max), in float
      planes[c * area + p] = premultiply ? __fmul_rn(__fmul_rn(v, a), inv_max) : v;
    }
    if (alpha_plane) planes[colour * area + p] = a;
  }
}

struct store_params {
  const float* result;
  long long out_h, out_w;
  stored_image in;
  alpha_rule alpha;
  float scale, offset;
  bool affine;
  float a_max, transparent;
  conv::boundary border;
  float outside;  // the kept alpha outside the image
  int shift_y, shift_x;
  layout out_at;
  float in_hi;    // largest value that rounds into range: nextafter(top + 0.5, 0)
  bool narrow;
};

template <typename in_t, typename out_t>
__global__ void store_kernel(store_params s, void* out, unsigned long long* clipped) {
  const long long area = s.out_h * s.out_w;
  const int colour = s.in.colour(), channels = s.in.channels;
  const bool keep = s.in.has_alpha() && s.alpha == alpha_rule::keep;
  const bool premultiplied = s.in.has_alpha() && s.alpha == alpha_rule::premultiply;
  // planes that take S and B when not premultiplied: all convolved planes for 'separate'
  // (alpha included), colour otherwise
  const int scaled = s.alpha == alpha_rule::separate ? channels : colour;
  int count = 0;
  for (long long base = blockIdx.x * (long long)blockDim.x; base < area; base += (long long)gridDim.x * blockDim.x) {
    const long long p = base + threadIdx.x;
    bool out_of_range = false;
    if (p < area) {
      const long long y = p / s.out_w, x = p - y * s.out_w;
      const long long o = y * s.out_at.row + x * s.out_at.pixel;
      const float a = premultiplied ? s.result[colour * area + p] : 0.f;
      for (int c = 0; c < channels; ++c) {
        float v;
        if (keep && c == colour) {
          const int r = conv::border_index(y + s.shift_y, s.in.height, s.border);
          const int q = conv::border_index(x + s.shift_x, s.in.width, s.border);
          v = (r < 0 || q < 0) ? s.outside
                               : sample_at<in_t>(s.in.data, r * s.in.at.row + q * s.in.at.pixel + c * s.in.at.channel);
        } else {
          v = s.result[c * area + p];
          if (premultiplied) {
            if (c < colour)
              v = __fadd_rn(__fmul_rn(a > s.transparent ? __fmul_rn(v, __fdiv_rn(s.a_max, a)) : 0.f, s.scale), s.offset);
          } else if (s.affine && c < scaled) {
            v = __fadd_rn(__fmul_rn(v, s.scale), s.offset);
          }
        }
        if (s.narrow && !(v >= -0.5f && v <= s.in_hi)) out_of_range = true;
        put_sample<out_t>(out, o + c * s.out_at.channel, v);
      }
    }
    if (s.narrow) count += __syncthreads_count(out_of_range);
  }
  if (s.narrow && threadIdx.x == 0 && count) atomicAdd(clipped, (unsigned long long)count);
}

template <typename F>
void dispatch_sample(sample s, F&& f) {
  switch (s) {
    case sample::u8: f(std::uint8_t{}); return;
    case sample::u16: f(std::uint16_t{}); return;
    case sample::f32: f(float{}); return;
  }
}

}  // namespace

void load_planes(const stored_image& in, alpha_rule alpha, float* planes, cudaStream_t stream) {
  const long long area = (long long)in.height * in.width;
  if (area == 0) return;
  const bool premultiply = in.has_alpha() && alpha == alpha_rule::premultiply;
  const bool alpha_plane = in.has_alpha() && alpha != alpha_rule::keep;
  const float inv_max = float(1.0 / double(alpha_max(in.type)));
  dispatch_sample(in.type, [&](auto t) {
    load_kernel<decltype(t)><<<grid_for(area, block), block, 0, stream>>>(in, premultiply, alpha_plane, inv_max, planes);
  });
  check_launch("pipeline::load_kernel");
}

void store_planes(const float* result, long long out_h, long long out_w, const stored_image& in, const store_rules& r,
                  void* out, sample out_type, layout out_at, unsigned long long* clipped, cudaStream_t stream) {
  const long long area = out_h * out_w;
  if (area == 0) return;
  store_params s{};
  s.result = result;
  s.out_h = out_h;
  s.out_w = out_w;
  s.in = in;
  s.alpha = r.alpha;
  s.scale = r.scale;
  s.offset = r.offset;
  s.affine = r.scale != 1.f || r.offset != 0.f;
  s.a_max = alpha_max(in.type);
  // alpha at or below this is transparent: for narrow outputs an alpha that rounds to 0, for
  // float the FFT's noise floor (src/convolve_image.cpp, from_planes)
  s.transparent = out_type == sample::f32 ? 1e-6f * s.a_max : 0.5f;
  s.border = r.semantics.border;
  s.outside = r.semantics.border == conv::boundary::constant ? r.semantics.constant_value : 0.f;
  s.shift_y = r.shift_y;
  s.shift_x = r.shift_x;
  s.out_at = out_at;
  s.narrow = out_type != sample::f32;
  s.in_hi = std::nextafter(out_type == sample::u8 ? 255.5f : 65535.5f, 0.f);
  dispatch_sample(in.type, [&](auto ti) {
    dispatch_sample(out_type, [&](auto to) {
      store_kernel<decltype(ti), decltype(to)><<<grid_for(area, block), block, 0, stream>>>(s, out, clipped);
    });
  });
  check_launch("pipeline::store_kernel");
}

}  // namespace gpuconv::pipeline
