// plan3d (volume convolution) against the direct double-precision reference
// (conv/reference3d.hpp), every mode x operation x boundary, on fresh random data; the CPU
// backend's direct and FFT methods here, the CUDA backend under [gpu] (bands, batches,
// narrow types, execute_device).
// Error measure as in test_conv_plan.cpp: ||out - ref|| / || |k| * |x| || (the direct sum of
// the magnitudes), since an FFT convolution's error follows the magnitudes the sums are
// formed from, not the result, which can cancel. Bound: 4 x the FFT bound of the tile's
// voxels (a forward and an inverse 3D transform and the multiply), ~2e-5 for 32^3 tiles;
// the direct method sums in float and stays well inside it.
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <type_traits>

#include "conv/method.hpp"
#include "conv/plan3d.hpp"
#include "conv/reference3d.hpp"
#include "conv/slices3d.hpp"
#include "fft/device/buffer.hpp"
#include "fft/device/cuda_check.hpp"
#include "support/reference.hpp"

using namespace gpuconv;
using namespace gpuconv::conv;

namespace {

struct shape3 {
  long long d, h, w;
  int volumes, kd, kh, kw;
};

double tile_bound(const plan3d& p) {
  const auto t = p.tile();
  return 4 * test::fft_error_bound<float>(fft::log2_exact(t.tile_d) + fft::log2_exact(t.tile_h) +
                                          fft::log2_exact(t.tile_w), 2);
}

// The reference and the magnitude scale of one case.
struct reference_of {
  std::vector<double> ref, scale;
  reference_of(const std::vector<float>& vol, const std::vector<float>& k, const shape3& s, const options& o) {
    const geometry3d g = make_geometry3d(s.d, s.h, s.w, s.kd, s.kh, s.kw, o.mode);
    const std::size_t n = std::size_t(g.out_d * g.out_h * g.out_w * s.volumes);
    ref.resize(n);
    scale.resize(n);
    direct_convolve3d(vol.data(), s.d, s.h, s.w, s.volumes, k.data(), s.kd, s.kh, s.kw, o, ref.data());
    std::vector<float> vol_abs(vol.size()), k_abs(k.size());
    for (std::size_t i = 0; i < vol.size(); ++i) vol_abs[i] = std::abs(vol[i]);
    for (std::size_t i = 0; i < k.size(); ++i) k_abs[i] = std::abs(k[i]);
    options o_abs = o;
    o_abs.constant_value = std::abs(o.constant_value);
    direct_convolve3d(vol_abs.data(), s.d, s.h, s.w, s.volumes, k_abs.data(), s.kd, s.kh, s.kw, o_abs, scale.data());
  }
  double error(const std::vector<float>& out) const {
    long double num = 0, den = 0;
    for (std::size_t i = 0; i < ref.size(); ++i) {
      num += (long double)(out[i] - ref[i]) * (out[i] - ref[i]);
      den += (long double)scale[i] * scale[i];
    }
    return den == 0 ? (num == 0 ? 0.0 : INFINITY) : (double)std::sqrt(num / den);
  }
};

plan_options make_options(backend device, const options& o, cpu_method m = cpu_method::automatic, int tile = 0,
                          std::size_t memory_limit = 0) {
  plan_options po;
  po.semantics = o;
  po.device = device;
  po.cpu = m;
  po.tile = tile;
  po.memory_limit = memory_limit;
  return po;
}

// A rank-1 kernel: the product of three random 1D kernels (separable3d.hpp's method).
std::vector<float> rank1_kernel(const shape3& s, std::uint64_t seed, float lift = 0.f) {
  const auto a = test::random_reals<float>(std::size_t(s.kd), seed), b = test::random_reals<float>(std::size_t(s.kh), seed + 1),
             c = test::random_reals<float>(std::size_t(s.kw), seed + 2);
  std::vector<float> k(std::size_t(s.kd) * s.kh * s.kw);
  for (int l = 0; l < s.kd; ++l)
    for (int i = 0; i < s.kh; ++i)
      for (int j = 0; j < s.kw; ++j)
        k[(std::size_t(l) * s.kh + i) * s.kw + j] = (a[l] + lift) * (b[i] + lift) * (c[j] + lift);
  return k;
}

// One float case on host buffers; rank1: a rank-1 kernel, and the method must be separable.
void check_case(const plan_options& po, const shape3& s, bool rank1 = false) {
  const auto seed = test::fresh_seed();
  const options& o = po.semantics;
  INFO("volume " << s.d << "x" << s.h << "x" << s.w << " x" << s.volumes << ", kernel " << s.kd << "x" << s.kh << "x"
                 << s.kw << ", mode " << int(o.mode) << ", op " << int(o.op) << ", border " << int(o.border)
                 << ", cpu method " << int(po.cpu) << ", tile " << po.tile << ", memory limit " << po.memory_limit
                 << ", seed " << seed);
  const auto vol = test::random_reals<float>(std::size_t(s.d * s.h * s.w * s.volumes), seed);
  const auto k = rank1 ? rank1_kernel(s, seed + 7) : test::random_reals<float>(std::size_t(s.kd) * s.kh * s.kw, seed + 7);
  plan3d p(s.d, s.h, s.w, s.volumes, k.data(), s.kd, s.kh, s.kw, po);
  REQUIRE(p.selected_backend() == po.device);
  CHECK((p.method() == cpu_method::separable) == rank1);
  std::vector<float> out(std::size_t(p.output_depth() * p.output_height() * p.output_width() * s.volumes), NAN);
  p.execute(vol.data(), out.data());
  const reference_of r(vol, k, s, o);
  const double err = r.error(out);
  INFO("tile " << p.tile().tile_d << "x" << p.tile().tile_h << "x" << p.tile().tile_w << ", error " << err);
  // the separable passes sum at most a few taps a pass in float
  CHECK(err <= (rank1 ? 1e-6 : tile_bound(p)));
}

const options every_semantics() {
  options o;
  o.mode = GENERATE(output_mode::same, output_mode::full, output_mode::valid);
  o.op = GENERATE(operation::convolution, operation::correlation);
  o.border = GENERATE(boundary::zero, boundary::constant, boundary::replicate, boundary::reflect,
                      boundary::reflect101, boundary::wrap);
  o.constant_value = 0.75f;
  return o;
}

// Narrow voxels: the float result of the same plan on the widened volume, rounded half to
// even and saturated, except where the float sum lies within 1e-3 of a rounding tie.
template <typename T>
void check_narrow(const plan_options& po, const shape3& s, bool rank1 = false) {
  const auto seed = test::fresh_seed();
  INFO("narrow " << sizeof(T) << " bytes, seed " << seed);
  const auto r = test::random_reals<float>(std::size_t(s.d * s.h * s.w * s.volumes), seed);
  const float hi = std::is_same_v<T, std::uint8_t> ? 255.f : 65535.f;
  std::vector<T> vol(r.size());
  std::vector<float> wide(r.size());
  for (std::size_t i = 0; i < r.size(); ++i) {
    vol[i] = T(std::lround((r[i] + 1) * 0.5f * hi));
    wide[i] = float(vol[i]);
  }
  std::vector<float> k(std::size_t(s.kd) * s.kh * s.kw, 0.f);
  const auto kr = test::random_reals<float>(k.size(), seed + 3);
  for (std::size_t i = 0; i < k.size(); ++i) k[i] = (kr[i] + 1.2f) / float(k.size());  // positive, sum ~1.2: some saturate
  if (rank1) {  // positive factors, sum ~1.3
    k = rank1_kernel(s, seed + 3, 1.1f);
    for (auto& v : k) v /= float(k.size());
  }
  plan3d p(s.d, s.h, s.w, s.volumes, k.data(), s.kd, s.kh, s.kw, po);
  CHECK((p.method() == cpu_method::separable) == rank1);
  // the float twin: the constant as the narrow call sees it (saturated to the type)
  plan_options pf = po;
  pf.semantics.constant_value = std::min(hi, std::max(0.f, std::nearbyint(po.semantics.constant_value)));
  plan3d p_float(s.d, s.h, s.w, s.volumes, k.data(), s.kd, s.kh, s.kw, pf);
  const std::size_t n = std::size_t(p.output_depth() * p.output_height() * p.output_width() * s.volumes);
  std::vector<T> out(n);
  std::vector<float> outf(n);
  p.execute(vol.data(), out.data());
  p_float.execute(wide.data(), outf.data());
  long long bad = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const float f = outf[i];
    const float frac = f - std::floor(f);
    if (std::abs(frac - 0.5f) < 1e-3f) continue;
    const float expect = std::min(hi, std::max(0.f, std::nearbyint(f)));
    if (float(out[i]) != expect) ++bad;
  }
  CHECK(bad == 0);
}

}  // namespace

TEST_CASE("plan3d CPU direct matches the direct reference for every mode, operation and boundary", "[conv][3d]") {
  const options o = every_semantics();
  const shape3 s = GENERATE(shape3{7, 9, 11, 1, 3, 4, 5}, shape3{5, 6, 4, 2, 2, 3, 1}, shape3{1, 5, 7, 1, 1, 3, 3});
  check_case(make_options(backend::cpu, o, cpu_method::direct), s);
}

TEST_CASE("plan3d CPU FFT tiles match the direct reference for every mode, operation and boundary", "[conv][3d]") {
  const options o = every_semantics();
  const shape3 s = GENERATE(shape3{9, 13, 18, 1, 3, 4, 5}, shape3{5, 6, 4, 2, 2, 3, 1});
  check_case(make_options(backend::cpu, o, cpu_method::fft), s);
}

TEST_CASE("plan3d CPU FFT with several tiles per axis and batches", "[conv][3d]") {
  options o;
  o.border = GENERATE(boundary::reflect101, boundary::zero, boundary::wrap);
  o.mode = GENERATE(output_mode::same, output_mode::full);
  // 16^3 tiles forced: 40 x 37 x 35 with a 5 x 7 x 6 kernel needs 4 x 4 x 4 tiles per volume
  check_case(make_options(backend::cpu, o, cpu_method::fft, 16), shape3{40, 37, 35, 2, 5, 7, 6});
}

TEST_CASE("plan3d CPU narrow voxels are the float result rounded and saturated", "[conv][3d]") {
  options o;
  o.border = boundary::constant;
  o.constant_value = 300.f;  // saturated to 255 for uint8, as the 2D plan does
  const cpu_method m = GENERATE(cpu_method::direct, cpu_method::fft);
  const auto po = make_options(backend::cpu, o, m);
  check_narrow<std::uint8_t>(po, shape3{6, 7, 9, 2, 3, 3, 3});
  check_narrow<std::uint16_t>(po, shape3{6, 7, 9, 1, 2, 3, 4});
}

TEST_CASE("plan3d CPU separable matches the direct reference for every mode, operation and boundary", "[conv][3d]") {
  const options o = every_semantics();
  const shape3 s = GENERATE(shape3{7, 9, 11, 2, 3, 4, 5}, shape3{5, 6, 4, 1, 2, 3, 1}, shape3{1, 5, 7, 1, 1, 3, 3},
                            shape3{8, 7, 6, 1, 7, 6, 5});
  // automatic takes it for a rank-1 kernel; forced likewise
  check_case(make_options(backend::cpu, o, GENERATE(cpu_method::automatic, cpu_method::separable)), s, true);
}

TEST_CASE("plan3d CPU separable narrow voxels are the float result rounded and saturated", "[conv][3d]") {
  options o;
  o.border = GENERATE(boundary::constant, boundary::reflect);
  o.constant_value = 300.f;
  const auto po = make_options(backend::cpu, o);
  check_narrow<std::uint8_t>(po, shape3{6, 7, 9, 2, 3, 3, 3}, true);
  check_narrow<std::uint16_t>(po, shape3{6, 7, 9, 1, 2, 3, 4}, true);
}

TEST_CASE("factor_rank1_3d finds products of 1D kernels and nothing else", "[conv][3d]") {
  const shape3 s{1, 1, 1, 1, 5, 4, 3};
  auto k = rank1_kernel(s, 5);
  const rank1_3d_factors f = factor_rank1_3d(k.data(), 5, 4, 3);
  REQUIRE(f.found());
  REQUIRE(f.depth.size() == 5);
  REQUIRE(f.column.size() == 4);
  REQUIRE(f.row.size() == 3);
  double peak = 0, worst = 0;
  for (float v : k) peak = std::max(peak, double(std::abs(v)));
  for (int l = 0; l < 5; ++l)
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 3; ++j)
        worst = std::max(worst, std::abs(double(f.depth[l]) * f.column[i] * f.row[j] - k[(l * 4 + i) * 3 + j]));
  CHECK(worst <= 1e-6 * peak);
  // one entry off by 1e-3 of the peak: not rank-1
  k[17] += float(1e-3 * peak);
  CHECK_FALSE(factor_rank1_3d(k.data(), 5, 4, 3).found());
  // a rank-2 sum; an all-zero kernel
  auto k2 = rank1_kernel(s, 9);
  for (std::size_t i = 0; i < k2.size(); ++i) k2[i] += rank1_kernel(s, 21)[i];
  CHECK_FALSE(factor_rank1_3d(k2.data(), 5, 4, 3).found());
  const std::vector<float> zero(60, 0.f);
  CHECK_FALSE(factor_rank1_3d(zero.data(), 5, 4, 3).found());
  // 1 x 1 x 1 and single-axis kernels are rank-1
  const float one = 2.5f;
  CHECK(factor_rank1_3d(&one, 1, 1, 1).found());
  CHECK(factor_rank1_3d(k2.data(), 1, 1, 7).found());
}

TEST_CASE("plan3d separable forced on a kernel that is not rank-1 is refused, named", "[conv][3d]") {
  const auto k = test::random_reals<float>(27, 4);
  plan_options po;
  po.device = backend::cpu;
  po.cpu = cpu_method::separable;
  try {
    plan3d(6, 6, 6, 1, k.data(), 3, 3, 3, po);
    FAIL("no exception");
  } catch (const std::invalid_argument& e) {
    CHECK(std::string(e.what()).find("rank-1") != std::string::npos);
    CHECK(std::string(e.what()).find("3 x 3 x 3") != std::string::npos);
  }
  // a rank-1 kernel with another method forced runs that method
  const auto r = rank1_kernel(shape3{1, 1, 1, 1, 3, 3, 3}, 8);
  po.cpu = cpu_method::fft;
  CHECK(plan3d(6, 6, 6, 1, r.data(), 3, 3, 3, po).method() == cpu_method::fft);
  po.cpu = cpu_method::direct;
  CHECK(plan3d(6, 6, 6, 1, r.data(), 3, 3, 3, po).method() == cpu_method::direct);
}

TEST_CASE("cpu3d_estimated_seconds: the CPU backend's expected time for --device auto", "[conv][3d]") {
  // a general 31^3 PSF on 128 x 512^2 with 16 threads: fitted to 0.17 s of tiles + 0.02 s
  // (H100 host, session 35); one thread: 16 rounds where 16 threads take one
  const auto k = test::random_reals<float>(31 * 31 * 31, 3);
  plan_options o;
  o.threads = 16;
  const double t16 = cpu3d_estimated_seconds(128, 512, 512, 1, k.data(), 31, 31, 31, o);
  CHECK(t16 > 0.1);
  CHECK(t16 < 0.4);
  o.threads = 1;
  CHECK(cpu3d_estimated_seconds(128, 512, 512, 1, k.data(), 31, 31, 31, o) > 10 * t16);
  o.threads = 16;
  CHECK(cpu3d_estimated_seconds(256, 512, 512, 1, k.data(), 31, 31, 31, o) > 1.5 * t16);
  CHECK(cpu3d_estimated_seconds(128, 512, 512, 2, k.data(), 31, 31, 31, o) > 1.5 * t16);
  // a rank-1 kernel: the separable method's rate per voxel
  std::vector<float> g(5 * 5 * 5);
  for (int z = 0; z < 5; ++z)
    for (int y = 0; y < 5; ++y)
      for (int x = 0; x < 5; ++x) g[(z * 5 + y) * 5 + x] = float((1 + z) * (2 + y % 3) * (3 - x % 2));
  const double sep = cpu3d_estimated_seconds(128, 512, 512, 1, g.data(), 5, 5, 5, o);
  CHECK(std::abs(sep - 128.0 * 512 * 512 * 80e-9 / 16) <= 1e-12);
  // the constructor's checks
  options v;
  v.mode = output_mode::valid;
  o.semantics = v;
  CHECK_THROWS_AS(cpu3d_estimated_seconds(8, 8, 8, 1, k.data(), 31, 31, 31, o), std::invalid_argument);
}

TEST_CASE("plan3d rejects bad shapes and kernels with the offending value", "[conv][3d]") {
  const std::vector<float> k(27, 1.f);
  CHECK_THROWS_AS(plan3d(0, 4, 4, 1, k.data(), 3, 3, 3), std::invalid_argument);
  CHECK_THROWS_AS(plan3d(4, 4, 4, 0, k.data(), 3, 3, 3), std::invalid_argument);
  CHECK_THROWS_AS(plan3d(4, 4, 4, 1, nullptr, 3, 3, 3), std::invalid_argument);
  CHECK_THROWS_AS(plan3d(4, 4, 4, 1, k.data(), 0, 3, 3), std::invalid_argument);
  plan_options po;
  po.semantics.mode = output_mode::valid;
  CHECK_THROWS_AS(plan3d(2, 4, 4, 1, k.data(), 3, 3, 3, po), std::invalid_argument);
  std::vector<float> bad = k;
  bad[13] = NAN;
  try {
    plan3d(4, 4, 4, 1, bad.data(), 3, 3, 3);
    FAIL("no exception");
  } catch (const std::invalid_argument& e) {
    CHECK(std::string(e.what()).find("slice 1, row 1, col 1") != std::string::npos);
  }
  po.device = backend::cpu;
  po.semantics.mode = output_mode::same;
  plan3d p(4, 5, 6, 1, k.data(), 3, 3, 3, po);
  CHECK_THROWS_AS(p.execute_device(k.data(), (float*)nullptr), std::invalid_argument);
}

// ---- CUDA backend -------------------------------------------------------------------------

namespace {

// execute_device's result against execute's on the same volumes (rel L2).
double device_equals_host(plan3d& p, const std::vector<float>& vol, int volumes) {
  const std::size_t n = std::size_t(p.output_depth() * p.output_height() * p.output_width() * volumes);
  std::vector<float> host_out(n), dev_out(n, NAN);
  p.execute(vol.data(), host_out.data());
  device_buffer<float> d_in(vol.size()), d_out(n);
  GPUCONV_CUDA(cudaMemcpy(d_in.data(), vol.data(), d_in.bytes(), cudaMemcpyHostToDevice));
  p.execute_device(d_in.data(), d_out.data());
  GPUCONV_CUDA(cudaMemcpy(dev_out.data(), d_out.data(), d_out.bytes(), cudaMemcpyDeviceToHost));
  return test::relative_l2(dev_out, host_out);
}

}  // namespace

TEST_CASE("plan3d CUDA matches the direct reference for every mode, operation and boundary", "[conv][3d][gpu]") {
  if (!cuda_device_available()) SKIP("no CUDA device present");
  const options o = every_semantics();
  const shape3 s = GENERATE(shape3{9, 13, 18, 1, 3, 4, 5}, shape3{5, 6, 4, 2, 2, 3, 1});
  check_case(make_options(backend::cuda, o), s);
}

// The route a plan with these options takes on a shape.
cuda_path path_of(const plan_options& po, const shape3& s) {
  const auto k = test::random_reals<float>(std::size_t(s.kd) * s.kh * s.kw, 5);
  return plan3d(s.d, s.h, s.w, s.volumes, k.data(), s.kd, s.kh, s.kw, po).path();
}

// tile 16: the multipass route (fft::real_3d_plan); 32: the slice path (slices3d.hpp)
TEST_CASE("plan3d CUDA with several tiles per axis, batches and bands", "[conv][3d][gpu]") {
  if (!cuda_device_available()) SKIP("no CUDA device present");
  options o;
  o.border = GENERATE(boundary::reflect101, boundary::zero, boundary::wrap, boundary::constant);
  o.mode = GENERATE(output_mode::same, output_mode::full, output_mode::valid);
  o.constant_value = -0.5f;
  const int tile = GENERATE(16, 32);
  // memory limit 0: the whole volume at once; 1 MB: chunks (14 tiles of 16^3, or two pairs of
  // 32^3 tiles) and bands (three tile layers of 16^3, 36 output slices; one of 32^3, 28)
  const std::size_t limit = GENERATE(std::size_t(0), std::size_t(1) << 20);
  const auto po = make_options(backend::cuda, o, cpu_method::automatic, tile, limit);
  const shape3 s{70, 37, 35, 2, 5, 7, 6};
  REQUIRE(path_of(po, s) == (tile == 16 ? cuda_path::multipass : cuda_path::fused));
  check_case(po, s);
}

TEST_CASE("plan3d CUDA narrow voxels are the float result rounded and saturated", "[conv][3d][gpu]") {
  if (!cuda_device_available()) SKIP("no CUDA device present");
  options o;
  o.border = boundary::constant;
  o.constant_value = 300.f;
  const int tile = GENERATE(16, 32);  // the multipass route, the slice path
  // 1 MB: the volumes and outputs (768 KB) exceed what the workspace leaves: bands
  const std::size_t limit = GENERATE(std::size_t(0), std::size_t(1) << 20);
  const auto po = make_options(backend::cuda, o, cpu_method::automatic, tile, limit);
  check_narrow<std::uint8_t>(po, shape3{120, 40, 40, 2, 3, 3, 3});
  check_narrow<std::uint16_t>(po, shape3{120, 40, 40, 1, 2, 3, 4});
}

TEST_CASE("plan3d CUDA separable matches the direct reference for every mode, operation and boundary", "[conv][3d][gpu]") {
  if (!cuda_device_available()) SKIP("no CUDA device present");
  const options o = every_semantics();
  const shape3 s = GENERATE(shape3{9, 13, 18, 2, 3, 4, 5}, shape3{5, 6, 4, 1, 2, 3, 1}, shape3{8, 7, 6, 1, 7, 6, 5});
  check_case(make_options(backend::cuda, o), s, true);
}

TEST_CASE("plan3d CUDA separable in bands, narrow voxels, and execute_device", "[conv][3d][gpu]") {
  if (!cuda_device_available()) SKIP("no CUDA device present");
  options o;
  o.border = GENERATE(boundary::reflect101, boundary::zero, boundary::wrap, boundary::constant);
  o.mode = GENERATE(output_mode::same, output_mode::full, output_mode::valid);
  o.constant_value = -0.5f;
  // 0: the whole batch at once; 1 MB: bands of ~10 output slices; 100 KB: one or two
  const std::size_t limit = GENERATE(std::size_t(0), std::size_t(1) << 20, std::size_t(100) << 10);
  const shape3 s{70, 37, 35, 2, 5, 7, 6};
  check_case(make_options(backend::cuda, o, cpu_method::automatic, 0, limit), s, true);
  // execute_device (bands on the device under the limit) equals execute
  const auto vol = test::random_reals<float>(std::size_t(s.d * s.h * s.w * s.volumes), 31);
  const auto k = rank1_kernel(s, 32);
  plan3d p(s.d, s.h, s.w, s.volumes, k.data(), s.kd, s.kh, s.kw, make_options(backend::cuda, o, cpu_method::automatic, 0, limit));
  REQUIRE(p.method() == cpu_method::separable);
  CHECK(device_equals_host(p, vol, s.volumes) <= 1e-6);
  if (limit == 0) {
    o.constant_value = 300.f;
    const auto po = make_options(backend::cuda, o);
    check_narrow<std::uint8_t>(po, shape3{20, 17, 19, 2, 3, 3, 3}, true);
    check_narrow<std::uint16_t>(po, shape3{20, 17, 19, 1, 2, 3, 4}, true);
  }
}

TEST_CASE("plan3d CUDA separable gives the CPU backend's result", "[conv][3d][gpu]") {
  if (!cuda_device_available()) SKIP("no CUDA device present");
  const shape3 s{40, 64, 48, 1, 9, 11, 13};
  const auto vol = test::random_reals<float>(std::size_t(s.d * s.h * s.w), 41);
  const auto k = rank1_kernel(s, 42);
  options o;
  o.border = boundary::reflect101;
  plan3d gpu(s.d, s.h, s.w, 1, k.data(), s.kd, s.kh, s.kw, make_options(backend::cuda, o));
  plan3d cpu(s.d, s.h, s.w, 1, k.data(), s.kd, s.kh, s.kw, make_options(backend::cpu, o));
  REQUIRE(gpu.method() == cpu_method::separable);
  REQUIRE(cpu.method() == cpu_method::separable);
  std::vector<float> a(vol.size()), b(vol.size());
  gpu.execute(vol.data(), a.data());
  cpu.execute(vol.data(), b.data());
  CHECK(test::relative_l2(a, b) <= 1e-6);
}

TEST_CASE("plan3d CUDA execute_device equals execute", "[conv][3d][gpu]") {
  if (!cuda_device_available()) SKIP("no CUDA device present");
  const shape3 s{20, 33, 30, 2, 5, 5, 5};
  const auto vol = test::random_reals<float>(std::size_t(s.d * s.h * s.w * s.volumes), 11);
  const auto k = test::random_reals<float>(125, 12);
  plan3d p(s.d, s.h, s.w, s.volumes, k.data(), s.kd, s.kh, s.kw, make_options(backend::cuda, options{}));
  CHECK(device_equals_host(p, vol, s.volumes) <= 1e-6);
}

// ---- the slice path (conv/slices3d.hpp): tiles whose slices are squares of 32, 64 or 128 ----
// (and the several-tiles, bands and narrow cases above with tile 32)

TEST_CASE("plan3d CUDA slice path matches the direct reference for every mode, operation and boundary", "[conv][3d][gpu]") {
  if (!cuda_device_available()) SKIP("no CUDA device present");
  const options o = every_semantics();
  // 32^3 tiles: several along H and W, a kernel of one and of even taps
  const shape3 s = GENERATE(shape3{9, 40, 37, 1, 3, 4, 5}, shape3{5, 33, 30, 3, 2, 3, 1});
  const auto po = make_options(backend::cuda, o, cpu_method::automatic, 32);
  REQUIRE(path_of(po, s) == cuda_path::fused);
  check_case(po, s);
}

TEST_CASE("plan3d CUDA slice path on 64 and 128 slices and on the automatic tiles", "[conv][3d][gpu]") {
  if (!cuda_device_available()) SKIP("no CUDA device present");
  options o;
  o.border = GENERATE(boundary::reflect101, boundary::constant);
  o.mode = GENERATE(output_mode::same, output_mode::valid);
  o.op = GENERATE(operation::convolution, operation::correlation);
  o.constant_value = 0.25f;
  // tile 0: the automatic choice, 48 x 64 x 64 for the first shape, 16 x 32 x 32 for the second
  const auto c = GENERATE(std::make_pair(64, shape3{20, 70, 75, 1, 7, 9, 5}), std::make_pair(128, shape3{10, 130, 140, 1, 5, 5, 4}),
                          std::make_pair(0, shape3{40, 100, 100, 1, 9, 9, 9}), std::make_pair(0, shape3{16, 200, 200, 1, 5, 5, 5}));
  const auto po = make_options(backend::cuda, o, cpu_method::automatic, c.first);
  REQUIRE(path_of(po, c.second) == cuda_path::fused);
  check_case(po, c.second);
}

// Tile depths of 3 or 5 times a power of two (the pass along D's mixed-radix transforms): every
// compiled depth chosen by the automatic tiles ('same'), with bands (4 MB: one 160-deep tile pair a
// chunk, each volume a band) and narrow voxels on one of them.
TEST_CASE("plan3d CUDA slice path with mixed tile depths", "[conv][3d][gpu]") {
  if (!cuda_device_available()) SKIP("no CUDA device present");
  options o;
  o.border = GENERATE(boundary::reflect101, boundary::constant, boundary::wrap);
  o.op = GENERATE(operation::convolution, operation::correlation);
  o.mode = GENERATE(output_mode::same, output_mode::valid);
  o.constant_value = 0.25f;
  struct mixed_case {
    int depth;
    shape3 s;
    std::size_t limit;
  };
  const auto c = GENERATE(mixed_case{48, {40, 100, 100, 1, 9, 9, 9}, 0}, mixed_case{80, {70, 37, 35, 2, 5, 5, 5}, 0},
                          mixed_case{96, {170, 40, 40, 1, 11, 11, 11}, 0}, mixed_case{160, {150, 40, 40, 1, 11, 11, 11}, 0},
                          mixed_case{160, {150, 40, 40, 2, 11, 11, 11}, std::size_t(4) << 20},
                          mixed_case{192, {185, 40, 40, 1, 7, 7, 7}, 0}, mixed_case{320, {310, 36, 36, 1, 7, 7, 7}, 0});
  const auto po = make_options(backend::cuda, o, cpu_method::automatic, 0, c.limit);
  const auto k = test::random_reals<float>(std::size_t(c.s.kd) * c.s.kh * c.s.kw, 5);
  const plan3d p(c.s.d, c.s.h, c.s.w, c.s.volumes, k.data(), c.s.kd, c.s.kh, c.s.kw, po);
  REQUIRE(p.path() == cuda_path::fused);
  // the depths above are 'same''s (a 'valid' output is shorter: its own, often mixed too)
  if (o.mode == output_mode::same) REQUIRE(p.tile().tile_d == c.depth);
  check_case(po, c.s);
  if (c.depth == 80 && o.border == boundary::constant && o.mode == output_mode::same) {
    check_narrow<std::uint8_t>(po, c.s);
    check_narrow<std::uint16_t>(po, c.s);
  }
}

// Slices of 160 (5 x 32: slices3d.cu's mixed-side kernels, the slice held in shared memory and
// each line's transform exchanging through its own elements): forced 160^3 tiles through every
// mode x operation x boundary on shapes of 1..4 tiles a plane (an odd count: a pair's second
// tile absent), two volumes, the automatic choice, a cap of one tile pair a chunk, bands over D,
// narrow voxels.
// One test case a shape, so that each runs under compute-sanitizer racecheck within a call.
static void check_slices160(const shape3& s) {
  if (!cuda_device_available()) SKIP("no CUDA device present");
  const options o = every_semantics();
  const auto po = make_options(backend::cuda, o, cpu_method::automatic, 160);
  {
    const auto k = test::random_reals<float>(std::size_t(s.kd) * s.kh * s.kw, 3);
    const plan3d p(s.d, s.h, s.w, s.volumes, k.data(), s.kd, s.kh, s.kw, po);
    REQUIRE(p.path() == cuda_path::fused);
    REQUIRE(p.tile().tile_h == 160);
    REQUIRE(p.tile().tile_w == 160);
  }
  check_case(po, s);
}

TEST_CASE("plan3d CUDA slice path on slices of 160: 2 x 2 tiles a plane, two volumes", "[conv][3d][gpu]") {
  check_slices160(shape3{6, 300, 290, 2, 3, 5, 7});
}

TEST_CASE("plan3d CUDA slice path on slices of 160: 3 x 1 tiles a plane (a pair's second tile absent)", "[conv][3d][gpu]") {
  check_slices160(shape3{5, 400, 150, 1, 4, 3, 2});
}

TEST_CASE("plan3d CUDA slice path on slices of 160: 2 x 1 tiles a plane, a kernel of one", "[conv][3d][gpu]") {
  check_slices160(shape3{3, 161, 160, 1, 1, 1, 1});
}

TEST_CASE("plan3d CUDA slice path on slices of 160: the automatic tiles, a chunk a pair, bands, narrow voxels", "[conv][3d][gpu]") {
  if (!cuda_device_available()) SKIP("no CUDA device present");
  options o;
  o.border = GENERATE(boundary::reflect101, boundary::constant);
  o.op = GENERATE(operation::convolution, operation::correlation);
  o.constant_value = 0.25f;
  // the automatic choice: 160 x 160 slices for this volume ('same'; 128-slices need 2 x 2)
  const shape3 a{16, 145, 150, 1, 3, 5, 5};
  const auto k = test::random_reals<float>(std::size_t(a.kd) * a.kh * a.kw, 4);
  const auto po = make_options(backend::cuda, o);
  const plan3d p(a.d, a.h, a.w, a.volumes, k.data(), a.kd, a.kh, a.kw, po);
  REQUIRE(p.path() == cuda_path::fused);
  REQUIRE(p.tile().tile_h == 160);
  check_case(po, a);
  // a memory cap of one 160^3 tile pair a chunk (33 MB a pair): four chunks
  const shape3 b{6, 300, 290, 2, 3, 5, 7};
  const auto capped = make_options(backend::cuda, o, cpu_method::automatic, 160, std::size_t(80) << 20);
  check_case(capped, b);
  check_narrow<std::uint8_t>(make_options(backend::cuda, o, cpu_method::automatic, 160), b);
  check_narrow<std::uint16_t>(make_options(backend::cuda, o, cpu_method::automatic, 160), a);
  // bands over D: two tile layers (156 outputs deep each) of a 300-slice volume under a cap
  // that holds one pair's workspace but not the volume, its output and the workspace together
  if (o.op == operation::convolution) {
    const shape3 c{300, 170, 165, 1, 5, 5, 5};
    check_case(make_options(backend::cuda, o, cpu_method::automatic, 160, std::size_t(80) << 20), c);
  }
}

TEST_CASE("plan3d CUDA slice path: execute_device, and the multipass route's result", "[conv][3d][gpu]") {
  if (!cuda_device_available()) SKIP("no CUDA device present");
  const std::size_t limit = GENERATE(std::size_t(0), std::size_t(1) << 20);
  const shape3 s{20, 45, 50, 2, 5, 6, 7};
  const auto vol = test::random_reals<float>(std::size_t(s.d * s.h * s.w * s.volumes), 21);
  const auto k = test::random_reals<float>(std::size_t(s.kd * s.kh * s.kw), 22);
  options r;
  r.border = boundary::reflect101;
  plan_options fused = make_options(backend::cuda, r, cpu_method::automatic, 32, limit), multi = fused;
  fused.path = cuda_path::fused;
  multi.path = cuda_path::multipass;
  plan3d a(s.d, s.h, s.w, s.volumes, k.data(), s.kd, s.kh, s.kw, fused);
  plan3d b(s.d, s.h, s.w, s.volumes, k.data(), s.kd, s.kh, s.kw, multi);
  REQUIRE(a.path() == cuda_path::fused);
  REQUIRE(b.path() == cuda_path::multipass);
  CHECK(device_equals_host(a, vol, s.volumes) <= 1e-6);
  std::vector<float> out_a(vol.size()), out_b(vol.size());
  a.execute(vol.data(), out_a.data());
  b.execute(vol.data(), out_b.data());
  CHECK(test::relative_l2(out_a, out_b) <= 1e-5);
  // path fused where the slices are 16: refused, naming the tiles
  plan_options small = make_options(backend::cuda, r, cpu_method::automatic, 16);
  small.path = cuda_path::fused;
  CHECK_THROWS_AS(plan3d(s.d, s.h, s.w, s.volumes, k.data(), s.kd, s.kh, s.kw, small), std::invalid_argument);
}

// ---- the CUDA path's index maps, emulated on the host --------------------------------------
// The CUDA backend's gather/scatter kernels call tile_map3d::gather_at and output_index_at on
// the maps that backend3d.hpp builds (whole volumes, or make_band's bands with host-built
// slabs). The same calls here, with the host 3D FFT in double between them, check those maps
// and the band slabs without a GPU.

#include "conv/backend3d.hpp"
#include "fft/host/real_3d_host.hpp"

namespace {

void emulate_tiles(const problem3d& p, const tile_map3d& m, const float* in, int volumes, float* out) {
  const tiling3d& t = p.tiles;
  fft::host::real_3d_plan<double> plan(t.tile_d, t.tile_h, t.tile_w);
  const auto kt = p.kernel_tile();
  std::vector<double> tile(kt.begin(), kt.end());
  std::vector<fft::complex_t<double>> spectrum(plan.complex_elements()), s(plan.complex_elements());
  plan.forward(tile.data(), spectrum.data());
  for (long long g = 0; g < volumes * m.tiles_per_volume(); ++g) {
    const auto at = m.locate(g);
    for (int u = 0; u < t.tile_d; ++u)
      for (int v = 0; v < t.tile_h; ++v)
        for (int w = 0; w < t.tile_w; ++w)
          tile[(std::size_t(u) * t.tile_h + v) * t.tile_w + w] = m.gather_at(in, at, u, v, w);
    plan.forward(tile.data(), s.data());
    for (std::size_t i = 0; i < s.size(); ++i) s[i] = s[i] * spectrum[i];
    plan.inverse_destroying(s.data(), tile.data());
    for (int a = 0; a < t.valid_d; ++a)
      for (int b = 0; b < t.valid_h; ++b)
        for (int c = 0; c < t.valid_w; ++c) {
          const long long o = m.output_index_at(at, a, b, c);
          if (o >= 0) out[o] = float(tile[(std::size_t(a + p.kd - 1) * t.tile_h + b + p.kh - 1) * t.tile_w + c + p.kw - 1]);
        }
  }
}

}  // namespace

TEST_CASE("the slice path's tiles take mixed depths where they hug the volume", "[conv][3d]") {
  // 128 x 512 x 512 (the stack): one layer of 160 for a 31-deep PSF against four of 64
  // and slices of 160: 4 x 4 a layer instead of 6 x 6 of 128 (30% fewer tile voxels)
  const tiling3d a = choose_tiling3d(128, 512, 512, 31, 31, 31, 0, max_tile_side_3d, true);
  CHECK(a.tile_d == 160);
  CHECK(a.tile_h == 160);
  CHECK(a.tile_w == 160);
  CHECK(a.tiles_z == 1);
  CHECK(a.tiles_y == 4);
  CHECK(slice_path_tiles(a));
  CHECK(choose_tiling3d(128, 512, 512, 31, 31, 31, 0, max_tile_side_3d, true, false).tile_h == 128);
  CHECK(choose_tiling3d(128, 512, 512, 63, 63, 63, 0, max_tile_side_3d, true).tile_d == 192);
  CHECK(choose_tiling3d(128, 512, 512, 63, 63, 63, 0, max_tile_side_3d, true).tile_h == 128);  // measured faster
  CHECK(choose_tiling3d(128, 512, 512, 15, 15, 15, 0, max_tile_side_3d, true).tile_d == 80);
  CHECK(choose_tiling3d(128, 512, 512, 15, 15, 15, 0, max_tile_side_3d, true).tile_h == 128);
  // 160 forced: the cube on the slice path, a power of two elsewhere
  const tiling3d f = choose_tiling3d(6, 300, 290, 3, 5, 7, 160, max_tile_side_3d, true);
  CHECK((f.tile_d == 160 && f.tile_h == 160 && f.tile_w == 160 && f.tiles_y == 2 && f.tiles_x == 2));
  CHECK(choose_tiling3d(6, 300, 290, 3, 5, 7, 160, max_tile_side_3d, false).tile_h == 256);
  // not for the multipass route or the CPU backend, nor for a forced tile
  CHECK(choose_tiling3d(128, 512, 512, 31, 31, 31, 0, max_tile_side_3d, false).tile_d == 64);
  CHECK(choose_tiling3d(128, 512, 512, 31, 31, 31, 0, cpu_max_tile_side_3d, false).tile_d == 64);
  CHECK(choose_tiling3d(128, 512, 512, 31, 31, 31, 64, max_tile_side_3d, true).tile_d == 64);
  // every choice over a sweep: a depth the slice path takes (and then its slices), or a power of two
  for (long long d : {8, 30, 47, 90, 128, 200, 300, 600})
    for (int k : {1, 3, 9, 17, 31, 63}) {
      const tiling3d t = choose_tiling3d(d, 200, 180, k, k, k, 0, max_tile_side_3d, true);
      INFO("depth " << d << ", K " << k << ": " << t.tile_d << " x " << t.tile_h << " x " << t.tile_w);
      CHECK((fft::is_pow2(t.tile_d) || slice_path_tiles(t)));
      CHECK(t.valid_d >= 1);
      CHECK(t.tiles_z * t.valid_d >= d);
    }
  // kernels 129..160 wide: no slices of 160 (the power-of-two lower bound is 256; a 160-slice would
  // hold 1..32 valid rows a side against 97..128 on 256), and every choice covers its kernel
  for (int k : {128, 129, 145, 160, 161})
    for (long long side : {300, 700}) {
      const tiling3d t = choose_tiling3d(40, side, side, 3, k, k, 0, max_tile_side_3d, true);
      INFO("K " << k << ", " << side << "^2: " << t.tile_d << " x " << t.tile_h << " x " << t.tile_w);
      if (k > 128) CHECK(t.tile_h != slice_mixed_side);
      CHECK((t.valid_h >= 1 && t.valid_w >= 1 && t.tiles_y * t.valid_h >= side));
    }
  CHECK(slice_path_depth(160));
  CHECK_FALSE(slice_path_depth(144));  // 9 x 16: not compiled
  CHECK_FALSE(slice_path_depth(512));
}

TEST_CASE("the slice path's kernel spectrum along a mixed depth equals the direct sum", "[conv][3d]") {
  // K(kz, kx, ky) = sum k(l, i, j) W_D^(kz l) W_T^(ky i + kx j) / (D T^2), stored [kz][kx][ky]
  const int kd = 5, kh = 4, kw = 3;
  const auto k = test::random_reals<float>(std::size_t(kd) * kh * kw, 17);
  // (slices of 32 with every depth; slices of 160, the mixed side, with two)
  for (auto [D, T] : {std::pair{64, 32}, {48, 32}, {80, 32}, {96, 32}, {160, 32}, {192, 32}, {320, 32}, {48, 160}, {64, 160}}) {
    INFO("depth " << D << ", slices " << T);
    const tiling3d t{D, T, T, D - kd + 1, T - kh + 1, T - kw + 1, 1, 1, 1};
    const auto got = slice_tiles3d::spectrum(t, k, kd, kh, kw);
    REQUIRE(got.size() == std::size_t(D) * T * T);
    double num = 0, den = 0;
    for (int kz = 0; kz < D; kz += (D > 100 ? 7 : 3))
      for (int kx = 0; kx < T; kx += 5)
        for (int ky = 0; ky < T; ky += 3) {
          std::complex<double> want = 0;
          for (int l = 0; l < kd; ++l)
            for (int i = 0; i < kh; ++i)
              for (int j = 0; j < kw; ++j) {
                const double a = -2 * M_PI * (double(kz * l) / D + double(ky * i + kx * j) / T);
                want += double(k[(std::size_t(l) * kh + i) * kw + j]) * std::complex<double>(std::cos(a), std::sin(a));
              }
          want /= double(D) * T * T;
          const auto g = got[(std::size_t(kz) * T + kx) * T + ky];
          num += std::norm(std::complex<double>(g.re, g.im) - want);
          den += std::norm(want);
        }
    CHECK(std::sqrt(num / den) <= 1e-6);
  }
}

TEST_CASE("plan3d CUDA path's tile maps and bands, emulated on the host", "[conv][3d]") {
  options o = every_semantics();
  o.constant_value = -0.5f;
  const shape3 s{40, 13, 11, 2, 3, 4, 5};
  const bool bands = GENERATE(false, true);
  const auto seed = test::fresh_seed();
  INFO("mode " << int(o.mode) << ", op " << int(o.op) << ", border " << int(o.border) << ", bands " << bands
               << ", seed " << seed);
  const auto vol = test::random_reals<float>(std::size_t(s.d * s.h * s.w * s.volumes), seed);
  const auto k = test::random_reals<float>(std::size_t(s.kd) * s.kh * s.kw, seed + 7);
  plan_options po;
  po.semantics = o;
  const geometry3d g = make_geometry3d(s.d, s.h, s.w, s.kd, s.kh, s.kw, o.mode);
  const problem3d p{s.d, s.h, s.w, s.volumes, g, choose_tiling3d(g.out_d, g.out_h, g.out_w, s.kd, s.kh, s.kw, 16),
                    effective_kernel3d(k.data(), s.kd, s.kh, s.kw, o.op), s.kd, s.kh, s.kw, po};
  REQUIRE(p.tiles.tile_d == 16);
  const long long out_slice = g.out_h * g.out_w, in_slice = s.h * s.w;
  std::vector<float> out(std::size_t(out_slice * g.out_d * s.volumes), NAN);
  if (!bands) {
    emulate_tiles(p, p.whole_map(), vol.data(), s.volumes, out.data());
  } else {
    // bands of one tile layer, as the CUDA backend makes them under a small memory cap
    for (int v = 0; v < s.volumes; ++v)
      for (long long z0 = 0; z0 < g.out_d; z0 += p.tiles.valid_d) {
        const long long z1 = std::min(g.out_d, z0 + p.tiles.valid_d);
        const band3d b = make_band(p, z0, z1);
        REQUIRE((long long)b.slices.size() == z1 - z0 + s.kd - 1);
        std::vector<float> slab(b.slices.size() * in_slice);
        for (std::size_t j = 0; j < b.slices.size(); ++j)
          for (long long i = 0; i < in_slice; ++i)
            slab[j * in_slice + i] = b.slices[j] < 0 ? (o.border == boundary::zero ? 0.f : o.constant_value)
                                                     : vol[(v * s.d + b.slices[j]) * in_slice + i];
        std::vector<float> band_out(std::size_t((z1 - z0) * out_slice), NAN);
        emulate_tiles(p, b.map, slab.data(), 1, band_out.data());
        std::copy(band_out.begin(), band_out.end(), out.begin() + (v * g.out_d + z0) * out_slice);
      }
  }
  const reference_of r(vol, k, s, o);
  CHECK(r.error(out) <= 1e-6);
}
