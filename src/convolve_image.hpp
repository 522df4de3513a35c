// One image through the convolution, in three steps that the batch pipeline runs on
// different threads:
//   to_planes    (decoder threads)  interleaved cv::Mat -> float planes, alpha premultiplied
//   convolver    (a compute thread; on the GPU the batch runs two, one convolver each)
//                conv::plan per (H, W, planes), cached (at most 8) and reused
//   from_planes  (encoder threads)  unpremultiply, out = S * conv + B, round half to even,
//                                   saturate and count clipped pixels, interleave
// Values stay in their stored units throughout (0..255, 0..65535, float as is): 8-bit
// correlation with reflect101 equals cv::filter2D(img, -1, k) (cvRound, saturate_cast).
// Depth conversion does not rescale: an 8-bit value 200 is 200 in a 16-bit output.
//
// Alpha (the last channel of 2- and 4-channel images; its opaque value is alpha_max of the
// input depth: 255, 65535 or 1.0):
//   premultiply  colour *= alpha / max, all channels convolved, colour /= conv(alpha) / max
//                where conv(alpha) > 0, else 0; S and B apply to colour, not to alpha
//   separate     every channel convolved on its own; S and B apply to all
//   keep         colour convolved; alpha copied (for 'full'/'valid', from the input position
//                under the kernel's centre, through the boundary rule); S and B to colour
#pragma once
#include <cstdint>
#include <map>
#include <ostream>
#include <tuple>
#include <vector>

#include <opencv2/core.hpp>

#include "conv/plan.hpp"
#include "image_io.hpp"
#include "kernel.hpp"

namespace gpuconv::app {

enum class alpha_mode { premultiply, separate, keep };

struct convolve_settings {
  conv::options semantics;  // operation, mode, boundary (constant value in stored units)
  double scale = 1, offset = 0;
  output_depth depth = output_depth::same;
  alpha_mode alpha = alpha_mode::premultiply;
  conv::backend device = conv::backend::cpu;  // resolved: see resolve_device
  int threads = 0;                            // CPU backend threads (0: all cores)
};

// One image between decode and encode.
struct planar_image {
  int height = 0, width = 0, channels = 0, input_depth = CV_8U;
  int colour = 0;                  // colour planes: 1 (gray) or 3 (BGR)
  bool has_alpha = false;          // 2 or 4 channels: the last one is alpha
  alpha_mode alpha = alpha_mode::premultiply;
  int conv_planes = 0;             // planes convolved: colour, plus alpha unless 'keep'
  std::vector<float> planes;       // conv_planes x height x width
  std::vector<float> kept_alpha;   // 'keep': the input alpha plane, height x width
  // set by convolver::run
  long long out_h = 0, out_w = 0;
  int shift_y = 0, shift_x = 0;    // 'keep': output (y, x) takes input alpha at (y + shift_y, x + shift_x)
  std::vector<float> result;       // conv_planes x out_h x out_w
};

struct output_image {
  cv::Mat image;
  long long clipped = 0;  // pixels with at least one channel rounded outside the output range
};

planar_image to_planes(const cv::Mat& image, alpha_mode alpha);

class convolver {
 public:
  // The kernel as it will be applied (already normalised if asked). Plans are built lazily.
  convolver(kernel k, const convolve_settings& settings);
  void run(planar_image& image);
  // Creates the CUDA context now (CUDA backend; nothing on the CPU): the batch pipeline
  // calls it on the compute thread while the first images decode, so that start-up is
  // hidden behind I/O instead of holding up the first encode.
  void warm_up() const;
  const convolve_settings& settings() const { return settings_; }
  const kernel& kernel_used() const { return kernel_; }
  std::size_t cached_plans() const { return plans_.size(); }
  // At most this many plans are kept (least recently used evicted): a directory of photos
  // of many sizes must not pile up one device staging buffer per size.
  static constexpr std::size_t max_cached_plans = 8;

 private:
  conv::plan& plan_for(long long h, long long w, int planes, float constant);
  kernel kernel_;
  convolve_settings settings_;
  struct cached_plan {
    conv::plan plan;
    std::uint64_t last_use;
  };
  std::map<std::tuple<long long, long long, int, std::uint32_t>, cached_plan> plans_;
  std::uint64_t uses_ = 0;
};

output_image from_planes(planar_image& image, const convolve_settings& settings);

// All three steps on one image.
output_image convolve_image(const cv::Mat& image, convolver& c);

// --device: automatic becomes CUDA when cuda_device_available(), else CPU with a notice on
// `notices` unless quiet; cuda without a device throws gpuconv::app::error (exit 1).
conv::backend resolve_device(conv::backend requested, bool quiet, std::ostream& notices);

}  // namespace gpuconv::app
