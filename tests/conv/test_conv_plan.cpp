// The convolution plan (overlap-save tiles, FFT per tile) against the direct double-precision
// reference, every mode x operation x boundary, on fresh random data.
// Error measure: ||out - ref|| / || |k| * |x| ||, the reference being the direct convolution
// in double and the scale the direct convolution of |x| with |k| (at least ||k|| rms(x)). An FFT convolution's error
// is proportional to the magnitudes the sums are formed from, not to the result, which can
// cancel to almost nothing (a 1x1 image under reflect101 gives v * sum(k) everywhere; a
// random kernel's sum can be ~0). Bound: 4 x the FFT bound of the tile (reference.hpp):
// a forward and an inverse 2D transform plus the multiply, ~1.6e-5 for 128^2 tiles.
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>

#include <array>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "conv/plan.hpp"
#include "conv/reference.hpp"
#include "fft/device/buffer.hpp"
#include "fft/device/cuda_check.hpp"
#include "method_check.hpp"
#include "support/reference.hpp"

using namespace gpuconv;
using namespace gpuconv::conv;

namespace {

double tile_bound(const plan& p) {
  return 4 * test::fft_error_bound<float>(fft::log2_exact(p.tiles().tile_h) + fft::log2_exact(p.tiles().tile_w), 2);
}

// Runs one case on `device` and checks it against the direct reference.
void check_case(backend device, long long h, long long w, int planes, int kh, int kw, const options& o, int tile = 0,
                cuda_path path = cuda_path::automatic, std::size_t memory_limit = 0, bool autotune = false) {
  const auto seed = test::fresh_seed();
  INFO("image " << h << "x" << w << "x" << planes << ", kernel " << kh << "x" << kw << ", mode " << int(o.mode)
                << ", op " << int(o.op) << ", border " << int(o.border) << ", tile " << tile << ", path " << int(path)
                << ", memory limit " << memory_limit << ", seed " << seed);
  const auto img = test::random_reals<float>(std::size_t(h * w * planes), seed);
  const auto k = test::random_reals<float>(std::size_t(kh) * kw, seed + 7);
  plan_options po;
  po.semantics = o;
  po.device = device;
  po.tile = tile;
  po.path = path;
  po.memory_limit = memory_limit;
  po.autotune = autotune;
  plan p(h, w, planes, k.data(), kh, kw, po);
  REQUIRE(p.selected_backend() == device);
  if (path != cuda_path::automatic) REQUIRE(p.path() == path);
  std::vector<float> out(std::size_t(p.output_height() * p.output_width() * planes), NAN);
  p.execute(img.data(), out.data());
  std::vector<double> ref(out.size()), scale(out.size());
  direct_convolve(img.data(), h, w, planes, k.data(), kh, kw, o, ref.data());
  std::vector<float> img_abs(img.size()), k_abs(k.size());
  for (std::size_t i = 0; i < img.size(); ++i) img_abs[i] = std::abs(img[i]);
  for (std::size_t i = 0; i < k.size(); ++i) k_abs[i] = std::abs(k[i]);
  options o_abs = o;
  o_abs.constant_value = std::abs(o.constant_value);
  direct_convolve(img_abs.data(), h, w, planes, k_abs.data(), kh, kw, o_abs, scale.data());
  for (float v : out) REQUIRE(std::isfinite(v));
  // Each output's scale is at least ||k||_2 * rms(x): the FFT's rounding spreads the whole
  // kernel's energy over the tile, also onto an output whose own |k| * |x| sum is tiny (a
  // 1x1 image with a zero border sees one kernel value: an unlucky ~0 made this test flaky).
  double k2 = 0, x2 = 0;
  for (float v : k) k2 += double(v) * v;
  for (float v : img) x2 += double(v) * v;
  const double floor = std::sqrt(k2) * std::sqrt(x2 / double(img.size()));
  double num = 0, den = 0;
  for (std::size_t i = 0; i < out.size(); ++i) {
    num += (out[i] - ref[i]) * (out[i] - ref[i]);
    den += std::max(scale[i], floor) * std::max(scale[i], floor);
  }
  const double err = std::sqrt(num / den);
  INFO("relative L2 error " << err << ", bound " << tile_bound(p));
  CHECK(err <= tile_bound(p));
}

const std::array<boundary, 6> all_borders{boundary::zero, boundary::constant, boundary::replicate,
                                          boundary::reflect, boundary::reflect101, boundary::wrap};

void sweep(backend device, cuda_path path = cuda_path::automatic) {
  const auto k = GENERATE(std::array<int, 2>{1, 1}, std::array<int, 2>{2, 2}, std::array<int, 2>{3, 3},
                          std::array<int, 2>{4, 7}, std::array<int, 2>{31, 31});
  const auto img = GENERATE(std::array<int, 2>{1, 1}, std::array<int, 2>{7, 13}, std::array<int, 2>{48, 64});
  test::for_each_semantics(k[0], k[1], img[0], img[1],
                           [&](const options& o) { check_case(device, img[0], img[1], 2, k[0], k[1], o, 0, path); });
}

}  // namespace

TEST_CASE("CPU convolution matches the direct reference: modes x operations x boundaries", "[conv]") {
  sweep(backend::cpu);
}

TEST_CASE("CPU convolution on larger images, several tiles and a kernel wider than a tile", "[conv]") {
  options o;
  check_case(backend::cpu, 480, 640, 1, 3, 3, o);
  check_case(backend::cpu, 200, 203, 3, 31, 31, o);
  check_case(backend::cpu, 100, 90, 1, 40, 7, o, 32);  // 40 rows need a 64-row tile; forced 32 grows to fit
  o.border = boundary::wrap;
  o.mode = output_mode::full;
  check_case(backend::cpu, 70, 50, 2, 5, 9, o, 16);  // many 16x16 tiles
}

TEST_CASE("GPU fused kernel matches the direct reference: modes x operations x boundaries", "[conv][gpu]") {
  if (!cuda_device_available()) SKIP("no CUDA device present");
  sweep(backend::cuda, cuda_path::fused);
}

TEST_CASE("GPU three-pass path matches the direct reference: modes x operations x boundaries", "[conv][gpu]") {
  if (!cuda_device_available()) SKIP("no CUDA device present");
  sweep(backend::cuda, cuda_path::three_pass);
}

TEST_CASE("GPU multi-pass pipeline matches the direct reference: modes x operations x boundaries", "[conv][gpu]") {
  if (!cuda_device_available()) SKIP("no CUDA device present");
  sweep(backend::cuda, cuda_path::multipass);
}

TEST_CASE("GPU fused kernel: every tile size, odd tile counts, batches, large images", "[conv][gpu]") {
  if (!cuda_device_available()) SKIP("no CUDA device present");
  options o;
  for (int tile : {32, 64, 128}) {
    check_case(backend::cuda, 100, 90, 3, 5, 3, o, tile, cuda_path::fused);   // odd tile count per plane
    check_case(backend::cuda, 61, 67, 1, 17, 30, o, tile, cuda_path::fused);  // one tile pair holds two planes' tiles
  }
  check_case(backend::cuda, 480, 640, 1, 3, 3, o, 0, cuda_path::fused);
  check_case(backend::cuda, 1000, 1003, 1, 31, 31, o, 0, cuda_path::fused);
  check_case(backend::cuda, 64, 64, 33, 15, 15, o, 0, cuda_path::fused);  // a batch of small images
  check_case(backend::cuda, 77, 5, 2, 128, 3, o, 0, cuda_path::fused);   // a kernel as tall as the largest tile
  o.border = boundary::wrap;
  o.mode = output_mode::full;
  check_case(backend::cuda, 300, 257, 2, 64, 9, o, 0, cuda_path::fused);
}

TEST_CASE("GPU three-pass path: every tile size, odd pair counts, chunks, kernels beyond the fused tiles", "[conv][gpu]") {
  if (!cuda_device_available()) SKIP("no CUDA device present");
  options o;
  for (int tile : {256, 512, 1024}) {
    check_case(backend::cuda, 300, 290, 3, 5, 3, o, tile, cuda_path::three_pass);    // odd tile count
    check_case(backend::cuda, 61, 67, 1, 17, 30, o, tile, cuda_path::three_pass);    // one pair, tile b absent
  }
  check_case(backend::cuda, 700, 650, 1, 131, 129, o, 256, cuda_path::three_pass);  // 131 > 128: only 256 and up
  check_case(backend::cuda, 200, 190, 2, 200, 3, o, 0, cuda_path::three_pass);     // a kernel taller than the image
  check_case(backend::cuda, 64, 64, 9, 70, 70, o, 0);                               // automatic: not fused
  // a memory cap of one pair's workspace (staging takes half): chunks of one pair
  check_case(backend::cuda, 600, 500, 1, 33, 33, o, 256, cuda_path::three_pass,
             2 * (std::size_t(256) * 256 * 8 + 64 * 1024));
  o.border = boundary::wrap;
  o.mode = output_mode::full;
  check_case(backend::cuda, 300, 257, 2, 140, 9, o, 0, cuda_path::three_pass);
  o.mode = output_mode::valid;
  o.op = operation::correlation;
  o.border = boundary::reflect101;
  check_case(backend::cuda, 400, 300, 1, 100, 45, o, 0, cuda_path::three_pass);
}

TEST_CASE("GPU plans tuned at plan time compute the same function", "[conv][gpu]") {
  if (!cuda_device_available()) SKIP("no CUDA device present");
  options o;
  check_case(backend::cuda, 480, 640, 1, 3, 3, o, 0, cuda_path::automatic, 0, true);
  check_case(backend::cuda, 64, 64, 40, 15, 15, o, 0, cuda_path::automatic, 0, true);
  o.border = boundary::wrap;
  check_case(backend::cuda, 300, 257, 2, 70, 9, o, 0, cuda_path::automatic, 0, true);  // fused 128 or three-pass
  check_case(backend::cuda, 500, 400, 1, 130, 20, o, 0, cuda_path::automatic, 0, true);  // three-pass or multi-pass
}

TEST_CASE("GPU execute on host buffers runs in bands under a memory cap", "[conv][gpu]") {
  if (!cuda_device_available()) SKIP("no CUDA device present");
  const long long h = 301, w = 257;
  const std::size_t cap = std::size_t(w) * 4 * 2 * 40;  // about 40 rows of input and output
  for (auto mode : {output_mode::same, output_mode::full, output_mode::valid})
    for (auto border : all_borders) {
      options o;
      o.mode = mode;
      o.border = border;
      o.constant_value = -0.5f;
      check_case(backend::cuda, h, w, 2, 9, 6, o, 0, cuda_path::fused, cap);
    }
  options o;
  check_case(backend::cuda, h, w, 1, 9, 6, o, 16, cuda_path::multipass, cap + 16 * 16 * 4 * 8);
  o.border = boundary::reflect;
  check_case(backend::cuda, h, w, 2, 9, 6, o, 256, cuda_path::three_pass, 2 * (cap + 256 * 256 * 8));  // half is staging
}

namespace {

// execute() on host buffers (pageable and page-locked) against execute_device() on the same
// plan: units of whole planes tile the planes as one call does (equal results); bands of a
// plane's rows are whole tile rows, so only a band's last tile sees different padding rows
// (float rounding: rel L2 <= 1e-6, narrow types within 1).
template <typename T>
void check_host_units(long long h, long long w, int planes, int kh, int kw, int kernels, const options& o,
                      cuda_path path = cuda_path::automatic) {
  const auto seed = test::fresh_seed();
  INFO("image " << h << "x" << w << "x" << planes << ", kernel " << kh << "x" << kw << " x" << kernels << ", "
                << sizeof(T) << "-byte pixels, mode " << int(o.mode) << ", border " << int(o.border) << ", seed " << seed);
  const auto real = test::random_reals<float>(std::size_t(h * w * planes), seed);
  const auto k = test::random_reals<float>(std::size_t(kh) * kw * kernels, seed + 3);
  std::vector<T> img(real.size());
  for (std::size_t i = 0; i < img.size(); ++i)
    img[i] = std::is_same_v<T, float> ? T(real[i]) : T(std::abs(real[i]) * (sizeof(T) == 1 ? 255.f : 65535.f));
  std::vector<float> kk(k);
  if (!std::is_same_v<T, float>)  // a smoothing-like kernel keeps narrow outputs in range, mostly
    for (auto& v : kk) v = (std::abs(v) + 0.1f) / float(kh * kw);
  plan_options po;
  po.semantics = o;
  po.device = backend::cuda;
  po.path = path;
  plan p(h, w, planes, kk.data(), kernels, kh, kw, po);
  if (path != cuda_path::automatic) REQUIRE(p.path() == path);
  const std::size_t n_out = std::size_t(p.output_planes() * p.output_height() * p.output_width());
  device_buffer<T> d_in(img.size()), d_out(n_out);
  GPUCONV_CUDA(cudaMemcpy(d_in.data(), img.data(), d_in.bytes(), cudaMemcpyHostToDevice));
  p.execute_device(d_in.data(), d_out.data());
  GPUCONV_CUDA(cudaDeviceSynchronize());
  std::vector<T> ref(n_out);
  GPUCONV_CUDA(cudaMemcpy(ref.data(), d_out.data(), d_out.bytes(), cudaMemcpyDeviceToHost));

  std::vector<T> pageable(n_out, T(7));
  p.execute(img.data(), pageable.data());
  pinned_buffer pin_in, pin_out;
  T* pi = static_cast<T*>(pin_in.reserve(img.size() * sizeof(T)));
  T* po_ = static_cast<T*>(pin_out.reserve(n_out * sizeof(T)));
  std::copy(img.begin(), img.end(), pi);
  std::fill(po_, po_ + n_out, T(7));
  p.execute(pi, po_);
  const std::vector<T> pinned(po_, po_ + n_out);
  for (const std::vector<T>* got : std::initializer_list<const std::vector<T>*>{&pageable, &pinned}) {
    if constexpr (std::is_same_v<T, float>) {
      CHECK(test::relative_l2(*got, ref) <= 1e-6);
    } else {
      int worst = 0;
      for (std::size_t i = 0; i < n_out; ++i) worst = std::max(worst, std::abs(int((*got)[i]) - int(ref[i])));
      CHECK(worst <= 1);
    }
  }
  // a second call on the same plan reuses the staging
  std::vector<T> again(n_out, T(7));
  p.execute(img.data(), again.data());
  CHECK(again == pageable);
}

}  // namespace

TEST_CASE("GPU execute on host buffers: units of planes and bands, page-locked buffers, every type", "[conv][gpu]") {
  if (!cuda_device_available()) SKIP("no CUDA device present");
  options o;
  check_host_units<float>(1100, 1500, 3, 9, 9, 1, o);   // bands of a plane's rows
  check_host_units<float>(256, 256, 40, 9, 9, 1, o);    // several whole planes a unit
  check_host_units<float>(2047, 1031, 1, 31, 17, 1, o); // one plane in bands, odd sizes
  o.mode = output_mode::full;
  o.border = boundary::zero;
  check_host_units<std::uint8_t>(1100, 1500, 3, 9, 9, 2, o);  // outside rows, a bank of two
  o.mode = output_mode::valid;
  o.border = boundary::constant;
  o.constant_value = 300.f;
  check_host_units<std::uint16_t>(1100, 1500, 3, 7, 7, 1, o);
  o.mode = output_mode::same;
  o.border = boundary::wrap;
  check_host_units<std::uint8_t>(3000, 4000, 3, 9, 9, 1, o);   // a 12 MP photo's planes
  o.border = boundary::reflect;
  check_host_units<float>(2000, 2000, 1, 200, 200, 1, o, cuda_path::three_pass);
  check_host_units<float>(1500, 1200, 2, 9, 9, 1, o, cuda_path::multipass);
}

TEST_CASE("GPU convolution on larger images, chunked tiles, and the CPU backend agree", "[conv][gpu]") {
  if (!cuda_device_available()) SKIP("no CUDA device present");
  options o;
  check_case(backend::cuda, 480, 640, 1, 3, 3, o);
  check_case(backend::cuda, 1000, 1003, 1, 31, 31, o);
  check_case(backend::cuda, 100, 90, 1, 40, 7, o, 32);
  o.border = boundary::reflect;
  check_case(backend::cuda, 300, 257, 4, 15, 4, o, 16);

  // a workspace cap that forces many chunks
  const auto img = test::random_reals<float>(257 * 300, test::fresh_seed());
  const auto k = test::random_reals<float>(9 * 9, test::fresh_seed());
  plan_options po;
  po.device = backend::cuda;
  po.memory_limit = 257 * 300 * 8 + 64 * 1024;
  po.tile = 16;
  po.path = cuda_path::multipass;
  plan capped(257, 300, 1, k.data(), 9, 9, po);
  po.device = backend::cpu;
  plan cpu(257, 300, 1, k.data(), 9, 9, po);
  std::vector<float> a(257 * 300), b(257 * 300);
  capped.execute(img.data(), a.data());
  cpu.execute(img.data(), b.data());
  CHECK(test::relative_l2(a, b) <= 2 * tile_bound(cpu));
}

namespace {

// uint8/uint16 in and out: the output must be the reference rounded to nearest (ties to
// even) and saturated. The FFT's float error can move a value that lies close to a half
// step to the other side; "close" is a pointwise allowance of 2e-5 of the |k| * |x| scale
// (several times the relative error measured on these tiles, ~1e-6) plus 1e-3. Pixels
// outside that window must be exact; pixels inside it within the allowance of the reference.
template <typename T>
void check_narrow(backend device, cuda_path path, int tile) {
  const long long h = 97, w = 131;
  const int planes = 2, kh = 7, kw = 5;
  const double hi = std::is_same_v<T, std::uint8_t> ? 255 : 65535;
  const auto seed = test::fresh_seed();
  INFO("type bytes " << sizeof(T) << ", path " << int(path) << ", tile " << tile << ", seed " << seed);
  const auto noise = test::random_reals<float>(std::size_t(h * w * planes), seed);
  std::vector<T> img(noise.size());
  std::vector<float> img_f(noise.size()), img_abs(noise.size());
  for (std::size_t i = 0; i < img.size(); ++i) {
    img[i] = T(std::lround((noise[i] * 0.5 + 0.5) * hi));  // random_reals are in [-1, 1]
    img_abs[i] = img_f[i] = float(img[i]);
  }
  // a sharpening kernel (sum 1, negative lobes around a centre > 1): on noise the outputs
  // overshoot both ends and saturate, whatever the random weights
  auto k = test::random_reals<float>(std::size_t(kh) * kw, seed + 3);
  float lobes = 0;
  for (auto& v : k) lobes += (v = -0.05f * std::abs(v) - 0.005f);
  k[17] += 1.f - lobes;
  std::vector<float> k_abs(k.size());
  for (std::size_t i = 0; i < k.size(); ++i) k_abs[i] = std::abs(k[i]);
  options o;
  o.border = boundary::constant;
  o.constant_value = float(hi * 0.3) + 0.4f;  // rounded to the type, as OpenCV does
  plan_options po;
  po.semantics = o;
  po.device = device;
  po.path = path;
  po.tile = tile;
  plan p(h, w, planes, k.data(), kh, kw, po);
  std::vector<T> out(img.size(), T(77));
  p.execute(img.data(), out.data());
  o.constant_value = float(std::nearbyint(o.constant_value));
  std::vector<double> ref(out.size()), scale(out.size());
  direct_convolve(img_f.data(), h, w, planes, k.data(), kh, kw, o, ref.data());
  o.constant_value = std::abs(o.constant_value);
  direct_convolve(img_abs.data(), h, w, planes, k_abs.data(), kh, kw, o, scale.data());
  long long low = 0, high = 0, in_window = 0;
  for (std::size_t i = 0; i < out.size(); ++i) {
    const double expect = std::min(hi, std::max(0.0, std::nearbyint(ref[i])));
    low += expect == 0;
    high += expect == hi;
    const double allowance = 2e-5 * scale[i] + 1e-3;
    const double frac = ref[i] - std::floor(ref[i]);
    INFO("pixel " << i << ": got " << double(out[i]) << ", reference " << ref[i] << ", allowance " << allowance);
    if (std::abs(frac - 0.5) > allowance || ref[i] < -0.5 - allowance || ref[i] > hi + 0.5 + allowance) {
      REQUIRE(double(out[i]) == expect);
    } else {
      ++in_window;
      REQUIRE(std::abs(double(out[i]) - std::min(hi, std::max(0.0, ref[i]))) <= 0.5 + allowance);
    }
  }
  CHECK(low > 0);  // both saturation ends were exercised
  CHECK(high > 0);
  if (sizeof(T) == 1) CHECK(in_window < (long long)out.size() / 10);  // the exact check covered most pixels
}

}  // namespace

TEST_CASE("CPU convolution of uint8 and uint16 pixels rounds to nearest and saturates", "[conv]") {
  check_narrow<std::uint8_t>(backend::cpu, cuda_path::automatic, 0);
  check_narrow<std::uint16_t>(backend::cpu, cuda_path::automatic, 0);
}

TEST_CASE("GPU convolution of uint8 and uint16 pixels rounds to nearest and saturates", "[conv][gpu]") {
  if (!cuda_device_available()) SKIP("no CUDA device present");
  for (int tile : {32, 64, 128}) {
    check_narrow<std::uint8_t>(backend::cuda, cuda_path::fused, tile);
    check_narrow<std::uint16_t>(backend::cuda, cuda_path::fused, tile);
  }
  check_narrow<std::uint8_t>(backend::cuda, cuda_path::multipass, 0);
  check_narrow<std::uint16_t>(backend::cuda, cuda_path::multipass, 0);
  for (int tile : {256, 1024}) {
    check_narrow<std::uint8_t>(backend::cuda, cuda_path::three_pass, tile);
    check_narrow<std::uint16_t>(backend::cuda, cuda_path::three_pass, tile);
  }
}

namespace {

// A bank of kernels: output plane p * count + k must be input plane p convolved with kernel
// k, each checked against the direct reference with check_case's error measure.
void check_bank(backend device, cuda_path path, long long h, long long w, int planes, int count, int kh, int kw,
                const options& o, std::size_t memory_limit = 0) {
  const auto seed = test::fresh_seed();
  INFO("bank of " << count << " kernels " << kh << "x" << kw << ", image " << h << "x" << w << "x" << planes
                  << ", mode " << int(o.mode) << ", path " << int(path) << ", memory limit " << memory_limit
                  << ", seed " << seed);
  const auto img = test::random_reals<float>(std::size_t(h * w * planes), seed);
  const auto ks = test::random_reals<float>(std::size_t(count) * kh * kw, seed + 11);
  plan_options po;
  po.semantics = o;
  po.device = device;
  po.path = path;
  po.memory_limit = memory_limit;
  plan p(h, w, planes, ks.data(), count, kh, kw, po);
  REQUIRE(p.output_planes() == (long long)planes * count);
  if (path != cuda_path::automatic) REQUIRE(p.path() == path);
  const long long oh = p.output_height(), ow = p.output_width(), per = oh * ow;
  std::vector<float> out(std::size_t(per * planes * count), NAN);
  p.execute(img.data(), out.data());
  for (int k = 0; k < count; ++k) {
    std::vector<double> ref(std::size_t(per * planes));
    direct_convolve(img.data(), h, w, planes, ks.data() + std::size_t(k) * kh * kw, kh, kw, o, ref.data());
    double num = 0, den = 0;
    for (int q = 0; q < planes; ++q)
      for (long long i = 0; i < per; ++i) {
        const double got = out[std::size_t((q * count + k) * per + i)], want = ref[std::size_t(q * per + i)];
        REQUIRE(std::isfinite(got));
        num += (got - want) * (got - want);
        den += want * want;
      }
    INFO("kernel " << k << ": relative L2 error " << std::sqrt(num / den));
    CHECK(std::sqrt(num / den) <= 1e-5);
  }
}

}  // namespace

TEST_CASE("CPU convolution with a bank of kernels", "[conv]") {
  options o;
  check_bank(backend::cpu, cuda_path::automatic, 40, 33, 3, 4, 5, 5, o);
  o.mode = output_mode::full;
  o.op = operation::correlation;
  check_bank(backend::cpu, cuda_path::automatic, 17, 64, 1, 3, 8, 3, o);
}

TEST_CASE("GPU convolution with a bank of kernels: fused, three-pass, multi-pass, bands", "[conv][gpu]") {
  if (!cuda_device_available()) SKIP("no CUDA device present");
  options o;
  for (auto path : {cuda_path::fused, cuda_path::three_pass, cuda_path::multipass}) {
    check_bank(backend::cuda, path, 64, 64, 5, 3, 7, 7, o);    // small images, odd tile counts per kernel
    check_bank(backend::cuda, path, 100, 90, 1, 4, 15, 9, o);  // one image, several kernels
    o.mode = output_mode::valid;
    check_bank(backend::cuda, path, 61, 70, 2, 2, 5, 3, o);
    o.mode = output_mode::same;
  }
  o.border = boundary::reflect;
  check_bank(backend::cuda, cuda_path::fused, 203, 150, 2, 3, 9, 9, o, std::size_t(150) * 4 * 4 * 40);  // bands
  // three-pass under a cap of three pairs' work: half of it staging (bands), chunks of one pair
  check_bank(backend::cuda, cuda_path::three_pass, 400, 350, 1, 3, 41, 41, o, 3 * 256 * 256 * 8);
}

TEST_CASE("conv plan rejects bad input with the value named", "[conv]") {
  const float k3[9] = {0, 1, 0, 1, -4, 1, 0, 1, 0};
  plan_options po;
  po.device = backend::cpu;
  CHECK_THROWS_AS(plan(0, 5, 1, k3, 3, 3, po), std::invalid_argument);
  CHECK_THROWS_AS(plan(5, 5, 0, k3, 3, 3, po), std::invalid_argument);
  CHECK_THROWS_AS(plan(5, 5, 1, nullptr, 3, 3, po), std::invalid_argument);
  const float bad[4] = {1, NAN, 0, 1};
  CHECK_THROWS_AS(plan(5, 5, 1, bad, 2, 2, po), std::invalid_argument);
  po.semantics.mode = output_mode::valid;
  CHECK_THROWS_AS(plan(2, 5, 1, k3, 3, 3, po), std::invalid_argument);
  po.semantics.mode = output_mode::same;
  plan ok(5, 5, 1, k3, 3, 3, po);
  std::vector<float> out(25);
  CHECK_THROWS_AS(ok.execute(static_cast<const float*>(nullptr), out.data()), std::invalid_argument);
  CHECK_THROWS_AS(ok.execute_device(out.data(), out.data()), std::invalid_argument);  // CPU backend
  CHECK_THROWS_AS(plan(5, 5, 1, k3, 0, 3, 3, po), std::invalid_argument);  // an empty bank
  // the fused path cannot hold a kernel wider than its largest tile
  CHECK_THROWS_AS(choose_cuda_tiling(50, 200, 1, 1, 130, cuda_path::fused), std::invalid_argument);
  // nor the three-pass path one wider than 1024
  CHECK_THROWS_AS(choose_cuda_tiling(50, 2000, 1, 1, 1030, cuda_path::three_pass), std::invalid_argument);
  CHECK(choose_cuda_tiling(50, 2000, 1, 1, 1030, cuda_path::automatic).path == cuda_path::multipass);
  CHECK(choose_cuda_tiling(500, 500, 1, 63, 63, cuda_path::automatic).path != cuda_path::multipass);
}

TEST_CASE("GPU plans on a chosen device (plan_options::cuda_device) leave the caller's device alone", "[conv][gpu]") {
  if (!cuda_device_available()) SKIP("no CUDA device present");
  int count = 0;
  GPUCONV_CUDA(cudaGetDeviceCount(&count));
  const auto img = test::random_reals<float>(300 * 200 * 2, test::fresh_seed());
  const auto k = test::random_reals<float>(7 * 5, test::fresh_seed());
  plan_options po;
  po.device = backend::cuda;
  plan current(300, 200, 2, k.data(), 7, 5, po);
  std::vector<float> a(img.size()), b(img.size());
  current.execute(img.data(), a.data());
  for (int d = 0; d < count; ++d) {
    INFO("device " << d << " of " << count);
    GPUCONV_CUDA(cudaSetDevice(0));
    po.cuda_device = d;
    {
      plan on(300, 200, 2, k.data(), 7, 5, po);
      int now = -1;
      GPUCONV_CUDA(cudaGetDevice(&now));
      CHECK(now == 0);  // built on device d, the caller's device put back
      on.execute(img.data(), b.data());
      GPUCONV_CUDA(cudaGetDevice(&now));
      CHECK(now == 0);
      CHECK(test::relative_l2(b, a) <= 1e-6);
    }
    int now = -1;
    GPUCONV_CUDA(cudaGetDevice(&now));
    CHECK(now == 0);  // and after it is gone
  }
  po.cuda_device = count;
  try {
    plan bad(300, 200, 2, k.data(), 7, 5, po);
    FAIL("a plan on a device that is not there was built");
  } catch (const std::invalid_argument& e) {
    CHECK(std::string(e.what()).find("cuda_device " + std::to_string(count)) != std::string::npos);
  }
}
