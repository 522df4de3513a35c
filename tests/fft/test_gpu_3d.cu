// GPU 3D real transforms (fft::real_3d_plan) against cuFFT 3D (cufftPlanMany, rank 3) and
// the host twin in double, the strided C2C along a middle axis against cuFFT's strided plan
// many, round trips, and the fused convolve against a circular convolution in double.
// Accuracy: rel L2 within 2x the FFT error bound of log2(d*h*w) + 2 levels (reference.hpp),
// which is what cuFFT itself meets against the double transform (checked in the same test).
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>

#include <array>

#include <cufft.h>

#include "fft/host/real_3d_host.hpp"
#include "fft/plan/complex_3d_plan.hpp"
#include "fft/plan/real_3d_plan.hpp"
#include "support/gpu.hpp"
#include "support/reference.hpp"

using namespace gpuconv;
using cfloat = fft::complex_t<float>;
using cdouble = fft::complex_t<double>;

namespace {

using test::check_cufft;
using test::cufft_handle;

double bound3(int d, int h, int w) { return test::fft_error_bound<float>(fft::log2_exact((long long)d * h * w), 2); }

}  // namespace

TEST_CASE("GPU strided C2C along a middle axis matches cuFFT", "[fft][gpu][3d]") {
  GPUCONV_REQUIRE_GPU();
  // powers of two, and the mixed lengths (3 or 5 times a power of two)
  const int n = GENERATE(2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 48, 80, 96, 160, 192, 320);
  const auto oi = GENERATE(std::array<long long, 2>{1, 1}, std::array<long long, 2>{3, 65}, std::array<long long, 2>{2, 300},
                           std::array<long long, 2>{1, 4096});
  const auto [outer, inner] = oi;
  const auto seed = test::fresh_seed();
  INFO("n = " << n << ", outer = " << outer << ", inner = " << inner << ", seed = " << seed);
  const std::size_t count = std::size_t(n) * outer * inner;
  const auto r = test::random_reals<float>(2 * count, seed);
  std::vector<cfloat> x(count);
  for (std::size_t i = 0; i < count; ++i) x[i] = {r[2 * i], r[2 * i + 1]};
  auto d_x = test::upload(x);
  device_buffer<cfloat> d_y(count), d_ref(count);
  fft::strided_c2c_plan plan(n, outer, inner);
  // cuFFT: for each outer index, `inner` transforms of stride inner and distance 1
  int dims[1] = {n};
  cufft_handle ref;
  check_cufft(cufftPlanMany(&ref.h, 1, dims, dims, (int)inner, 1, dims, (int)inner, 1, CUFFT_C2C, (int)inner),
              "cufftPlanMany");
  std::vector<cfloat> forward_out;
  for (int dir : {CUFFT_FORWARD, CUFFT_INVERSE}) {
    test::poison(d_y);
    if (dir == CUFFT_FORWARD) plan.forward(d_x.data(), d_y.data()); else plan.inverse(d_x.data(), d_y.data());
    for (long long o = 0; o < outer; ++o) {
      auto* src = reinterpret_cast<cufftComplex*>(d_x.data() + o * n * inner);
      auto* dst = reinterpret_cast<cufftComplex*>(d_ref.data() + o * n * inner);
      check_cufft(cufftExecC2C(ref.h, src, dst, dir), "cufftExecC2C");
    }
    GPUCONV_CUDA(cudaDeviceSynchronize());
    const auto y = test::download(d_y), yr = test::download(d_ref);
    CHECK(test::relative_l2(y, yr) <= 2 * test::fft_error_bound<float>(fft::log2_exact(n)));
    if (dir == CUFFT_FORWARD) forward_out = y;
  }
  // in place: the same values
  plan.forward(d_x.data(), d_x.data());
  GPUCONV_CUDA(cudaDeviceSynchronize());
  CHECK(test::relative_l2(test::download(d_x), forward_out) == 0.0);
}

TEST_CASE("GPU 3D R2C and C2R match cuFFT 3D and the host transform in double", "[fft][gpu][3d]") {
  GPUCONV_REQUIRE_GPU();
  const auto shape = GENERATE(std::array<int, 4>{16, 16, 16, 1}, std::array<int, 4>{16, 32, 64, 3},
                              std::array<int, 4>{64, 16, 32, 2}, std::array<int, 4>{128, 128, 128, 1},
                              std::array<int, 4>{32, 256, 16, 1}, std::array<int, 4>{16, 64, 1024, 1},
                              std::array<int, 4>{1024, 16, 16, 1}, std::array<int, 4>{256, 256, 256, 1});
  const auto [d, h, w, batch] = shape;
  const auto seed = test::fresh_seed();
  INFO(d << " x " << h << " x " << w << " x " << batch << ", seed = " << seed);
  const std::size_t reals = std::size_t(d) * h * w * batch, complexes = std::size_t(d) * h * (w / 2 + 1) * batch;
  const auto x = test::random_reals<float>(reals, seed);
  auto d_x = test::upload(x);
  device_buffer<cfloat> d_X(complexes), d_Xr(complexes);
  test::poison(d_X);
  fft::real_3d_plan plan(d, h, w, batch);
  plan.forward(d_x.data(), d_X.data());
  int dims[3] = {d, h, w};
  cufft_handle r2c, c2r;
  check_cufft(cufftPlanMany(&r2c.h, 3, dims, nullptr, 1, 0, nullptr, 1, 0, CUFFT_R2C, batch), "cufftPlanMany");
  check_cufft(cufftPlanMany(&c2r.h, 3, dims, nullptr, 1, 0, nullptr, 1, 0, CUFFT_C2R, batch), "cufftPlanMany");
  check_cufft(cufftExecR2C(r2c.h, d_x.data(), reinterpret_cast<cufftComplex*>(d_Xr.data())), "cufftExecR2C");
  GPUCONV_CUDA(cudaDeviceSynchronize());
  const auto X = test::download(d_X), Xr = test::download(d_Xr);
  const double bound = bound3(d, h, w);

  // the double-precision host transform: ours and cuFFT's errors against it
  std::vector<double> xd(x.begin(), x.end());
  fft::host::real_3d_plan<double> host(d, h, w, batch);
  std::vector<cdouble> Xd(complexes);
  host.forward(xd.data(), Xd.data());
  const double ours = test::relative_l2(X, Xd), cufft = test::relative_l2(Xr, Xd);
  INFO("R2C rel L2 vs double: ours " << ours << ", cuFFT " << cufft << ", bound " << bound);
  CHECK(ours <= 2 * bound);
  CHECK(ours <= 3 * cufft + 1e-7);  // as accurate as cuFFT, within a small factor
  CHECK(test::relative_l2(X, Xr) <= 2 * bound);

  device_buffer<float> d_y(reals), d_yr(reals);
  test::poison(d_y);
  plan.inverse(d_Xr.data(), d_y.data());
  // cuFFT's C2R may overwrite its input: give it a copy
  device_buffer<cfloat> d_Xc(complexes);
  GPUCONV_CUDA(cudaMemcpy(d_Xc.data(), d_Xr.data(), d_Xr.bytes(), cudaMemcpyDeviceToDevice));
  check_cufft(cufftExecC2R(c2r.h, reinterpret_cast<cufftComplex*>(d_Xc.data()), d_yr.data()), "cufftExecC2R");
  GPUCONV_CUDA(cudaDeviceSynchronize());
  const auto y = test::download(d_y), yr = test::download(d_yr);
  REQUIRE(test::all_finite(y));
  CHECK(test::relative_l2(y, yr) <= 2 * bound);
  std::vector<double> nx(reals);
  for (std::size_t i = 0; i < reals; ++i) nx[i] = double(x[i]) * d * h * w;
  const double round_trip = test::relative_l2(y, nx), round_trip_cufft = test::relative_l2(yr, nx);
  INFO("round trip rel L2: ours " << round_trip << ", cuFFT " << round_trip_cufft);
  CHECK(round_trip <= 2 * bound);
  // the input spectrum is left as it was
  CHECK(test::relative_l2(test::download(d_Xr), Xr) == 0.0);
}

TEST_CASE("GPU 3D convolve equals a circular convolution", "[fft][gpu][3d]") {
  GPUCONV_REQUIRE_GPU();
  const int d = 16, h = 16, w = 32, batch = 2;
  const std::size_t volume = std::size_t(d) * h * w;
  const auto seed = test::fresh_seed();
  INFO("seed = " << seed);
  const auto x = test::random_reals<float>(volume * batch, seed);
  std::vector<float> k(volume, 0.f);  // a 3 x 3 x 3 kernel at the origin, zero elsewhere
  const auto kr = test::random_reals<float>(27, seed + 1);
  for (int l = 0; l < 3; ++l)
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j) k[(std::size_t(l) * h + i) * w + j] = kr[(l * 3 + i) * 3 + j];
  auto d_x = test::upload(x);
  auto d_k = test::upload(k);
  fft::real_3d_plan one(d, h, w, 1), plan(d, h, w, batch);
  device_buffer<cfloat> spectrum(one.spectrum_elements());
  one.forward(d_k.data(), spectrum.data());
  device_buffer<float> d_y(volume * batch);
  test::poison(d_y);
  plan.convolve(d_x.data(), d_y.data(), spectrum.data());
  GPUCONV_CUDA(cudaDeviceSynchronize());
  const auto y = test::download(d_y);
  std::vector<double> ref(volume * batch);
  for (int b = 0; b < batch; ++b)
    for (int z = 0; z < d; ++z)
      for (int r = 0; r < h; ++r)
        for (int c = 0; c < w; ++c) {
          double s = 0;
          for (int l = 0; l < 3; ++l)
            for (int i = 0; i < 3; ++i)
              for (int j = 0; j < 3; ++j)
                s += double(kr[(l * 3 + i) * 3 + j]) *
                     x[b * volume + ((std::size_t((z - l + d) % d) * h + (r - i + h) % h) * w + (c - j + w) % w)];
          ref[b * volume + (std::size_t(z) * h + r) * w + c] = s * double(volume);  // unnormalised
        }
  CHECK(test::relative_l2(y, ref) <= 4 * bound3(d, h, w));
}

// Early (programmatic dependent) launches: each pass may begin while the one before it ends
// and waits for it before touching memory. The passes back to back - forward, then inverse and
// convolve in place on what forward just wrote - give the same bits as plans that launch each
// pass after the previous one ended; a pass that read before its predecessor's writes landed
// would not.
TEST_CASE("GPU 3D plans give the same results with early launches", "[fft][gpu][3d]") {
  GPUCONV_REQUIRE_GPU();
  const auto shape = GENERATE(std::array<int, 4>{128, 128, 128, 1}, std::array<int, 4>{64, 128, 128, 2},
                              std::array<int, 4>{16, 32, 512, 3});
  const int d = shape[0], h = shape[1], w = shape[2], batch = shape[3];
  const auto seed = test::fresh_seed();
  INFO(d << " x " << h << " x " << w << " x " << batch << ", seed = " << seed);
  const std::size_t reals = std::size_t(d) * h * w * batch, complexes = std::size_t(d) * h * (w / 2 + 1) * batch;
  const auto x = test::random_reals<float>(reals, seed);
  const auto k = test::random_reals<float>(std::size_t(d) * h * w, seed + 1);
  auto d_k = test::upload(k);
  auto run = [&](bool early) {
    fft::real_3d_plan one(d, h, w, 1, early), plan(d, h, w, batch, early);
    auto d_x = test::upload(x);
    device_buffer<cfloat> X(complexes), spectrum(one.spectrum_elements());
    device_buffer<float> y(reals);
    test::poison(X);
    test::poison(y);
    one.forward(d_k.data(), spectrum.data());
    plan.forward(d_x.data(), X.data());
    plan.inverse(X.data(), y.data());
    plan.convolve(y.data(), y.data(), spectrum.data());
    GPUCONV_CUDA(cudaDeviceSynchronize());
    return std::make_pair(test::download(X), test::download(y));
  };
  const auto [X_early, y_early] = run(true);
  const auto [X_plain, y_plain] = run(false);
  REQUIRE(test::all_finite(y_plain));
  CHECK(test::relative_l2(X_early, X_plain) == 0.0);
  CHECK(test::relative_l2(y_early, y_plain) == 0.0);
}

TEST_CASE("3D plans reject bad shapes", "[fft][3d]") {
  CHECK_THROWS_AS(fft::real_3d_plan(8, 16, 16, 1), std::invalid_argument);
  CHECK_THROWS_AS(fft::real_3d_plan(16, 100, 16, 1), std::invalid_argument);
  CHECK_THROWS_AS(fft::real_3d_plan(16, 16, 2048, 1), std::invalid_argument);
  CHECK_THROWS_AS(fft::real_3d_plan(16, 16, 16, 0), std::invalid_argument);
  CHECK_THROWS_AS(fft::strided_c2c_plan(3, 1, 1), std::invalid_argument);
  CHECK_THROWS_AS(fft::strided_c2c_plan(24, 1, 1), std::invalid_argument);   // 3 x 8: not compiled
  CHECK_THROWS_AS(fft::strided_c2c_plan(144, 1, 1), std::invalid_argument);  // 9 x 16
  CHECK_THROWS_AS(fft::strided_c2c_plan(8, 0, 1), std::invalid_argument);
  CHECK_THROWS_AS(fft::complex_3d_plan(1, 16, 16, 1), std::invalid_argument);
  CHECK_THROWS_AS(fft::complex_3d_plan(16, 16, 16, 0), std::invalid_argument);
}

TEST_CASE("GPU 3D C2C matches cuFFT 3D", "[fft][gpu][3d]") {
  GPUCONV_REQUIRE_GPU();
  const auto shape = GENERATE(std::array<int, 4>{2, 4, 8, 3}, std::array<int, 4>{16, 16, 16, 1},
                              std::array<int, 4>{64, 32, 16, 2}, std::array<int, 4>{128, 128, 128, 1},
                              std::array<int, 4>{8, 1024, 32, 1});
  const auto [d, h, w, batch] = shape;
  const auto seed = test::fresh_seed();
  INFO(d << " x " << h << " x " << w << " x " << batch << ", seed = " << seed);
  const std::size_t count = std::size_t(d) * h * w * batch;
  const auto r = test::random_reals<float>(2 * count, seed);
  std::vector<cfloat> x(count);
  for (std::size_t i = 0; i < count; ++i) x[i] = {r[2 * i], r[2 * i + 1]};
  auto d_x = test::upload(x);
  device_buffer<cfloat> d_y(count), d_ref(count);
  fft::complex_3d_plan plan(d, h, w, batch);
  int dims[3] = {d, h, w};
  cufft_handle ref;
  check_cufft(cufftPlanMany(&ref.h, 3, dims, nullptr, 1, 0, nullptr, 1, 0, CUFFT_C2C, batch), "cufftPlanMany");
  for (int dir : {CUFFT_FORWARD, CUFFT_INVERSE}) {
    test::poison(d_y);
    if (dir == CUFFT_FORWARD) plan.forward(d_x.data(), d_y.data()); else plan.inverse(d_x.data(), d_y.data());
    check_cufft(cufftExecC2C(ref.h, reinterpret_cast<cufftComplex*>(d_x.data()),
                             reinterpret_cast<cufftComplex*>(d_ref.data()), dir), "cufftExecC2C");
    GPUCONV_CUDA(cudaDeviceSynchronize());
    CHECK(test::relative_l2(test::download(d_y), test::download(d_ref)) <=
          2 * test::fft_error_bound<float>(fft::log2_exact((long long)d * h * w)));
  }
  // in place, and the round trip: inverse(forward(x)) = d*h*w*x
  plan.forward(d_x.data(), d_x.data());
  plan.inverse(d_x.data(), d_x.data());
  GPUCONV_CUDA(cudaDeviceSynchronize());
  const auto y = test::download(d_x);
  std::vector<cdouble> nx(count);
  for (std::size_t i = 0; i < count; ++i) nx[i] = {double(x[i].re) * d * h * w, double(x[i].im) * d * h * w};
  CHECK(test::relative_l2(y, nx) <= 4 * test::fft_error_bound<float>(fft::log2_exact((long long)d * h * w)));
}
