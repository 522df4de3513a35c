#include "convolve_image.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <chrono>
#include <cstdlib>
#include <cmath>
#include <cstring>
#include <exception>
#include <limits>
#include <mutex>
#include <string>
#include <thread>

#include "conv/cpu_pool.hpp"
#include "cuda_startup.hpp"
#include "errors.hpp"
#include "fft/device/cuda_check.hpp"
#include "gpu_convolver.hpp"
#include "png_rows.hpp"
#ifdef GPUCONV_HAVE_NVJPEG
#include "jpeg_gpu.hpp"
#endif

namespace gpuconv::app {


namespace {

// A fresh image buffer, before the download, the conversion or the convolution writes it (4 KiB page faults over
// a 36 MB image cost as much as the copy itself).
void advise_huge_pages(const cv::Mat& m) { app::advise_huge_pages(m.data, m.total() * m.elemSize()); }

// A cv::Mat header over one plane of a planar buffer (no copy).
cv::Mat plane_view(float_buffer& buffer, int plane, long long rows, long long cols) {
  return cv::Mat(int(rows), int(cols), CV_32F, buffer.data() + std::size_t(plane) * rows * cols);
}

// f(r0, r1) over bands of `rows` rows on `threads` threads (the CPU backend's pool), or on this
// thread alone for threads <= 1 or a small image; the first exception is rethrown here.
template <typename F>
void for_row_bands(int threads, long long rows, F&& f) {
  if (threads <= 1 || rows < 64) {
    f(0LL, rows);
    return;
  }
  const long long band = std::max(16LL, (rows + 4LL * threads - 1) / (4LL * threads));
  std::atomic<long long> next{0};
  std::exception_ptr error;
  std::mutex error_lock;
  auto body = [&] {
    for (long long r0; (r0 = next.fetch_add(band)) < rows;) {
      try {
        f(r0, std::min(rows, r0 + band));
      } catch (...) {
        std::lock_guard<std::mutex> hold(error_lock);
        if (!error) error = std::current_exception();
      }
    }
  };
  conv::run_on_threads(threads, body);
  if (error) std::rethrow_exception(error);
}

// Pixels with at least one channel whose value rounds outside [0, top] (NaN included); the
// rounding is cvRound's (half to even), so v < -0.5 and v >= top + 0.5 are the clipped values.
long long count_clipped(const std::vector<cv::Mat>& planes, double top) {
  // in range: -0.5 <= v < top + 0.5 (cv::inRange's bounds are inclusive and taken in the
  // planes' float type, hence the float just below top + 0.5; NaN is out)
  const double lo = -0.5, hi = std::nextafter(float(top + 0.5), 0.0f);
  cv::Mat all_in, in;
  for (const cv::Mat& plane : planes) {
    cv::inRange(plane, lo, hi, in);
    if (all_in.empty())
      all_in = in.clone();
    else
      cv::bitwise_and(all_in, in, all_in);
  }
  return (long long)planes[0].total() - cv::countNonZero(all_in);
}

}  // namespace

// Interleaved -> float planes with OpenCV's vectorised primitives: split, convertTo (stored units,
// no scaling) into headers over the planar buffers, multiply for premultiplication.
planar_image to_planes(const cv::Mat& image, alpha_mode alpha, int threads, bool view, bool narrow) {
  planar_image p;
  p.height = image.rows;
  p.width = image.cols;
  p.channels = image.channels();
  p.input_depth = image.depth();
  if (p.input_depth != CV_8U && p.input_depth != CV_16U && p.input_depth != CV_32F)
    throw input_error("image: " + depth_name(p.input_depth) + " samples are not supported");
  p.has_alpha = p.channels == 2 || p.channels == 4;
  p.colour = p.has_alpha ? p.channels - 1 : p.channels;
  p.alpha = alpha;
  const bool keep = p.has_alpha && alpha == alpha_mode::keep;
  p.conv_planes = p.colour + (p.has_alpha && !keep);
  if (narrow) {
    if ((p.input_depth != CV_8U && p.input_depth != CV_16U) || (p.has_alpha && alpha != alpha_mode::separate))
      throw std::logic_error("to_planes: the narrow route takes 8/16-bit samples without alpha (or alpha 'separate')");
    p.narrow = true;
  }
  if (view && p.channels == 1 && (p.narrow || p.input_depth == CV_32F) && image.isContinuous()) {
    p.source = image.data;  // the samples as they are: nothing to convert
    return p;
  }
  if (p.narrow) {
    // split in the stored depth into the planes, nothing else
    p.narrow_planes.create(p.conv_planes * p.height, p.width, p.input_depth);
    advise_huge_pages(p.narrow_planes);
    for_row_bands(threads, p.height, [&](long long r0, long long r1) {
      std::vector<cv::Mat> views;
      for (int c = 0; c < p.conv_planes; ++c)
        views.push_back(p.narrow_planes.rowRange(int(c * p.height + r0), int(c * p.height + r1)));
      std::vector<const uchar*> before;
      for (const cv::Mat& v : views) before.push_back(v.data);
      cv::split(image.rowRange(int(r0), int(r1)), views.data());
      for (int c = 0; c < p.conv_planes; ++c)
        if (views[c].data != before[c]) throw std::logic_error("to_planes: split reallocated its output");
    });
    return p;
  }
  p.planes.resize(std::size_t(p.height) * p.width * p.conv_planes);
  if (keep) p.kept_alpha.resize(std::size_t(p.height) * p.width);

  std::vector<cv::Mat> planes;
  for (int c = 0; c < p.colour; ++c) planes.push_back(plane_view(p.planes, c, p.height, p.width));
  if (p.has_alpha) planes.push_back(keep ? plane_view(p.kept_alpha, 0, p.height, p.width)
                                         : plane_view(p.planes, p.colour, p.height, p.width));
  for_row_bands(threads, p.height, [&](long long r0, long long r1) {
    std::vector<cv::Mat> views;
    for (const cv::Mat& plane : planes) views.push_back(plane.rowRange(int(r0), int(r1)));
    // split in the stored depth (a quarter of the bytes for 8-bit), then convert each plane
    // into its view; convertTo keeps a destination of the right size and type in place
    std::vector<cv::Mat> stored;
    cv::split(image.rowRange(int(r0), int(r1)), stored);
    for (int c = 0; c < p.channels; ++c) {
      const uchar* before = views[c].data;
      stored[c].convertTo(views[c], CV_32F);
      if (views[c].data != before) throw std::logic_error("to_planes: convertTo reallocated its output");
    }
    if (p.has_alpha && alpha == alpha_mode::premultiply)
      for (int c = 0; c < p.colour; ++c) cv::multiply(views[c], views[p.colour], views[c], 1.0 / alpha_max(p.input_depth));
  });
  return p;
}

namespace {

pipeline::sample sample_of(int cv_depth) {
  return cv_depth == CV_8U ? pipeline::sample::u8 : cv_depth == CV_16U ? pipeline::sample::u16 : pipeline::sample::f32;
}

pipeline::alpha_rule rule_of(alpha_mode a) {
  return a == alpha_mode::premultiply ? pipeline::alpha_rule::premultiply
         : a == alpha_mode::separate  ? pipeline::alpha_rule::separate
                                      : pipeline::alpha_rule::keep;
}

// The plans of run(): the CPU backend, or on CUDA the plan's own host-buffer path (bands of
// rows under its memory cap) for images too large for the GPU stage.
conv::plan_options host_buffer_options(const convolve_settings& s) {
  conv::plan_options o;
  o.semantics = s.semantics;
  o.device = s.device == conv::backend::cuda ? conv::backend::cuda : conv::backend::cpu;
  o.threads = s.threads;
  return o;
}

// Device bytes the GPU stage needs for an image: the stored input and output and the float
// planes before and after the convolution.
std::size_t gpu_stage_bytes(long long rows, long long cols, int channels, int in_bytes, long long out_h, long long out_w,
                            int out_bytes) {
  const std::size_t c = std::size_t(channels);
  return std::size_t(rows) * std::size_t(cols) * c * std::size_t(in_bytes + 4) +
         std::size_t(out_h) * std::size_t(out_w) * c * std::size_t(4 + out_bytes);
}

// What one image may take on the device in the GPU stage: a quarter of the free memory (the
// batch runs three workers and the decode pool beside them), or $GPUCONV_GPU_IMAGE_BUDGET.
std::size_t gpu_image_budget_bytes() {
  if (const char* e = std::getenv("GPUCONV_GPU_IMAGE_BUDGET"); e && *e) return std::size_t(std::strtoull(e, nullptr, 10));
  std::size_t free_bytes = 0, total = 0;
  if (cudaMemGetInfo(&free_bytes, &total) != cudaSuccess) return 0;
  return free_bytes / 4;
}

}  // namespace

// The GPU side of a convolver: the pipeline's stage (stream, plans, buffers) and, with
// nvJPEG, the JPEG codec states on the same stream; created on first use.
struct convolver::gpu_stage {
  pipeline::gpu_convolver pixels;
#ifdef GPUCONV_HAVE_NVJPEG
  std::unique_ptr<pipeline::jpeg_gpu> jpeg;
  device_buffer<unsigned char> decoded;  // the planar BGR images of a decoded batch
#endif
  gpu_stage(const kernel& k, const convolve_settings& s)
      : pixels(k.values, k.height, k.width, [&] {
          pipeline::image_rules r;
          r.semantics = s.semantics;
          r.scale = float(s.scale);
          r.offset = float(s.offset);
          r.alpha = rule_of(s.alpha);
          return r;
        }()) {
    pixels.set_copy_threads(s.copy_threads);
    pixels.set_pinned_download(s.pinned_download);
  }
};

convolver::convolver(kernel k, const convolve_settings& settings)
    : kernel_(std::move(k)), settings_(settings), host_plans_(kernel_.values, kernel_.height, kernel_.width, host_buffer_options(settings)) {
  for (const float w : kernel_.values) (w > 0 ? positive_sum_ : negative_sum_) += double(w);
}
convolver::~convolver() = default;
convolver::convolver(convolver&&) noexcept = default;

void convolver::warm_up() const {
  if (settings_.device == conv::backend::cuda) pipeline::gpu_convolver::warm_up();
}

std::size_t convolver::cached_plans() const { return host_plans_.size(); }

convolver::gpu_stage& convolver::gpu() {
  if (!gpu_) gpu_ = std::make_unique<gpu_stage>(kernel_, settings_);
  return *gpu_;
}

bool convolver::gpu_jpeg_available() {
#ifdef GPUCONV_HAVE_NVJPEG
  return pipeline::nvjpeg_library().available;
#else
  return false;
#endif
}

bool convolver::wants_gpu_jpeg() const {
  return settings_.device == conv::backend::cuda && settings_.decoder != jpeg_decoder::cpu;
}

void convolver::start_gpu_jpeg(int decoder_states, int hardware_decoder_states) const {
#ifdef GPUCONV_HAVE_NVJPEG
  if (wants_gpu_jpeg()) pipeline::nvjpeg_load_in_background(decoder_states, hardware_decoder_states);
#else
  (void)decoder_states, (void)hardware_decoder_states;
#endif
}

bool convolver::gpu_jpeg_settled() const {
#ifdef GPUCONV_HAVE_NVJPEG
  return !wants_gpu_jpeg() || pipeline::nvjpeg_settled();
#else
  return true;
#endif
}

bool convolver::gpu_jpeg_ready() const {
#ifdef GPUCONV_HAVE_NVJPEG
  return wants_gpu_jpeg() && pipeline::nvjpeg_ready();
#else
  return false;
#endif
}

bool convolver::gpu_jpeg_encoder_ready() const {
#ifdef GPUCONV_HAVE_NVJPEG
  return wants_gpu_jpeg() && pipeline::nvjpeg_encoder_ready();
#else
  return false;
#endif
}

bool convolver::gpu_jpeg() const { return wants_gpu_jpeg() && gpu_jpeg_available(); }

bool convolver::narrow_route(int cv_depth, int channels) const {
  if (cv_depth != CV_8U && cv_depth != CV_16U) return false;
  if (output_cv_depth(settings_.depth, cv_depth) != cv_depth || settings_.scale != 1 || settings_.offset != 0)
    return false;
  if ((channels == 2 || channels == 4) && settings_.alpha != alpha_mode::separate) return false;
  const double top = cv_depth == CV_8U ? 255.0 : 65535.0;
  if (settings_.semantics.border == conv::boundary::constant) {
    // the library rounds and saturates the outside value to the pixel type; the float route
    // takes it as it is
    const double v = settings_.semantics.constant_value;
    if (!(v >= 0 && v <= top && v == std::nearbyint(v))) return false;
  }
  // every input (and outside value) lies in [0, top]: the exact result in [negative, positive] x top
  if (!std::isfinite(positive_sum_) || !std::isfinite(negative_sum_)) return false;
  const double room = 2e-6 * (positive_sum_ - negative_sum_) * top;
  return negative_sum_ * top - room >= -0.5 && positive_sum_ * top + room < top + 0.5;
}

planar_image convolver::planes(const cv::Mat& image, int threads, bool view) const {
  return to_planes(image, settings_.alpha, threads, view, narrow_route(image.depth(), image.channels()));
}

void convolver::run(planar_image& p) {
  const conv::geometry g =
      conv::make_geometry(p.height, p.width, kernel_.height, kernel_.width, settings_.semantics.mode);
  p.out_h = g.out_h;
  p.out_w = g.out_w;
  p.shift_y = g.oy - (kernel_.height - 1) / 2;
  p.shift_x = g.ox - (kernel_.width - 1) / 2;
  const std::size_t in_area = std::size_t(p.height) * p.width, out_area = std::size_t(g.out_h) * g.out_w;
  if (p.narrow) {  // stored samples in and out (narrow_route: no alpha to premultiply, nothing to split)
    void* result = nullptr;
    if (result_is_output(p, settings_)) {
      p.result_image.create(int(g.out_h), int(g.out_w), p.input_depth);
      advise_huge_pages(p.result_image);
      result = p.result_image.data;
    } else {
      p.narrow_result.create(int(p.conv_planes * g.out_h), int(g.out_w), p.input_depth);
      advise_huge_pages(p.narrow_result);
      result = p.narrow_result.data;
    }
    const void* input = p.source ? p.source : p.narrow_planes.data;
    conv::plan& plan = host_plans_.get(p.height, p.width, p.conv_planes, settings_.semantics.constant_value);
    if (p.input_depth == CV_8U)
      plan.execute(static_cast<const std::uint8_t*>(input), static_cast<std::uint8_t*>(result));
    else
      plan.execute(static_cast<const std::uint16_t*>(input), static_cast<std::uint16_t*>(result));
    p.narrow_planes.release();
    p.source = nullptr;
    return;
  }
  float* result = nullptr;
  if (result_is_output(p, settings_)) {
    p.result_image.create(int(g.out_h), int(g.out_w), CV_32F);
    advise_huge_pages(p.result_image);
    result = p.result_image.ptr<float>();
  } else {
    p.result.resize(out_area * p.conv_planes);
    result = p.result.data();
  }
  const float* input = p.source ? static_cast<const float*>(p.source) : p.planes.data();

  // Outside a 'constant' border every channel is V; premultiplied colour is then V * V / max,
  // so colour and alpha need plans with different outside values.
  const float v = settings_.semantics.constant_value;
  const bool split = settings_.semantics.border == conv::boundary::constant && p.has_alpha &&
                     p.alpha == alpha_mode::premultiply;
  if (!split) {
    host_plans_.get(p.height, p.width, p.conv_planes, v).execute(input, result);
  } else {
    const float colour_v = float(double(v) * v / alpha_max(p.input_depth));
    host_plans_.get(p.height, p.width, p.colour, colour_v).execute(input, result);
    host_plans_.get(p.height, p.width, 1, v).execute(input + p.colour * in_area, result + p.colour * out_area);
  }
  p.planes = {};  // release the input early: the batch pipeline holds many images
  p.source = nullptr;
}

namespace {

// A JPEG nvJPEG decoded: planar BGR, 8-bit, in device memory
pipeline::stored_image planar_bgr(const unsigned char* planes, int height, int width) {
  return {planes, pipeline::sample::u8, height, width, 3, pipeline::layout::planar(height, width)};
}

// An environment switch set to 0 (GPUCONV_PNG_GPU, GPUCONV_PNG_DEFLATE: measurements)
bool env_says_off(const char* name) {
  const char* e = std::getenv(name);
  return e && std::string(e) == "0";
}

// Marks the end of a stage for stage_times: waits for the stream, adds the seconds since the
// last mark to *slot.
struct stage_clock {
  convolver::stage_times* times;
  cudaStream_t stream;
  std::chrono::steady_clock::time_point last = std::chrono::steady_clock::now();
  void mark(double convolver::stage_times::*slot) {
    if (!times) return;
    GPUCONV_CUDA(cudaStreamSynchronize(stream));
    const auto now = std::chrono::steady_clock::now();
    times->*slot += std::chrono::duration<double>(now - last).count();
    last = now;
  }
};

}  // namespace

const char* convolver::gpu_jpeg_decoder() {
#ifdef GPUCONV_HAVE_NVJPEG
  return pipeline::nvjpeg_library().available ? pipeline::jpeg_gpu::decoder_backend() : "";
#else
  return "";
#endif
}

bool convolver::fits_gpu_stage(const cv::Mat& image) const {
  return fits_gpu_stage(image.rows, image.cols, image.depth(), image.channels());
}

bool convolver::fits_gpu_stage(int rows, int cols, int cv_depth, int channels) const {
  const int depth = output_cv_depth(settings_.depth, cv_depth);
  const conv::geometry geo = conv::make_geometry(rows, cols, kernel_.height, kernel_.width, settings_.semantics.mode);
  return gpu_stage_bytes(rows, cols, channels, int(CV_ELEM_SIZE1(cv_depth)), geo.out_h, geo.out_w,
                         int(CV_ELEM_SIZE1(depth))) <= gpu_image_budget_bytes();
}

bool convolver::png_on_gpu() {
  static const bool on = !env_says_off("GPUCONV_PNG_GPU");
  return on;
}

std::vector<unsigned char> convolver::png_result::file() const {
  return zlib ? pipeline::png_from_zlib(scanlines.data(), scanlines.size(), height, width, channels, depth)
              : pipeline::png_from_scanlines(scanlines.data(), height, width, channels, depth);
}

bool convolver::png_scanlines_out(int in_depth, int channels) const {
  const int out = output_cv_depth(settings_.depth, in_depth);
  return png_on_gpu() && settings_.codec.png_level < 0 && (out == CV_8U || out == CV_16U) &&
         (channels == 1 || channels == 3 || channels == 4);
}

void convolver::png_from_gpu(const pipeline::stored_image& in, int in_depth, png_result& r) {
  gpu_stage& g = gpu();
  const auto [oh, ow] = g.pixels.output_size(in.height, in.width);
  const int out_depth = output_cv_depth(settings_.depth, in_depth);
  r.image.clipped =
      g.pixels.run(in, sample_of(out_depth), pipeline::layout::interleaved(ow, in.channels)).clipped;
  r.height = int(oh);
  r.width = int(ow);
  r.channels = in.channels;
  r.depth = out_depth == CV_16U ? 16 : 8;
  static const bool deflate_on_gpu = !env_says_off("GPUCONV_PNG_DEFLATE");
  try {
    if (deflate_on_gpu && g.pixels.download_png_zlib(r.scanlines, oh, ow, in.channels, r.depth)) {
      r.zlib = true;
      return;
    }
  } catch (const std::exception&) {
    // its buffers did not fit the device (a large image beside other work): zlib on the CPU
    (void)cudaGetLastError();
  }
  r.scanlines.clear();
  r.scanlines.resize(std::size_t(pipeline::png_scanline_bytes(oh, ow, in.channels, r.depth)));
  g.pixels.download_png(r.scanlines.data(), oh, ow, in.channels, r.depth);
}

convolver::png_result convolver::run_gpu_png(const cv::Mat& image, bool png_out) {
  png_result r;
  const conv::geometry geo =
      conv::make_geometry(image.rows, image.cols, kernel_.height, kernel_.width, settings_.semantics.mode);
  if (!png_out || !png_scanlines_out(image.depth(), image.channels()) || geo.out_h < 1 || geo.out_w < 1 ||
      !fits_gpu_stage(image)) {
    r.image = run_gpu(image);
    return r;
  }
  const int channels = image.channels();
  const pipeline::layout in_at{channels, 1, (long long)(image.step / image.elemSize1())};
  png_from_gpu(gpu().pixels.upload(image.data, sample_of(image.depth()), image.rows, image.cols, channels, in_at),
               image.depth(), r);
  return r;
}

convolver::png_result convolver::run_gpu_png(const pipeline::png_scanlines& in, bool png_out) {
  const int in_depth = in.depth == 16 ? CV_16U : CV_8U;
  if (!fits_gpu_stage(in.height, in.width, in_depth, in.channels)) {
    // too large for the GPU stage at once: the CPU undoes the filters, run_gpu takes bands
    cv::Mat m(in.height, in.width, CV_MAKETYPE(in_depth, in.channels));
    if (!pipeline::unfilter_png(in, m.data)) throw input_error("image: a PNG row with an unknown filter type");
    return run_gpu_png(m, png_out);
  }
  png_result r;
  gpu_stage& g = gpu();
  const pipeline::stored_image dev = g.pixels.upload_png(in.rows.data(), in.height, in.width, in.channels, in.depth);
  const auto [oh, ow] = g.pixels.output_size(in.height, in.width);
  if (png_out && png_scanlines_out(in_depth, in.channels) && oh > 0 && ow > 0) {
    png_from_gpu(dev, in_depth, r);
    return r;
  }
  r.image = image_from_gpu(dev, output_cv_depth(settings_.depth, in_depth), nullptr);
  return r;
}

output_image convolver::run_gpu(const cv::Mat& image, stage_times* times) {
  if (image.depth() != CV_8U && image.depth() != CV_16U && image.depth() != CV_32F)
    throw input_error("image: " + depth_name(image.depth()) + " samples are not supported");
  if (!fits_gpu_stage(image)) {
    // too large to hold on the GPU at once: planes on the host (narrow where narrow_route
    // takes the image), the plan's bands
    planar_image p = planes(image, settings_.copy_threads, true);
    run(p);
    return from_planes(p, settings_, settings_.copy_threads);
  }
  const int depth = output_cv_depth(settings_.depth, image.depth());
  gpu_stage& g = gpu();
  const int channels = image.channels();
  const pipeline::layout in_at{channels, 1, (long long)(image.step / image.elemSize1())};
  stage_clock clock{times, g.pixels.stream()};
  const pipeline::stored_image in =
      g.pixels.upload(image.data, sample_of(image.depth()), image.rows, image.cols, channels, in_at);
  clock.mark(&stage_times::upload);
  output_image out = image_from_gpu(in, depth, times);
  if (times) times->pinned_download = g.pixels.pinned_download();
  return out;
}

output_image convolver::image_from_gpu(const pipeline::stored_image& in, int depth, stage_times* times) {
  gpu_stage& g = gpu();
  stage_clock clock{times, g.pixels.stream()};
  const auto [oh, ow] = g.pixels.output_size(in.height, in.width);
  output_image out;
  out.clipped = g.pixels.run(in, sample_of(depth), pipeline::layout::interleaved(ow, in.channels)).clipped;
  clock.mark(&stage_times::convolve);
  out.image.create(int(oh), int(ow), CV_MAKETYPE(depth, in.channels));
  advise_huge_pages(out.image);
  g.pixels.download(out.image.data, out.image.total() * out.image.elemSize());
  clock.mark(&stage_times::download);
  return out;
}

std::vector<convolver::jpeg_output> convolver::run_gpu_jpegs(const std::vector<jpeg_input>& batch,
                                                             stage_times* times) {
  std::vector<jpeg_output> out(batch.size());
#ifdef GPUCONV_HAVE_NVJPEG
  if (!gpu_jpeg() || batch.empty()) return out;
  gpu_stage& g = gpu();
  if (!g.jpeg) g.jpeg = std::make_unique<pipeline::jpeg_gpu>(g.pixels.stream());
  stage_clock clock{times, g.pixels.stream()};
  std::size_t total = 0;
  for (const auto& b : batch) total += std::size_t(3) * b.height * b.width;
  g.decoded.reserve(total);
  std::vector<pipeline::jpeg_gpu::input> inputs;
  std::size_t offset = 0;
  for (const auto& b : batch) {
    inputs.push_back({b.bytes->data(), b.bytes->size(), g.decoded.data() + offset, b.height, b.width});
    offset += std::size_t(3) * b.height * b.width;
  }
  if (!g.jpeg->decode(inputs)) return out;  // every file falls back to the CPU decoder
  clock.mark(&stage_times::decode);
  for (std::size_t i = 0; i < batch.size(); ++i)
    out[i] = run_gpu_decoded(inputs[i].planes, batch[i].height, batch[i].width, batch[i].encode, times);
#else
  (void)batch;
  (void)times;
#endif
  return out;
}

convolver::jpeg_output convolver::run_gpu_to_jpeg(const cv::Mat& image) {
  jpeg_output o;
  o.decoded = true;
#ifdef GPUCONV_HAVE_NVJPEG
  if (image.type() == CV_8UC3 && output_cv_depth(settings_.depth, CV_8U) == CV_8U && gpu_jpeg_encoder_ready() &&
      fits_gpu_stage(image)) {
    const pipeline::layout in_at{3, 1, (long long)(image.step / image.elemSize1())};
    const pipeline::stored_image in =
        gpu().pixels.upload(image.data, pipeline::sample::u8, image.rows, image.cols, 3, in_at);
    encode_on_gpu(in, o, nullptr);
    return o;
  }
#endif
  o.image = run_gpu(image);
  return o;
}

convolver::png_result convolver::run_gpu_decoded_png(const unsigned char* planes, int height, int width) {
  png_result r;
  const conv::geometry geo = conv::make_geometry(height, width, kernel_.height, kernel_.width, settings_.semantics.mode);
  if (!png_scanlines_out(CV_8U, 3) || geo.out_h < 1 || geo.out_w < 1) {
    r.image = run_gpu_decoded(planes, height, width, false).image;
    return r;
  }
  png_from_gpu(planar_bgr(planes, height, width), CV_8U, r);
  return r;
}

convolver::jpeg_output convolver::run_gpu_to_jpeg(const pipeline::png_scanlines& in) {
  jpeg_output o;
  o.decoded = true;
#ifdef GPUCONV_HAVE_NVJPEG
  if (in.channels == 3 && in.depth == 8 && output_cv_depth(settings_.depth, CV_8U) == CV_8U && gpu_jpeg_encoder_ready() &&
      fits_gpu_stage(in.height, in.width, CV_8U, 3)) {
    encode_on_gpu(gpu().pixels.upload_png(in.rows.data(), in.height, in.width, 3), o, nullptr);
    return o;
  }
#endif
  o.image = run_gpu_png(in, false).image;
  return o;
}

void convolver::encode_on_gpu(const pipeline::stored_image& in, jpeg_output& o, stage_times* times) {
#ifdef GPUCONV_HAVE_NVJPEG
  gpu_stage& g = gpu();
  if (!g.jpeg) g.jpeg = std::make_unique<pipeline::jpeg_gpu>(g.pixels.stream());
  stage_clock clock{times, g.pixels.stream()};
  const auto [oh, ow] = g.pixels.output_size(in.height, in.width);
  o.image.clipped = g.pixels.run(in, pipeline::sample::u8, pipeline::layout::planar(oh, ow)).clipped;
  clock.mark(&stage_times::convolve);
  o.encoded =
      g.jpeg->encode_bgr(static_cast<const unsigned char*>(g.pixels.output()), int(oh), int(ow), settings_.codec.jpeg_quality)
          .bytes;
  clock.mark(&stage_times::encode);
#else
  (void)in, (void)o, (void)times;
#endif
}

convolver::jpeg_output convolver::run_gpu_decoded(const unsigned char* planes, int height, int width, bool encode,
                                                  stage_times* times) {
  jpeg_output o;
#ifdef GPUCONV_HAVE_NVJPEG
  const pipeline::stored_image in = planar_bgr(planes, height, width);
  const int depth = output_cv_depth(settings_.depth, CV_8U);
  o.decoded = true;
  if (encode && depth == CV_8U)
    encode_on_gpu(in, o, times);
  else
    o.image = image_from_gpu(in, depth, times);
#else
  (void)planes, (void)height, (void)width, (void)encode, (void)times;
#endif
  return o;
}

bool result_is_output(const planar_image& p, const convolve_settings& s) {
  const int depth = output_cv_depth(s.depth, p.input_depth);
  return p.conv_planes == 1 && !p.has_alpha && (depth == CV_32F || (p.narrow && depth == p.input_depth)) &&
         s.scale == 1 && s.offset == 0;
}

// Float planes -> the output image: unpremultiply, out = S * conv + B (in float), merge,
// then convertTo the output depth (cvRound: half to even, saturate), clipped pixels counted;
// a result that is the output already (result_is_output) as it is.
output_image from_planes(planar_image& p, const convolve_settings& s, int threads) {
  if (!p.result_image.empty()) {
    if (!result_is_output(p, s)) throw std::logic_error("from_planes: settings other than run()'s");
    return {std::move(p.result_image), 0};
  }
  output_image out;
  const int depth = output_cv_depth(s.depth, p.input_depth);
  const long long rows = p.out_h, cols = p.out_w;
  const std::size_t area = std::size_t(rows) * cols;
  if (p.narrow) {  // the planes are the output's samples: interleave them
    if (depth != p.input_depth || s.scale != 1 || s.offset != 0)
      throw std::logic_error("from_planes: settings other than run()'s");
    out.image.create(int(rows), int(cols), CV_MAKETYPE(depth, p.conv_planes));
    advise_huge_pages(out.image);
    for_row_bands(threads, rows, [&](long long r0, long long r1) {
      std::vector<cv::Mat> planes;
      for (int c = 0; c < p.conv_planes; ++c) planes.push_back(p.narrow_result.rowRange(int(c * rows + r0), int(c * rows + r1)));
      cv::Mat band = out.image.rowRange(int(r0), int(r1));
      const uchar* before = band.data;
      cv::merge(planes, band);
      if (band.data != before) throw std::logic_error("from_planes: merge reallocated its output");
    });
    return out;
  }
  const float scale = float(s.scale), offset = float(s.offset);
  const bool affine = s.scale != 1 || s.offset != 0;
  const float a_max = float(alpha_max(p.input_depth));
  // Alpha at or below this is transparent: colour 0. For integer outputs, an alpha that
  // rounds to 0; for float, the FFT's noise floor (~1e-6 of full scale), below which
  // colour / alpha would only amplify rounding noise.
  const float transparent = depth == CV_32F ? 1e-6f * a_max : 0.5f;
  const bool keep = p.has_alpha && p.alpha == alpha_mode::keep;
  // 'keep' under 'full' / 'valid': the input alpha under the kernel's centre, through the boundary
  const bool kept_shifted = keep && !(p.shift_y == 0 && p.shift_x == 0 && rows == p.height && cols == p.width);
  const int channels = p.conv_planes + (keep ? 1 : 0);
  out.image.create(int(rows), int(cols), CV_MAKETYPE(depth, channels));
  advise_huge_pages(out.image);
  std::atomic<long long> clipped{0};

  // every step is per pixel: bands of rows, each from the float planes to its rows of the output
  for_row_bands(threads, rows, [&](long long r0, long long r1) {
    const std::size_t begin = std::size_t(r0) * cols, end = std::size_t(r1) * cols;
    std::vector<cv::Mat> planes;
    for (int c = 0; c < p.conv_planes; ++c) planes.push_back(plane_view(p.result, c, rows, cols).rowRange(int(r0), int(r1)));
    if (p.has_alpha && p.alpha == alpha_mode::premultiply) {
      const float* a = p.result.data() + std::size_t(p.colour) * area;
      for (int c = 0; c < p.colour; ++c) {
        float* v = p.result.data() + std::size_t(c) * area;
        for (std::size_t i = begin; i < end; ++i) v[i] = (a[i] > transparent ? v[i] * (a_max / a[i]) : 0.f) * scale + offset;
      }
    } else if (affine) {
      const int scaled = p.alpha == alpha_mode::separate ? p.conv_planes : p.colour;
      for (int c = 0; c < scaled; ++c) {
        float* v = p.result.data() + std::size_t(c) * area;
        for (std::size_t i = begin; i < end; ++i) v[i] = v[i] * scale + offset;
      }
    }
    if (keep && !kept_shifted) {
      planes.push_back(plane_view(p.kept_alpha, 0, rows, cols).rowRange(int(r0), int(r1)));
    } else if (kept_shifted) {
      cv::Mat a(int(r1 - r0), int(cols), CV_32F);
      const float outside = s.semantics.border == conv::boundary::constant ? s.semantics.constant_value : 0.f;
      for (long long y = r0; y < r1; ++y) {
        const int r = conv::border_index(y + p.shift_y, p.height, s.semantics.border);
        for (long long x = 0; x < cols; ++x) {
          const int c = conv::border_index(x + p.shift_x, p.width, s.semantics.border);
          a.at<float>(int(y - r0), int(x)) = (r < 0 || c < 0) ? outside : p.kept_alpha[std::size_t(r) * p.width + c];
        }
      }
      planes.push_back(a);
    }
    cv::Mat band = out.image.rowRange(int(r0), int(r1));
    const uchar* before = band.data;
    if (depth == CV_32F) {
      cv::merge(planes, band);
    } else {
      clipped += count_clipped(planes, depth == CV_8U ? 255.0 : 65535.0);
      // round and saturate plane by plane, then interleave the narrow planes: a quarter (8-bit)
      // of the bytes through the merge that interleaving floats would move
      std::vector<cv::Mat> narrow(planes.size());
      for (std::size_t c = 0; c < planes.size(); ++c) planes[c].convertTo(narrow[c], depth);
      cv::merge(narrow, band);
    }
    if (band.data != before) throw std::logic_error("from_planes: merge reallocated its output");
  });
  out.clipped = clipped;
  return out;
}

output_image convolve_image(const cv::Mat& image, convolver& c) {
  if (c.settings().device == conv::backend::cuda) return c.run_gpu(image);
  planar_image p = c.planes(image, c.settings().copy_threads, true);
  c.run(p);
  return from_planes(p, c.settings(), c.settings().copy_threads);
}

bool cpu_before_cuda_starts(long long height, long long width, const kernel& k, int threads) {
  if (k.depth != 1) return false;  // volumes take the 3D path
  if (threads <= 0) threads = int(std::max(1u, std::thread::hardware_concurrency()));
  const double pixels = double(height) * double(width) * 3;  // a colour image's planes
  const double price_ns = conv::choose_cpu_method(k.values, 1, k.height, k.width, height, width).ns_per_pixel;
  const double effective = threads <= 2 ? threads : 2 + 0.4 * (threads - 2);
  const double cpu_s = pixels * (price_ns * 2 / effective + 2.0) * 1e-9;
  const double cuda_s = cuda_command_overhead_s + pixels * 1.0e-9;
  return cpu_s < cuda_s;
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
