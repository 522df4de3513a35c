// The GPU image pipeline (pipeline/, convolver::run_gpu, run_gpu_jpegs) against the CPU
// backend on the same decoded pixels, and the JPEG stage: which files the GPU decoder takes
// (jpeg_header, runs everywhere), nvJPEG's pixels against libjpeg's, GPU-encoded JPEGs.
// [gpu] cases skip visibly without a CUDA device.
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iterator>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <zlib.h>

#include "convolve_image.hpp"
#include "errors.hpp"
#include "fft/device/cuda_check.hpp"
#include "jpeg_header.hpp"
#include "png_deflate.hpp"
#include "support.hpp"

using namespace gpuconv;
using namespace gpuconv::app;

namespace {

using test::make_kernel;

struct diff {
  double max_abs = 0, rel_l2 = 0;
  long long differing = 0, total = 0;
};

diff compare(const cv::Mat& a, const cv::Mat& b) {
  REQUIRE(a.size() == b.size());
  REQUIRE(a.type() == b.type());
  cv::Mat fa, fb;
  a.convertTo(fa, CV_64F);
  b.convertTo(fb, CV_64F);
  const cv::Mat d = cv::abs(fa - fb);
  diff r;
  cv::minMaxLoc(d.reshape(1), nullptr, &r.max_abs);
  r.differing = cv::countNonZero(d.reshape(1) > 0);
  r.total = (long long)d.total() * d.channels();
  const double nb = cv::norm(fb);
  r.rel_l2 = nb > 0 ? cv::norm(fa - fb) / nb : cv::norm(fa - fb);
  return r;
}

std::vector<unsigned char> jpeg_bytes(const cv::Mat& img, std::vector<int> params = {}) {
  std::vector<unsigned char> bytes;
  REQUIRE(cv::imencode(".jpg", img, bytes, params));
  return bytes;
}

// A photo-like 8-bit BGR image: smooth structure, edges and a little noise.
cv::Mat photo(int rows, int cols, std::uint64_t seed) {
  cv::Mat img = test::test_image(rows, cols, CV_8UC3, seed);
  cv::GaussianBlur(img, img, {0, 0}, 1.2);
  cv::circle(img, {cols / 3, rows / 3}, rows / 5, cv::Scalar(30, 200, 90), cv::FILLED, cv::LINE_AA);
  return img;
}

}  // namespace

TEST_CASE("jpeg_header: which JPEGs the GPU decoder is given", "[app]") {
  const cv::Mat colour = photo(48, 64, 3);
  const auto baseline = jpeg_bytes(colour);
  const auto h = pipeline::jpeg_headers(baseline.data(), baseline.size());
  CHECK(h.parsed);
  CHECK(h.width == 64);
  CHECK(h.height == 48);
  CHECK(h.components == 3);
  CHECK(h.sof == 0xC0);
  CHECK(h.gpu_decodable());

  cv::Mat gray;
  cv::cvtColor(colour, gray, cv::COLOR_BGR2GRAY);
  const auto g = jpeg_bytes(gray);
  CHECK_FALSE(pipeline::jpeg_headers(g.data(), g.size()).gpu_decodable());  // one component: the CPU's

  const auto progressive = jpeg_bytes(colour, {cv::IMWRITE_JPEG_PROGRESSIVE, 1});
  const auto hp = pipeline::jpeg_headers(progressive.data(), progressive.size());
  CHECK(hp.sof == 0xC2);
  CHECK_FALSE(hp.gpu_decodable());

  std::vector<unsigned char> truncated(baseline.begin(), baseline.begin() + baseline.size() / 2);
  const auto ht = pipeline::jpeg_headers(truncated.data(), truncated.size());
  CHECK_FALSE(ht.ends_with_eoi);
  CHECK_FALSE(ht.gpu_decodable());

  // a marker planted in the entropy-coded data
  std::vector<unsigned char> stray = baseline;
  stray[stray.size() - 10] = 0xFF;
  stray[stray.size() - 9] = 0xC4;
  CHECK(pipeline::jpeg_headers(stray.data(), stray.size()).stray_marker);
  CHECK_FALSE(pipeline::jpeg_headers(stray.data(), stray.size()).gpu_decodable());

  const std::vector<unsigned char> junk{'n', 'o', 't', ' ', 'a', ' ', 'j', 'p', 'e', 'g'};
  CHECK_FALSE(pipeline::jpeg_headers(junk.data(), junk.size()).parsed);
}

TEST_CASE("GPU pipeline: the CPU backend's results on the same pixels, every depth, alpha rule and mode",
          "[app][gpu][pipeline]") {
  if (!cuda_device_available()) SKIP("no CUDA device present");
  struct image_case {
    int type;
    alpha_mode alpha;
  };
  const auto c = GENERATE(image_case{CV_8UC1, alpha_mode::premultiply}, image_case{CV_8UC3, alpha_mode::premultiply},
                          image_case{CV_8UC4, alpha_mode::premultiply}, image_case{CV_8UC4, alpha_mode::separate},
                          image_case{CV_8UC4, alpha_mode::keep}, image_case{CV_8UC2, alpha_mode::premultiply},
                          image_case{CV_16UC3, alpha_mode::premultiply}, image_case{CV_16UC4, alpha_mode::keep},
                          image_case{CV_32FC3, alpha_mode::premultiply}, image_case{CV_32FC4, alpha_mode::premultiply});
  const auto mode = GENERATE(conv::output_mode::same, conv::output_mode::full, conv::output_mode::valid);
  const auto border = GENERATE(conv::boundary::reflect101, conv::boundary::constant, conv::boundary::wrap);
  const auto depth = GENERATE(output_depth::same, output_depth::u8, output_depth::f32);
  const cv::Mat img = test::test_image(61, 83, c.type, 17);
  const kernel k = make_kernel(7, 5, 23, 1.3);  // sums to 1.3: bright values clip
  convolve_settings s;
  s.device = conv::backend::cpu;
  s.semantics = {conv::operation::convolution, mode, border, CV_MAT_DEPTH(c.type) == CV_32F ? 0.25f : 77.f};
  s.alpha = c.alpha;
  s.depth = depth;
  s.scale = 0.9;
  s.offset = CV_MAT_DEPTH(c.type) == CV_32F ? 0.01 : 3;
  convolver cpu(k, s);
  const output_image expected = convolve_image(img, cpu);
  s.device = conv::backend::cuda;
  convolver gpu(k, s);
  const output_image got = gpu.run_gpu(img);
  INFO("type " << c.type << ", alpha " << int(c.alpha) << ", mode " << int(mode) << ", border " << int(border)
               << ", depth " << int(depth));
  const diff d = compare(got.image, expected.image);
  INFO("max |diff| " << d.max_abs << ", " << d.differing << " of " << d.total << " differ, rel L2 " << d.rel_l2);
  if (got.image.depth() == CV_32F) {
    CHECK(d.rel_l2 <= 1e-6);
  } else {
    // 1 LSB where the two FFTs' fp32 roundings straddle a tie: rare for 8-bit values; for
    // 16-bit ones (256x the magnitude, the same relative error) up to ~0.2% of the values
    CHECK(d.max_abs <= 1);
    CHECK(d.differing * (got.image.depth() == CV_16U ? 200 : 1000) <= d.total);
    CHECK(std::abs(got.clipped - expected.clipped) <= 1 + expected.clipped / 1000);
  }
}

TEST_CASE("GPU pipeline: 12 MP RGB through run_gpu equals the CPU backend", "[app][gpu]") {
  if (!cuda_device_available()) SKIP("no CUDA device present");
  const cv::Mat img = photo(3000, 4000, 5);
  const kernel k = make_kernel(17, 17, 4, 1.0);
  convolve_settings s;
  s.device = conv::backend::cpu;
  convolver cpu(k, s);
  const output_image expected = convolve_image(img, cpu);
  s.device = conv::backend::cuda;
  convolver gpu(k, s);
  const output_image got = gpu.run_gpu(img);
  const diff d = compare(got.image, expected.image);
  INFO("max |diff| " << d.max_abs << ", " << d.differing << " of " << d.total << " differ");
  CHECK(d.max_abs <= 1);
  CHECK(d.differing * 1000 <= d.total);
}

TEST_CASE("GPU pipeline: an image over the device budget goes through the plan's bands, same result", "[app][gpu]") {
  if (!cuda_device_available()) SKIP("no CUDA device present");
  const cv::Mat img = photo(700, 900, 9);
  const kernel k = make_kernel(9, 9, 3, 1.0);
  convolve_settings s;
  s.device = conv::backend::cuda;
  convolver gpu(k, s);
  const output_image whole = gpu.run_gpu(img);
  ::setenv("GPUCONV_GPU_IMAGE_BUDGET", "1000000", 1);  // 1 MB: this image needs ~11 MB
  const output_image banded = gpu.run_gpu(img);
  ::unsetenv("GPUCONV_GPU_IMAGE_BUDGET");
  const diff d = compare(banded.image, whole.image);
  INFO("max |diff| " << d.max_abs << ", " << d.differing << " of " << d.total << " differ");
  CHECK(d.max_abs <= 1);
  CHECK(d.differing * 1000 <= d.total);
}

TEST_CASE("GPU JPEG: nvJPEG decode + convolve + encode, against libjpeg and the CPU path", "[app][gpu][pipeline]") {
  if (!cuda_device_available()) SKIP("no CUDA device present");
  const kernel k = make_kernel(5, 5, 8, 1.0);
  convolve_settings s;
  s.device = conv::backend::cuda;
  convolver gpu(k, s);
  if (!gpu.gpu_jpeg()) SKIP("nvJPEG is not available on this machine");
  // two sizes in one batch, one of them odd
  const std::vector<cv::Mat> images{photo(480, 640, 1), photo(333, 517, 2)};
  std::vector<std::vector<unsigned char>> files;
  for (const auto& m : images) files.push_back(jpeg_bytes(m, {cv::IMWRITE_JPEG_QUALITY, 92}));
  std::vector<convolver::jpeg_input> batch;
  for (std::size_t i = 0; i < files.size(); ++i) {
    const auto h = pipeline::jpeg_headers(files[i].data(), files[i].size());
    REQUIRE(h.gpu_decodable());
    batch.push_back({&files[i], h.height, h.width, false});
  }
  const auto out = gpu.run_gpu_jpegs(batch);
  REQUIRE(out.size() == 2);
  convolve_settings cs = s;
  cs.device = conv::backend::cpu;
  convolver cpu(k, cs);
  for (std::size_t i = 0; i < files.size(); ++i) {
    REQUIRE(out[i].decoded);
    // libjpeg's decode of the same file, convolved on the CPU: the decoders differ (IDCT,
    // chroma upsampling), by a few levels at most on a smooth image
    const cv::Mat libjpeg = cv::imdecode(files[i], cv::IMREAD_UNCHANGED);
    const output_image expected = convolve_image(libjpeg, cpu);
    const diff d = compare(out[i].image.image, expected.image);
    INFO("image " << i << ": nvJPEG vs libjpeg after the convolution: max " << d.max_abs << ", rel L2 " << d.rel_l2);
    CHECK(d.max_abs <= 24);
    CHECK(d.rel_l2 <= 0.01);
  }
  // encoded on the GPU: a JPEG that libjpeg reads back close to the CPU encoder's output
  batch[0].encode = true;
  const auto enc = gpu.run_gpu_jpegs({batch[0]});
  REQUIRE(enc[0].decoded);
  REQUIRE_FALSE(enc[0].encoded.empty());
  const cv::Mat back = cv::imdecode(enc[0].encoded, cv::IMREAD_UNCHANGED);
  REQUIRE(back.type() == CV_8UC3);
  REQUIRE(back.size() == images[0].size());
  const double psnr = cv::PSNR(back, out[0].image.image);
  INFO("GPU-encoded (quality 95) against the unencoded result: PSNR " << psnr << " dB");
  CHECK(psnr > 38);

  // a CPU-decoded image with a JPEG output: convolved and encoded on the GPU
  gpu.start_gpu_jpeg();
  REQUIRE(gpu.gpu_jpeg_ready());
  const cv::Mat libjpeg = cv::imdecode(files[0], cv::IMREAD_UNCHANGED);
  const convolver::jpeg_output from_host = gpu.run_gpu_to_jpeg(libjpeg);
  REQUIRE_FALSE(from_host.encoded.empty());
  const cv::Mat back2 = cv::imdecode(from_host.encoded, cv::IMREAD_UNCHANGED);
  const double psnr2 = cv::PSNR(back2, gpu.run_gpu(libjpeg).image);
  INFO("run_gpu_to_jpeg against run_gpu: PSNR " << psnr2 << " dB");
  CHECK(psnr2 > 38);
}

TEST_CASE("batch on CUDA: JPEGs through the GPU decode stages, every setting, each file's own result",
          "[app][cli][gpu]") {
  if (!cuda_device_available()) SKIP("no CUDA device present");
  {
    convolve_settings s;
    s.device = conv::backend::cuda;
    if (!convolver(make_kernel(3, 3, 1, 1.0), s).gpu_jpeg()) SKIP("nvJPEG is not available on this machine");
  }
  namespace fs = std::filesystem;
  test::scratch_dir dir;
  const fs::path in = dir / "in";
  fs::create_directories(in);
  constexpr int files = 30;
  for (int i = 0; i < files; ++i) {  // three sizes, each photo different
    char name[32];
    std::snprintf(name, sizeof name, "p%02d.jpg", i);
    REQUIRE(cv::imwrite((in / name).string(), photo(120 + 8 * (i % 3), 160, std::uint64_t(i + 1)),
                        {cv::IMWRITE_JPEG_QUALITY, 92}));
  }
  auto batch = [&](const std::string& out, std::vector<std::string> extra) {
    std::vector<std::string> args{"batch", in.string(), "gaussian:2", (dir / out).string(), "--device", "cuda",
                                  "--format", "png", "--jobs", "8", "-q"};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto r = test::run_gpuconv(args, dir.path());
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    return r.err;
  };
  // libjpeg's pixels (--decoder cpu), then nvJPEG's through the decode stages: the decoders' queue,
  // the stages' batches and buffers, the decoders that wait for nvJPEG's start-up
  batch("ref", {"--decoder", "cpu"});
  // (the last: no hardware-decoder stage, two GPU-hybrid decoders take every JPEG)
  struct setting {
    const char *stages, *batch, *startup, *hybrid;
  };
  const setting settings[] = {{"4", "3", "0", "0"}, {"1", "8", "0", "0"}, {"3", "8", "2", "0"}, {"0", "8", "0", "2"}};
  for (const auto& st : settings) {
    ::setenv("GPUCONV_DECODE_STAGES", st.stages, 1);
    ::setenv("GPUCONV_DECODE_BATCH", st.batch, 1);
    ::setenv("GPUCONV_STARTUP_DECODERS", st.startup, 1);
    ::setenv("GPUCONV_HYBRID_DECODERS", st.hybrid, 1);
    ::setenv("GPUCONV_BATCH_STATS", "1", 1);
    const std::string out = std::string("s") + st.stages + "-b" + st.batch + "-d" + st.startup + "-h" + st.hybrid;
    const std::string err = batch(out, {});
    for (const char* v : {"GPUCONV_DECODE_STAGES", "GPUCONV_DECODE_BATCH", "GPUCONV_STARTUP_DECODERS",
                          "GPUCONV_HYBRID_DECODERS", "GPUCONV_BATCH_STATS"})
      ::unsetenv(v);
    INFO(out << ": " << err);
    if (std::string(st.startup) == "0")  // every decoder waited for nvJPEG: the GPU decoded every file
      CHECK(err.find("JPEGs decoded on the CPU: 0 (0 decoders") != std::string::npos);
    if (std::string(st.hybrid) != "0")  // ... every one of them on the GPU-hybrid decoder
      CHECK(err.find("by the GPU-hybrid decoder " + std::to_string(files) + " (" + st.hybrid + " threads)") !=
            std::string::npos);
    for (const auto& e : fs::directory_iterator(dir / "ref")) {
      const fs::path mine = dir / out / e.path().filename();
      INFO(mine);
      REQUIRE(fs::exists(mine));
      const diff d = compare(cv::imread(mine.string(), cv::IMREAD_UNCHANGED), cv::imread(e.path().string(), cv::IMREAD_UNCHANGED));
      INFO("nvJPEG vs libjpeg after the convolution: max " << d.max_abs << ", rel L2 " << d.rel_l2);
      CHECK(d.max_abs <= 24);
      CHECK(d.rel_l2 <= 0.01);
      if (out == "s1-b8-d0-h0")  // nvJPEG decodes a file the same in any batch, on any stage
        CHECK(test::read_file(mine) == test::read_file(dir / "s4-b3-d0-h0" / e.path().filename()));
    }
    CHECK(std::distance(fs::directory_iterator(dir / out), fs::directory_iterator{}) == files);
  }
}

TEST_CASE("batch on CUDA: damaged JPEGs fail as on the CPU, through the hardware decoder's stages and the GPU-hybrid decoder",
          "[app][cli][gpu]") {
  namespace fs = std::filesystem;
  test::scratch_dir dir;
  const fs::path in = dir / "in";
  fs::create_directories(in);
  constexpr int good = 8;
  std::vector<std::string> damaged;
  for (int i = 0; i < good; ++i) {
    const auto bytes = jpeg_bytes(photo(160, 240, std::uint64_t(100 + i)), {cv::IMWRITE_JPEG_QUALITY, 92});
    const std::string name = "p" + std::to_string(i);
    test::write_file(in / (name + ".jpg"), std::string(bytes.begin(), bytes.end()));
    if (i >= 3) continue;
    // truncated; 64 bytes of the entropy-coded data flipped at a quarter, a half, three quarters
    std::string b(bytes.begin(), bytes.end());
    test::write_file(in / (name + "-trunc.jpg"), b.substr(0, b.size() / 2));
    damaged.push_back(name + "-trunc.jpg");
    const std::size_t at = b.size() * std::size_t(i + 1) / 4;
    for (std::size_t k = at; k < at + 64; ++k) b[k] = char(b[k] ^ 0x5a);
    test::write_file(in / (name + "-flip.jpg"), b);
    damaged.push_back(name + "-flip.jpg");
  }
  // the files a run reported as truncated or corrupt, and its summary line
  auto batch = [&](const std::string& out, const std::string& device) {
    const auto r = test::run_gpuconv({"batch", in.string(), "gaussian:2", (dir / out).string(), "--device", device,
                                      "--format", "png", "--jobs", "8"},
                                     dir.path());
    INFO(out << ": " << r.err);
    CHECK(r.exit_code == exit_failure);
    std::vector<std::string> failed;
    for (const auto& name : damaged) {
      const bool reported = r.err.find(name + "': truncated or corrupt") != std::string::npos;
      if (reported) failed.push_back(name);
      INFO(name);
      CHECK(reported != fs::exists(dir / out / (fs::path(name).stem().string() + ".png")));  // error or output
    }
    CHECK(test::temp_files_under(dir.path()).empty());
    const auto at = r.err.find("gpuconv: batch done");
    REQUIRE(at != std::string::npos);
    return std::pair(failed, r.err.substr(at, r.err.find(" (", at) - at));
  };
  // libjpeg (here too without a GPU): the truncated files fail; a flipped span may decode with
  // no complaint (then the file is done, on every path)
  const auto cpu = batch("cpu", "cpu");
  for (const auto& name : damaged)
    if (name.find("-trunc") != std::string::npos) CHECK(std::find(cpu.first.begin(), cpu.first.end(), name) != cpu.first.end());
  if (!cuda_device_available()) SKIP("no CUDA device present");
  {
    convolve_settings s;
    s.device = conv::backend::cuda;
    if (!convolver(make_kernel(3, 3, 1, 1.0), s).gpu_jpeg()) SKIP("nvJPEG is not available on this machine");
  }
  // the hardware decoder's stages only, then the GPU-hybrid decoder only (every decoder waits for nvJPEG)
  for (const char* hybrid : {"0", "2"}) {
    ::setenv("GPUCONV_STARTUP_DECODERS", "0", 1);
    ::setenv("GPUCONV_HYBRID_DECODERS", hybrid, 1);
    if (std::string(hybrid) != "0") ::setenv("GPUCONV_DECODE_STAGES", "0", 1);
    const auto gpu = batch(std::string("cuda-h") + hybrid, "cuda");
    INFO("hybrid decoders " << hybrid);
    CHECK(gpu.first == cpu.first);    // the same files fail
    CHECK(gpu.second == cpu.second);  // "gpuconv: batch done N, skipped 0, failed M"
    for (const char* v : {"GPUCONV_STARTUP_DECODERS", "GPUCONV_HYBRID_DECODERS", "GPUCONV_DECODE_STAGES"}) ::unsetenv(v);
  }
}

TEST_CASE("GPU PNG: scanlines unfiltered and filtered on the GPU, the same image as run_gpu's", "[app][gpu][pipeline]") {
  if (!cuda_device_available()) SKIP("no CUDA device present");
  const int type = GENERATE(CV_8UC1, CV_8UC3, CV_8UC4, CV_16UC1, CV_16UC3, CV_16UC4);
  const auto mode = GENERATE(conv::output_mode::same, conv::output_mode::full, conv::output_mode::valid);
  const cv::Mat img = photo(83, 131, 21);
  cv::Mat in;
  const int channels = CV_MAT_CN(type);
  if (channels == 1) cv::cvtColor(img, in, cv::COLOR_BGR2GRAY);
  else if (channels == 4) cv::cvtColor(img, in, cv::COLOR_BGR2BGRA);
  else in = img;
  if (channels == 4)  // a varying alpha
    for (int y = 0; y < in.rows; ++y)
      for (int x = 0; x < in.cols; ++x) in.at<cv::Vec4b>(y, x)[3] = (unsigned char)(255 - (x * 3 + y) % 200);
  if (CV_MAT_DEPTH(type) == CV_16U) {  // 16-bit: low bytes that vary too (Sub works on bytes)
    cv::Mat wide;
    in.convertTo(wide, CV_16U, 257.0);
    cv::Mat noise(wide.size(), wide.type());
    cv::randu(noise, 0, 200);
    in = wide + noise;
  }
  const kernel k = make_kernel(9, 7, 31, 1.2);  // sums to 1.2: some values clip
  convolve_settings s;
  s.device = conv::backend::cuda;
  s.semantics.mode = mode;
  convolver gpu(k, s);
  const output_image expected = gpu.run_gpu(in);
  INFO("type " << type << ", mode " << int(mode));
  std::vector<unsigned char> file;
  REQUIRE(cv::imencode(".png", in, file));  // OpenCV's default: every row Sub
  const auto scan = pipeline::inflate_png(file.data(), file.size());
  REQUIRE(scan);
  REQUIRE(scan->none_or_sub());
  auto read_back = [](const convolver::png_result& r) {
    REQUIRE_FALSE(r.scanlines.empty());
    CHECK(r.zlib);  // compressed on the GPU (GPUCONV_PNG_DEFLATE not set)
    const auto png = r.file();
    return cv::imdecode(png, cv::IMREAD_UNCHANGED);
  };
  auto equal = [&](const cv::Mat& got) {
    REQUIRE(got.size() == expected.image.size());
    REQUIRE(got.type() == expected.image.type());
    CHECK(cv::norm(got, expected.image, cv::NORM_INF) == 0);
  };
  SECTION("scanlines in, scanlines out") {
    const auto r = gpu.run_gpu_png(*scan, true);
    equal(read_back(r));
    CHECK(r.image.clipped == expected.clipped);
  }
  SECTION("scanlines in, an image out (not a PNG)") {
    const auto r = gpu.run_gpu_png(*scan, false);
    CHECK(r.scanlines.empty());
    equal(r.image.image);
    CHECK(r.image.clipped == expected.clipped);
  }
  SECTION("an image in, scanlines out") {
    const auto r = gpu.run_gpu_png(in, true);
    equal(read_back(r));
  }
  SECTION("rows of None and Sub") {
    // None for even rows: the Sub bytes summed back (per byte, one pixel's bytes apart)
    auto mixed = *scan;
    const std::size_t bpp = std::size_t(mixed.pixel_bytes());
    const std::size_t stride = 1 + std::size_t(mixed.width) * bpp;
    for (int y = 0; y < mixed.height; y += 2) {
      unsigned char* r = mixed.rows.data() + std::size_t(y) * stride;
      REQUIRE(r[0] == 1);
      r[0] = 0;
      for (std::size_t i = bpp; i < stride - 1; ++i) r[1 + i] = (unsigned char)(r[1 + i] + r[1 + i - bpp]);
    }
    REQUIRE(mixed.none_or_sub());
    equal(gpu.run_gpu_png(mixed, false).image.image);
  }
  SECTION("scanlines in, a JPEG out: the same bytes as from the decoded image") {
    (void)convolver::gpu_jpeg_available();  // nvJPEG loaded (where it is) before either call
    const auto from_png = gpu.run_gpu_to_jpeg(*scan);
    const auto from_mat = gpu.run_gpu_to_jpeg(in);
    CHECK(from_png.encoded == from_mat.encoded);
    if (from_mat.encoded.empty()) equal(from_png.image.image);  // not encoded on the GPU (no nvJPEG, or not BGR)
    if (type == CV_8UC3 && convolver::gpu_jpeg_available()) CHECK_FALSE(from_png.encoded.empty());
  }
#ifdef GPUCONV_HAVE_NVJPEG
  SECTION("planar BGR on the device (a JPEG nvJPEG decoded), a PNG out: the same pixels") {
    if (type == CV_8UC3) {
      std::vector<cv::Mat> planes;
      cv::split(in, planes);
      const std::size_t area = std::size_t(in.rows) * std::size_t(in.cols);
      unsigned char* dev = nullptr;
      REQUIRE(cudaMalloc(&dev, 3 * area) == cudaSuccess);
      for (int c = 0; c < 3; ++c)
        REQUIRE(cudaMemcpy(dev + c * area, planes[std::size_t(c)].data, area, cudaMemcpyHostToDevice) == cudaSuccess);
      const auto r = gpu.run_gpu_decoded_png(dev, in.rows, in.cols);
      const auto image = gpu.run_gpu_decoded(dev, in.rows, in.cols, false).image.image;
      cudaFree(dev);
      equal(image);
      equal(read_back(r));
    }
  }
#endif
  SECTION("--png-level given: OpenCV encodes (an image comes back)") {
    convolve_settings s2 = s;
    s2.codec.png_level = 3;
    convolver other(k, s2);
    const auto r = other.run_gpu_png(in, true);
    CHECK(r.scanlines.empty());
    equal(r.image.image);
  }
}

namespace {

// n bytes through gpu_deflate, back through zlib's inflate
struct deflated {
  bool ok = false;
  std::vector<unsigned char> zlib, back;
  int rc = 0;
};

deflated gpu_deflate_round_trip(const std::vector<unsigned char>& data) {
  deflated d;
  unsigned char* dev = nullptr;
  REQUIRE(cudaMalloc(&dev, data.size()) == cudaSuccess);
  REQUIRE(cudaMemcpy(dev, data.data(), data.size(), cudaMemcpyHostToDevice) == cudaSuccess);
  pipeline::gpu_deflate deflate;
  d.ok = deflate.run(dev, data.size(), nullptr, d.zlib, [](void* host, const unsigned char* device, std::size_t n) {
    REQUIRE(cudaMemcpy(host, device, n, cudaMemcpyDeviceToHost) == cudaSuccess);
  });
  cudaFree(dev);
  d.back.resize(data.size() + 1);
  uLongf n = uLongf(d.back.size());
  d.rc = uncompress(d.back.data(), &n, d.zlib.data(), uLong(d.zlib.size()));
  d.back.resize(n);
  return d;
}

}  // namespace

TEST_CASE("GPU deflate: zlib inflates what it makes, runs of every length, any bytes", "[app][gpu][pipeline]") {
  if (!cuda_device_available()) SKIP("no CUDA device present");
  std::vector<std::pair<std::string, std::vector<unsigned char>>> inputs;
  for (std::size_t n : {1, 2, 3, 4, 5, 257, 258, 259, 260, 261, 262, 516, 517, 518, 519, 520, 1000, 100000})
    inputs.push_back({"zeros " + std::to_string(n), std::vector<unsigned char>(n, 0)});
  {
    std::vector<unsigned char> v(256 * 3);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = (unsigned char)(i / 3);  // every value, runs of 3
    inputs.push_back({"every byte value", v});
  }
  cv::RNG rng(29);
  for (int k = 0; k < 6; ++k) {
    // runs of random lengths (1..700: across 258 and 516) of random values, some of them equal
    std::vector<unsigned char> v;
    while (v.size() < std::size_t(50000 * (k + 1))) {
      const int len = rng.uniform(0, 10) < 7 ? rng.uniform(1, 5) : rng.uniform(1, 701);
      v.insert(v.end(), std::size_t(len), (unsigned char)rng.uniform(0, k < 3 ? 4 : 256));
    }
    inputs.push_back({"random runs " + std::to_string(k), v});
  }
  {
    std::vector<unsigned char> v(1 << 20);
    for (auto& b : v) b = (unsigned char)rng.uniform(0, 256);  // noise: every code long, no matches
    inputs.push_back({"noise", v});
  }
  {
    // skewed: a few very frequent symbols and many rare ones (long codes, the 15-bit limit)
    std::vector<unsigned char> v;
    for (int i = 0; i < 300000; ++i) {
      const double u = rng.uniform(0.0, 1.0);
      v.push_back((unsigned char)(u < 0.9 ? 0 : u < 0.99 ? 1 + i % 3 : int(u * 1e6) % 256));
    }
    inputs.push_back({"skewed", v});
  }
  {
    // Fibonacci counts: byte k (k < 26) k-th Fibonacci number times, shuffled: a Huffman tree
    // 25 deep, so the 15-bit limit's repair runs
    std::vector<unsigned char> v;
    std::uint64_t f0 = 1, f1 = 1;
    for (int k = 0; k < 26; ++k, f1 += f0, f0 = f1 - f0) v.insert(v.end(), std::size_t(f0), (unsigned char)(7 * k + 1));
    for (std::size_t i = v.size() - 1; i > 0; --i) std::swap(v[i], v[std::size_t(rng.uniform(0, int(i + 1)))]);
    inputs.push_back({"Fibonacci counts", v});
  }
  for (const auto& [name, data] : inputs) {
    INFO(name << ", " << data.size() << " bytes");
    const deflated d = gpu_deflate_round_trip(data);
    REQUIRE(d.ok);
    CHECK(d.rc == Z_OK);
    const bool same_bytes = d.back == data;  // (not the vectors themselves in the report: megabytes)
    INFO(d.back.size() << " bytes back from " << d.zlib.size());
    CHECK(same_bytes);
  }
}

TEST_CASE("GPU deflate: the bench's PNG scanlines within a few percent of zlib's level-1 RLE size", "[app][gpu][pipeline]") {
  if (!cuda_device_available()) SKIP("no CUDA device present");
  const cv::Mat img = photo(512, 768, 13);
  std::vector<unsigned char> file;
  REQUIRE(cv::imencode(".png", img, file));
  const auto scan = pipeline::inflate_png(file.data(), file.size());
  REQUIRE(scan);
  const deflated d = gpu_deflate_round_trip(scan->rows);
  REQUIRE(d.ok);
  const bool same_bytes = d.back == scan->rows;
  CHECK(same_bytes);
  // zlib, level 1, Z_RLE: OpenCV's setting
  z_stream z{};
  REQUIRE(deflateInit2(&z, 1, Z_DEFLATED, 15, 8, Z_RLE) == Z_OK);
  std::vector<unsigned char> out(deflateBound(&z, uLong(scan->rows.size())));
  z.next_in = const_cast<unsigned char*>(scan->rows.data());
  z.avail_in = uInt(scan->rows.size());
  z.next_out = out.data();
  z.avail_out = uInt(out.size());
  REQUIRE(deflate(&z, Z_FINISH) == Z_STREAM_END);
  const double ratio = double(d.zlib.size()) / double(z.total_out);
  deflateEnd(&z);
  INFO("GPU " << d.zlib.size() << " bytes, zlib " << z.total_out << " (" << ratio << "x)");
  CHECK(ratio < 1.05);
}

TEST_CASE("batch and one image on CUDA: PNGs inflated, unfiltered and deflated around the GPU, the CPU backend's pixels",
          "[app][cli][gpu]") {
  if (!cuda_device_available()) SKIP("no CUDA device present");
  namespace fs = std::filesystem;
  test::scratch_dir dir;
  const fs::path in = dir / "in";
  fs::create_directories(in);
  // gray, BGR, BGRA, 16-bit (OpenCV's path), OpenCV's Sub rows and libpng's adaptive filters,
  // odd sizes; one damaged file
  const cv::Mat img = photo(97, 131, 3);
  cv::Mat gray, bgra, wide;
  cv::cvtColor(img, gray, cv::COLOR_BGR2GRAY);
  cv::cvtColor(img, bgra, cv::COLOR_BGR2BGRA);
  for (int y = 0; y < bgra.rows; ++y)
    for (int x = 0; x < bgra.cols; ++x) bgra.at<cv::Vec4b>(y, x)[3] = (unsigned char)(255 - (x + 2 * y) % 150);
  img.convertTo(wide, CV_16UC3, 257.0);
  REQUIRE(cv::imwrite((in / "gray.png").string(), gray));
  REQUIRE(cv::imwrite((in / "bgr.png").string(), img));
  REQUIRE(cv::imwrite((in / "bgra.png").string(), bgra));
  REQUIRE(cv::imwrite((in / "adaptive.png").string(), img, {cv::IMWRITE_PNG_COMPRESSION, 9}));
  REQUIRE(cv::imwrite((in / "wide.png").string(), wide));
  REQUIRE(cv::imwrite((in / "tall.png").string(), photo(301, 17, 8)));
  {
    std::vector<unsigned char> b;
    REQUIRE(cv::imencode(".png", photo(64, 64, 5), b));
    b[b.size() / 2] ^= 0x5a;  // inside the IDAT data: a CRC error
    std::FILE* f = std::fopen((in / "damaged.png").string().c_str(), "wb");
    REQUIRE(f);
    std::fwrite(b.data(), 1, b.size(), f);
    std::fclose(f);
  }
  auto run = [&](std::vector<std::string> args) {
    const auto r = test::run_gpuconv(args, dir.path());
    INFO(r.err);
    return r;
  };
  const auto cpu = run({"batch", in.string(), "gaussian:2", (dir / "cpu").string(), "--device", "cpu", "-q"});
  const auto gpu = run({"batch", in.string(), "gaussian:2", (dir / "gpu").string(), "--device", "cuda", "-q"});
  // the damaged file fails the same way on both, the others are done
  CHECK(cpu.exit_code == gpu.exit_code);
  CHECK(cpu.exit_code != 0);
  CHECK(gpu.err.find("damaged.png") != std::string::npos);
  CHECK(gpu.err.find("done 6, skipped 0, failed 1") != std::string::npos);
  for (const char* name : {"gray.png", "bgr.png", "bgra.png", "adaptive.png", "wide.png", "tall.png"}) {
    INFO(name);
    const cv::Mat a = cv::imread((dir / "gpu" / name).string(), cv::IMREAD_UNCHANGED);
    const cv::Mat b = cv::imread((dir / "cpu" / name).string(), cv::IMREAD_UNCHANGED);
    REQUIRE_FALSE(a.empty());
    const diff d = compare(a, b);
    INFO("max " << d.max_abs << ", " << d.differing << " of " << d.total << " differ");
    CHECK(d.max_abs <= 1);
    CHECK(d.differing * 100 <= d.total);
  }
  // over the device budget (10 kB: each of these needs more): the CPU undoes the filters, the
  // plan's bands convolve, OpenCV encodes - the same pixels
  ::setenv("GPUCONV_GPU_IMAGE_BUDGET", "10000", 1);
  const auto banded = run({"batch", in.string(), "gaussian:2", (dir / "banded").string(), "--device", "cuda", "-q"});
  ::unsetenv("GPUCONV_GPU_IMAGE_BUDGET");
  CHECK(banded.err.find("done 6, skipped 0, failed 1") != std::string::npos);
  for (const char* name : {"gray.png", "bgr.png", "bgra.png", "adaptive.png", "tall.png"}) {
    INFO("banded " << name);
    const cv::Mat a = cv::imread((dir / "banded" / name).string(), cv::IMREAD_UNCHANGED);
    const cv::Mat b = cv::imread((dir / "gpu" / name).string(), cv::IMREAD_UNCHANGED);
    REQUIRE_FALSE(a.empty());
    const diff d = compare(a, b);
    CHECK(d.max_abs <= 1);
    CHECK(d.differing * 100 <= d.total);
  }
  // one image, PNG out: deflated on the GPU, the same pixels as the batch's
  for (const char* name : {"bgr.png", "bgra.png", "gray.png"}) {
    const fs::path out = dir / (std::string("one-") + name);
    const auto r = run({(in / name).string(), "gaussian:2", out.string(), "--device", "cuda", "-q"});
    INFO(name << ": " << r.err);
    REQUIRE(r.exit_code == 0);
    const cv::Mat a = cv::imread(out.string(), cv::IMREAD_UNCHANGED);
    const cv::Mat b = cv::imread((dir / "gpu" / name).string(), cv::IMREAD_UNCHANGED);
    REQUIRE_FALSE(a.empty());
    CHECK(cv::norm(a, b, cv::NORM_INF) == 0);
  }
}
