#include "convolve_image.hpp"

#include <cmath>
#include <cstring>
#include <limits>

#include "errors.hpp"
#include "fft/device/cuda_check.hpp"

namespace gpuconv::app {

namespace {

template <typename T>
void deinterleave(const cv::Mat& m, planar_image& p) {
  const int c = p.channels;
  const std::size_t area = std::size_t(p.height) * p.width;
  const float inv_max = float(1.0 / alpha_max(p.input_depth));
  const bool premultiply = p.has_alpha && p.alpha == alpha_mode::premultiply;
  const bool keep = p.has_alpha && p.alpha == alpha_mode::keep;
  for (int y = 0; y < p.height; ++y) {
    const T* row = m.ptr<T>(y);
    const std::size_t base = std::size_t(y) * p.width;
    for (int x = 0; x < p.width; ++x) {
      const T* px = row + std::size_t(x) * c;
      const float a = p.has_alpha ? float(px[c - 1]) : 1.f;
      const float weight = premultiply ? a * inv_max : 1.f;
      for (int ch = 0; ch < p.colour; ++ch) p.planes[ch * area + base + x] = float(px[ch]) * weight;
      if (keep)
        p.kept_alpha[base + x] = a;
      else if (p.has_alpha)
        p.planes[p.colour * area + base + x] = a;
    }
  }
}

// Rounds half to even (lrint, default rounding mode, as cvRound) and saturates to T; sets
// `clipped` when the rounded value was outside T's range (NaN counts as clipped, gives 0).
template <typename T>
T to_stored(double v, bool& clipped) {
  if constexpr (std::is_floating_point_v<T>) {
    return T(v);
  } else {
    constexpr double lo = std::numeric_limits<T>::min(), hi = std::numeric_limits<T>::max();
    if (std::isnan(v)) {
      clipped = true;
      return 0;
    }
    const double r = std::nearbyint(v);
    if (r < lo) {
      clipped = true;
      return T(lo);
    }
    if (r > hi) {
      clipped = true;
      return T(hi);
    }
    return T(r);
  }
}

template <typename T>
long long interleave(const planar_image& p, const convolve_settings& s, cv::Mat& out) {
  const int c = p.channels;
  const std::size_t area = std::size_t(p.out_h) * p.out_w;
  const double a_max = alpha_max(p.input_depth);
  const bool scale_alpha = p.alpha == alpha_mode::separate;
  // Alpha at or below this is transparent: colour 0. For integer outputs, an alpha that rounds
  // to 0; for float, the FFT's noise floor (~1e-6 of full scale), below which colour / alpha
  // would only amplify rounding noise.
  const double transparent = std::is_floating_point_v<T> ? 1e-6 * a_max : 0.5;
  long long clipped = 0;
  std::vector<int> alpha_cols;
  if (p.alpha == alpha_mode::keep && p.has_alpha) {
    alpha_cols.resize(p.out_w);
    for (long long x = 0; x < p.out_w; ++x)
      alpha_cols[x] = conv::border_index(x + p.shift_x, p.width, s.semantics.border);
  }
  for (long long y = 0; y < p.out_h; ++y) {
    T* row = out.ptr<T>(int(y));
    const std::size_t base = std::size_t(y) * p.out_w;
    const int alpha_row = alpha_cols.empty() ? 0 : conv::border_index(y + p.shift_y, p.height, s.semantics.border);
    for (long long x = 0; x < p.out_w; ++x) {
      T* px = row + std::size_t(x) * c;
      bool clip = false;
      double unpremultiply = 1;
      if (p.has_alpha) {
        double a;
        if (p.alpha == alpha_mode::keep) {
          const int col = alpha_cols[x];
          a = (alpha_row < 0 || col < 0) ? s.semantics.constant_value * (s.semantics.border == conv::boundary::constant)
                                         : p.kept_alpha[std::size_t(alpha_row) * p.width + col];
        } else {
          a = p.result[p.colour * area + base + x];
          if (p.alpha == alpha_mode::premultiply) unpremultiply = a > transparent ? a_max / a : 0;
        }
        px[c - 1] = to_stored<T>(scale_alpha ? s.scale * a + s.offset : a, clip);
      }
      for (int ch = 0; ch < p.colour; ++ch)
        px[ch] = to_stored<T>(s.scale * (double(p.result[ch * area + base + x]) * unpremultiply) + s.offset, clip);
      clipped += clip;
    }
  }
  return clipped;
}

}  // namespace

planar_image to_planes(const cv::Mat& image, alpha_mode alpha) {
  planar_image p;
  p.height = image.rows;
  p.width = image.cols;
  p.channels = image.channels();
  p.input_depth = image.depth();
  p.has_alpha = p.channels == 2 || p.channels == 4;
  p.colour = p.has_alpha ? p.channels - 1 : p.channels;
  p.alpha = alpha;
  p.conv_planes = p.colour + (p.has_alpha && alpha != alpha_mode::keep);
  const std::size_t area = std::size_t(p.height) * p.width;
  p.planes.resize(area * p.conv_planes);
  if (p.has_alpha && alpha == alpha_mode::keep) p.kept_alpha.resize(area);
  switch (p.input_depth) {
    case CV_8U: deinterleave<std::uint8_t>(image, p); break;
    case CV_16U: deinterleave<std::uint16_t>(image, p); break;
    case CV_32F: deinterleave<float>(image, p); break;
    default: throw input_error("image: " + depth_name(p.input_depth) + " samples are not supported");
  }
  return p;
}

convolver::convolver(kernel k, const convolve_settings& settings) : kernel_(std::move(k)), settings_(settings) {}

conv::plan& convolver::plan_for(long long h, long long w, int planes, float constant) {
  std::uint32_t bits;
  std::memcpy(&bits, &constant, sizeof bits);
  const auto key = std::make_tuple(h, w, planes, bits);
  auto it = plans_.find(key);
  if (it == plans_.end()) {
    conv::plan_options o;
    o.semantics = settings_.semantics;
    o.semantics.constant_value = constant;
    o.device = settings_.device;
    o.threads = settings_.threads;
    it = plans_.emplace(key, conv::plan(h, w, planes, kernel_.values.data(), kernel_.height, kernel_.width, o)).first;
  }
  return it->second;
}

void convolver::run(planar_image& p) {
  const conv::geometry g =
      conv::make_geometry(p.height, p.width, kernel_.height, kernel_.width, settings_.semantics.mode);
  p.out_h = g.out_h;
  p.out_w = g.out_w;
  p.shift_y = g.oy - (kernel_.height - 1) / 2;
  p.shift_x = g.ox - (kernel_.width - 1) / 2;
  const std::size_t in_area = std::size_t(p.height) * p.width, out_area = std::size_t(g.out_h) * g.out_w;
  p.result.resize(out_area * p.conv_planes);

  // Outside a 'constant' border every channel is V; premultiplied colour is then V * V / max,
  // so colour and alpha need plans with different outside values.
  const float v = settings_.semantics.constant_value;
  const bool split = settings_.semantics.border == conv::boundary::constant && p.has_alpha &&
                     p.alpha == alpha_mode::premultiply;
  if (!split) {
    plan_for(p.height, p.width, p.conv_planes, v).execute(p.planes.data(), p.result.data());
  } else {
    const float colour_v = float(double(v) * v / alpha_max(p.input_depth));
    plan_for(p.height, p.width, p.colour, colour_v).execute(p.planes.data(), p.result.data());
    plan_for(p.height, p.width, 1, v).execute(p.planes.data() + p.colour * in_area, p.result.data() + p.colour * out_area);
  }
  p.planes = {};  // release the input early: the batch pipeline holds many images
}

output_image from_planes(planar_image& p, const convolve_settings& s) {
  output_image out;
  const int depth = output_cv_depth(s.depth, p.input_depth);
  out.image.create(int(p.out_h), int(p.out_w), CV_MAKETYPE(depth, p.channels));
  switch (depth) {
    case CV_8U: out.clipped = interleave<std::uint8_t>(p, s, out.image); break;
    case CV_16U: out.clipped = interleave<std::uint16_t>(p, s, out.image); break;
    default: out.clipped = interleave<float>(p, s, out.image); break;
  }
  return out;
}

output_image convolve_image(const cv::Mat& image, convolver& c) {
  planar_image p = to_planes(image, c.settings().alpha);
  c.run(p);
  return from_planes(p, c.settings());
}

conv::backend resolve_device(conv::backend requested, bool quiet, std::ostream& notices) {
  switch (requested) {
    case conv::backend::cpu: return conv::backend::cpu;
    case conv::backend::cuda:
      if (!cuda_device_available()) throw error("--device cuda: no CUDA device is available", exit_failure);
      return conv::backend::cuda;
    case conv::backend::automatic: break;
  }
  if (cuda_device_available()) return conv::backend::cuda;
  if (!quiet) notices << "gpuconv: no CUDA device found, using the CPU backend\n";
  return conv::backend::cpu;
}

}  // namespace gpuconv::app
