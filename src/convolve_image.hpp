// One image through the convolution.
// On the CPU, in three steps that the batch pipeline runs on different threads:
//   to_planes    (decoder threads)  interleaved cv::Mat -> float planes, alpha premultiplied
//   convolver    (a compute thread) conv::plan per (H, W, planes), cached (at most 8) and reused
//   from_planes  (encoder threads)  unpremultiply, out = S * conv + B, round half to even,
//                                   saturate and count clipped pixels, interleave
// 8/16-bit images that cannot clip, without scale, offset or alpha, take the narrow route
// instead (convolver::narrow_route): stored samples split into planes, the library's uint8/uint16
// pixel path (which rounds and saturates), planes interleaved - no float copy of the image.
// On the GPU (convolver::run_gpu, a compute thread each with its own stream): the decoded
// image crosses the bus as stored (8/16-bit), every step above runs on the GPU
// (pipeline/pixels.hpp, same arithmetic), and the output comes back as stored; JPEG files
// may skip the CPU entirely (convolver::run_gpu_jpegs: nvJPEG decode -> convolve -> nvJPEG
// encode).
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
#include <memory>
#include <ostream>
#include <utility>
#include <vector>

#include <opencv2/core.hpp>

#include "conv/plan.hpp"
#include "image_io.hpp"
#include "kernel.hpp"
#include "uninit_vector.hpp"
#include "plan_cache.hpp"
#include "png_codec.hpp"

namespace gpuconv::pipeline {
struct stored_image;  // pipeline/pixels.hpp
}

namespace gpuconv::app {

enum class alpha_mode { premultiply, separate, keep };
// --decoder: who decodes JPEG files. automatic: the GPU (nvJPEG) when the CUDA backend runs
// and nvJPEG is available, for the files it takes; cpu: OpenCV (libjpeg's exact pixels);
// gpu: as automatic, but an error when nvJPEG is unavailable.
enum class jpeg_decoder { automatic, cpu, gpu };

struct convolve_settings {
  conv::options semantics;  // operation, mode, boundary (constant value in stored units)
  double scale = 1, offset = 0;
  output_depth depth = output_depth::same;
  alpha_mode alpha = alpha_mode::premultiply;
  conv::backend device = conv::backend::cpu;  // resolved: see resolve_device
  int threads = 0;                            // CPU backend threads (0: all cores)
  jpeg_decoder decoder = jpeg_decoder::automatic;
  codec_options codec;                        // --quality, --png-level
  int copy_threads = 1;  // threads for one image's host-side pixel work: the CUDA path's pinned
                         // staging, the CPU path's conversions (the one-image command gives it
                         // every core; a batch's cores decode and encode instead)
  // Downloads through pinned staging (a batch: allocated once, reused) or straight into the
  // result (the one-image command: allocating and releasing the staging cost more than it saves
  // once; H100, 12 MP: 0.227 against 0.251 s median wall). GPUCONV_STAGING overrides both.
  bool pinned_download = true;
};

// One image between decode and encode.
using float_buffer = std::vector<float, uninitialized_allocator<float>>;

struct planar_image {
  int height = 0, width = 0, channels = 0, input_depth = CV_8U;
  // The narrow route (convolver::narrow_route): the planes hold the stored samples (uint8 or
  // uint16, input_depth) instead of floats - narrow_planes in, narrow_result out - and the
  // library's narrow pixel path rounds and saturates; nothing is clipped (the route's condition)
  bool narrow = false;
  int colour = 0;                  // colour planes: 1 (gray) or 3 (BGR)
  bool has_alpha = false;          // 2 or 4 channels: the last one is alpha
  alpha_mode alpha = alpha_mode::premultiply;
  int conv_planes = 0;             // planes convolved: colour, plus alpha unless 'keep'
  float_buffer planes;             // conv_planes x height x width
  float_buffer kept_alpha;         // 'keep': the input alpha plane, height x width
  // narrow: the planes one under another, (conv_planes x height) x width samples of input_depth
  // (a cv::Mat: in a batch its buffer comes from the recycling allocator, mat_pool.hpp)
  cv::Mat narrow_planes;
  // to_planes(..., view = true) of one continuous channel (float, or narrow): the image's own
  // samples, instead of `planes` (valid while the image is: the one-image command's)
  const void* source = nullptr;
  // set by convolver::run
  long long out_h = 0, out_w = 0;
  int shift_y = 0, shift_x = 0;    // 'keep': output (y, x) takes input alpha at (y + shift_y, x + shift_x)
  float_buffer result;             // conv_planes x out_h x out_w
  cv::Mat narrow_result;           // narrow: (conv_planes x out_h) x out_w samples, as narrow_planes
  // instead of `result` where the result is the output image itself (result_is_output):
  // from_planes returns it without a copy
  cv::Mat result_image;
};

struct output_image {
  cv::Mat image;
  long long clipped = 0;  // pixels with at least one channel rounded outside the output range
};

// threads > 1: the rows in bands on the CPU backend's pool (the one-image command); a batch
// calls it on each of its decoder threads with 1.
// view: one continuous float channel (or narrow one) is not copied (planar_image::source); the
// image must then outlive the planar_image's run.
// narrow: the stored samples split into uint8/uint16 planes (planar_image::narrow); only for
// what convolver::narrow_route accepts (else std::logic_error).
planar_image to_planes(const cv::Mat& image, alpha_mode alpha, int threads = 1, bool view = false, bool narrow = false);

class convolver {
 public:
  // The kernel as it will be applied (already normalised if asked). Plans are built lazily.
  convolver(kernel k, const convolve_settings& settings);
  ~convolver();
  convolver(convolver&&) noexcept;

  // The planes of to_planes convolved into p.result: the CPU backend, or (CUDA) the plan's
  // host-buffer path, which runs an image larger than the GPU's memory in bands of rows.
  void run(planar_image& image);

  // Whether 8/16-bit images of `cv_depth` and `channels` take the narrow route: stored samples
  // in and out of the library's uint8/uint16 pixel path (a quarter or half of the float route's
  // bytes, no conversions on the app's side). Taken where that gives the float route's output
  // and clip count: the output depth is the input's, no scale or offset, no alpha (or alpha
  // 'separate'), a 'constant' border value that is a sample value, and a kernel that cannot
  // take any pixel out of range - sum of positive weights x top and of negative ones x top
  // within [-0.5, top + 0.5) with room for the float arithmetic's error (2e-6 of the weights'
  // absolute sum x top, twice the FFT's ~1e-6: 0.13 levels at 16 bits), so the clip count is 0
  // by construction. Otherwise the float route: a sharpening kernel, a kernel summing to more
  // than 1 (or to 1 within the room of top + 0.5).
  bool narrow_route(int cv_depth, int channels) const;
  // to_planes with this convolver's alpha mode and route
  planar_image planes(const cv::Mat& image, int threads = 1, bool view = false) const;

  // Seconds per stage of run_gpu / run_gpu_jpegs, for --timing (the stream is waited for
  // after each stage when asked for them).
  struct stage_times {
    double upload = 0, decode = 0, convolve = 0, download = 0, encode = 0;
    bool pinned_download = false;  // run_gpu's download went through pinned staging
  };
  // CUDA backend: a decoded image through the GPU (pipeline::gpu_convolver), stored samples in
  // and out; the same results as to_planes -> run -> from_planes. An image whose buffers would
  // take more than a quarter of the free device memory ($GPUCONV_GPU_IMAGE_BUDGET bytes if
  // set) goes that way instead: float planes on the host, the plan's bands of rows.
  output_image run_gpu(const cv::Mat& image, stage_times* times = nullptr);

  // PNG's filter step on the GPU (pipeline/png_rows.hpp), zlib alone on the CPU: an output
  // that will be a PNG written with OpenCV's default settings (--png-level not given; 8- or
  // 16-bit gray, BGR or BGRA) comes back as Sub-filtered scanlines for pipeline::png_from_scanlines,
  // any other as run_gpu's image. GPUCONV_PNG_GPU=0 turns both directions off (measurements).
  // The scanlines come compressed on the GPU as well (pipeline/png_deflate.hpp: a zlib stream
  // for pipeline::png_from_zlib) unless GPUCONV_PNG_DEFLATE=0 (then zlib's deflate on the CPU).
  struct png_result {
    output_image image;                   // when no scanlines (image.clipped in either case)
    std::vector<unsigned char> scanlines;  // the output's, when it is a PNG as above
    bool zlib = false;                     // scanlines holds their zlib stream
    int height = 0, width = 0, channels = 0, depth = 8;
    // The PNG file of the scanlines: chunks around the GPU's zlib stream, or zlib's deflate here
    std::vector<unsigned char> file() const;
  };
  static bool png_on_gpu();
  png_result run_gpu_png(const cv::Mat& image, bool png_out);
  // A PNG's inflated scanlines (every filter None or Sub): unfiltered on the GPU, then as above.
  png_result run_gpu_png(const pipeline::png_scanlines& in, bool png_out);
  // A JPEG decoded on the GPU (as run_gpu_decoded) whose output is a PNG: as above.
  png_result run_gpu_decoded_png(const unsigned char* planes, int height, int width);

  // CUDA backend with nvJPEG: whether JPEGs are decoded on the GPU (settings and library).
  bool gpu_jpeg() const;
  struct jpeg_input {
    const std::vector<unsigned char>* bytes;  // a JPEG that pipeline::jpeg_header calls gpu_decodable
    int height, width;
    bool encode;                              // the output is a JPEG: encode it on the GPU too
  };
  struct jpeg_output {
    bool decoded = false;                     // false: the GPU refused the batch; decode on the CPU
    output_image image;                       // when not encoded
    std::vector<unsigned char> encoded;       // when encoded
  };
  // Decodes the batch on the GPU, convolves each image, and encodes those marked `encode`.
  std::vector<jpeg_output> run_gpu_jpegs(const std::vector<jpeg_input>& batch, stage_times* times = nullptr);
  // A decoded image whose output is a JPEG: on the GPU, and encoded there when nvJPEG is
  // encoder is up and the output is 8-bit BGR (else as run_gpu, encoded by the caller).
  jpeg_output run_gpu_to_jpeg(const cv::Mat& image);
  // The same for a PNG's scanlines (run_gpu_png): unfiltered on the GPU, then as above.
  jpeg_output run_gpu_to_jpeg(const pipeline::png_scanlines& in);
  // One image already decoded on the GPU (planar BGR, 3 planes of height x width in device
  // memory, complete: the decoder's stream was waited for): convolve, then encode or download.
  jpeg_output run_gpu_decoded(const unsigned char* planes, int height, int width, bool encode,
                              stage_times* times = nullptr);
  // nvJPEG's decoding backend ("hardware decoder", "GPU hybrid decoder"; "" without nvJPEG).
  static const char* gpu_jpeg_decoder();
  // Whether nvJPEG is built in and loads (waits for it to load).
  static bool gpu_jpeg_available();
  // Batches: starts loading nvJPEG on its own thread when this convolver would use it, with
  // a decoder state for each of `decoder_states` decode threads, and says without waiting
  // whether it is ready (until then JPEGs are decoded by the CPU) or whether loading has
  // ended either way (settled; true when this convolver does not use nvJPEG).
  // (hardware_decoder_states: nvjpeg_load_in_background's)
  void start_gpu_jpeg(int decoder_states = 2, int hardware_decoder_states = 0) const;
  bool gpu_jpeg_ready() const;
  bool gpu_jpeg_settled() const;
  // The GPU encoder alone is up (it comes 0.5-1 s before the decoder): JPEG outputs of
  // CPU-decoded images are encoded on the GPU from then on.
  bool gpu_jpeg_encoder_ready() const;

  // Creates the CUDA context now (CUDA backend; nothing on the CPU): the batch pipeline
  // calls it on the compute thread while the first images decode, so that start-up is
  // hidden behind I/O instead of holding up the first encode.
  void warm_up() const;
  const convolve_settings& settings() const { return settings_; }
  const kernel& kernel_used() const { return kernel_; }
  std::size_t cached_plans() const;
  // At most this many plans are kept (least recently used evicted): a directory of photos
  // of many sizes must not pile up one device staging buffer per size.
  static constexpr std::size_t max_cached_plans = pipeline::plan_cache::capacity;

 private:
  struct gpu_stage;
  gpu_stage& gpu();
  bool wants_gpu_jpeg() const;  // CUDA backend and --decoder not cpu
  // The image's buffers fit what one image may take on the device (see run_gpu).
  bool fits_gpu_stage(const cv::Mat& image) const;
  bool fits_gpu_stage(int rows, int cols, int cv_depth, int channels) const;
  // Whether an image of `in_depth` (a cv depth) and `channels` comes back as PNG scanlines
  bool png_scanlines_out(int in_depth, int channels) const;
  // `in` (samples of in_depth) on the device: convolved to 8- or 16-bit interleaved (the output
  // depth), filtered and downloaded as scanlines
  void png_from_gpu(const pipeline::stored_image& in, int in_depth, png_result& r);
  // `in` on the device: convolved to interleaved samples of `depth` (a cv depth), downloaded
  // into a new image (times: its convolve and download)
  output_image image_from_gpu(const pipeline::stored_image& in, int depth, stage_times* times);
  // 8-bit BGR `in` on the device: convolved to planar 8-bit and encoded by nvJPEG into o.
  void encode_on_gpu(const pipeline::stored_image& in, jpeg_output& o, stage_times* times);
  kernel kernel_;
  convolve_settings settings_;
  pipeline::plan_cache host_plans_;  // run(): CPU backend, or CUDA on host buffers (bands)
  double positive_sum_ = 0, negative_sum_ = 0;  // the kernel's weights of each sign, summed (narrow_route)
  std::unique_ptr<gpu_stage> gpu_;
};

// threads as to_planes (a batch's encoder threads: 1).
output_image from_planes(planar_image& image, const convolve_settings& settings, int threads = 1);

// One float plane, no alpha, a float output without scale or offset (or one narrow plane, no
// alpha): the convolution's result is the output image as it is, so convolver::run writes it
// into planar_image::result_image and from_planes returns that (no copy).
bool result_is_output(const planar_image& p, const convolve_settings& s);

// All three steps on one image (to_planes and from_planes on settings.copy_threads).
output_image convolve_image(const cv::Mat& image, convolver& c);

// --device: automatic becomes CUDA when cuda_device_available(), else CPU with a notice on
// `notices` unless quiet; cuda without a device throws gpuconv::app::error (exit 1).
conv::backend resolve_device(conv::backend requested, bool quiet, std::ostream& notices);

// --device auto for the one-image command: whether the CPU backend is expected to finish an
// height x width image (taken as 3 planes) before CUDA has started. The CPU side: the CPU
// method chooser's price for this kernel and size (conv/method.hpp: ns per output pixel on 2
// threads), scaled to `threads` (0: every core) at 40% efficiency past two (memory-bound
// methods stop scaling: 4096^2 on 16 cores ran 1.4-2.8x slower than linear), plus 2 ns per
// pixel and plane for the app's conversions (1.6 on the 16-core H100 host, 2.6 on a 2-core VM).
// The CUDA side: 0.25 s of start-up (driver and context, 0.23-0.32 s on the H100 host) plus
// 1 ns per pixel and plane (transfers and kernels). On that host a 12 MP photo with gaussian:2
// took 0.22 s on the CPU and 0.40 s on CUDA, process to exit; the rule sends it to the CPU.
bool cpu_before_cuda_starts(long long height, long long width, const kernel& k, int threads);

}  // namespace gpuconv::app
