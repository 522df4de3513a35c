// GPU complex 1D transforms, the batched transpose, 2D real transforms (against cuFFT) and
// the fused convolve path (against a direct circular convolution in double).
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>

#include <array>
#include <cstring>

#include <cufft.h>

#include "fft/plan/real_2d_plan.hpp"
#include "support/gpu.hpp"
#include "support/reference.hpp"

using namespace gpuconv;
using cfloat = fft::complex_t<float>;

namespace {

using test::check_cufft;
using test::cufft_handle;

std::vector<cfloat> random_complex(std::size_t count, std::uint64_t seed) {
  const auto r = test::random_reals<float>(2 * count, seed);
  std::vector<cfloat> v(count);
  for (std::size_t i = 0; i < count; ++i) v[i] = {r[2 * i], r[2 * i + 1]};
  return v;
}

}  // namespace

TEST_CASE("GPU batched C2C matches cuFFT forward and inverse", "[fft][gpu]") {
  GPUCONV_REQUIRE_GPU();
  const int n = GENERATE(2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096);
  const int rows = GENERATE_COPY(1, 3, (1 << 20) / n + 1);
  const auto seed = test::fresh_seed();
  INFO("n = " << n << ", rows = " << rows << ", seed = " << seed);
  const std::size_t count = std::size_t(n) * rows;
  const auto x = random_complex(count, seed);
  auto d_x = test::upload(x);
  device_buffer<cfloat> d_y(count), d_ref(count);
  const double bound = test::fft_error_bound<float>(fft::log2_exact(n));
  fft::complex_1d_plan plan(n, rows);
  cufft_handle ref;
  check_cufft(cufftPlan1d(&ref.h, n, CUFFT_C2C, rows), "cufftPlan1d");
  for (int dir : {CUFFT_FORWARD, CUFFT_INVERSE}) {
    test::poison(d_y);
    if (dir == CUFFT_FORWARD) plan.forward(d_x.data(), d_y.data()); else plan.inverse(d_x.data(), d_y.data());
    auto* xc = reinterpret_cast<cufftComplex*>(d_x.data());
    check_cufft(cufftExecC2C(ref.h, xc, reinterpret_cast<cufftComplex*>(d_ref.data()), dir), "cufftExecC2C");
    GPUCONV_CUDA(cudaDeviceSynchronize());
    const auto y = test::download(d_y), yr = test::download(d_ref);
    std::vector<float> flat(2 * count);
    std::memcpy(flat.data(), y.data(), flat.size() * sizeof(float));
    REQUIRE(test::all_finite(flat));
    CHECK(test::relative_l2(y, yr) <= 2 * bound);
  }
}

TEST_CASE("GPU batched transpose", "[fft][gpu]") {
  GPUCONV_REQUIRE_GPU();
  const auto shape = GENERATE(std::array<int, 3>{1, 1, 1}, std::array<int, 3>{3, 16, 9}, std::array<int, 3>{2, 33, 65},
                              std::array<int, 3>{5, 129, 64}, std::array<int, 3>{1, 1024, 513});
  const auto [batch, rows, cols] = shape;
  INFO(batch << " x " << rows << " x " << cols);
  const auto x = random_complex(std::size_t(batch) * rows * cols, test::fresh_seed());
  auto d_x = test::upload(x);
  device_buffer<cfloat> d_y(x.size());
  test::poison(d_y);
  fft::transpose(d_x.data(), d_y.data(), batch, rows, cols);
  const auto y = test::download(d_y);
  bool same = true;
  for (int b = 0; b < batch; ++b)
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < cols; ++c) {
        const cfloat a = x[(std::size_t(b) * rows + r) * cols + c], t = y[(std::size_t(b) * cols + c) * rows + r];
        same = same && a.re == t.re && a.im == t.im;
      }
  CHECK(same);
}

TEST_CASE("GPU 2D R2C and C2R match cuFFT", "[fft][gpu]") {
  GPUCONV_REQUIRE_GPU();
  const auto shape = GENERATE(std::array<int, 3>{16, 16, 1}, std::array<int, 3>{16, 64, 3}, std::array<int, 3>{64, 16, 3},
                              std::array<int, 3>{128, 256, 2}, std::array<int, 3>{512, 512, 1},
                              std::array<int, 3>{16, 4096, 2}, std::array<int, 3>{4096, 32, 1},
                              std::array<int, 3>{2048, 2048, 1});
  const auto [h, w, batch] = shape;
  const auto seed = test::fresh_seed();
  INFO(h << " x " << w << " x " << batch << ", seed = " << seed);
  const std::size_t reals = std::size_t(h) * w * batch, complexes = std::size_t(h) * (w / 2 + 1) * batch;
  const auto x = test::random_reals<float>(reals, seed);
  auto d_x = test::upload(x);
  device_buffer<cfloat> d_X(complexes), d_Xr(complexes);
  test::poison(d_X);
  fft::real_2d_plan plan(h, w, batch);
  plan.forward(d_x.data(), d_X.data());
  int dims[2] = {h, w};
  cufft_handle r2c, c2r;
  check_cufft(cufftPlanMany(&r2c.h, 2, dims, nullptr, 1, 0, nullptr, 1, 0, CUFFT_R2C, batch), "cufftPlanMany");
  check_cufft(cufftPlanMany(&c2r.h, 2, dims, nullptr, 1, 0, nullptr, 1, 0, CUFFT_C2R, batch), "cufftPlanMany");
  check_cufft(cufftExecR2C(r2c.h, d_x.data(), reinterpret_cast<cufftComplex*>(d_Xr.data())), "cufftExecR2C");
  GPUCONV_CUDA(cudaDeviceSynchronize());
  const auto X = test::download(d_X), Xr = test::download(d_Xr);
  const double bound = test::fft_error_bound<float>(fft::log2_exact(h) + fft::log2_exact(w), 2);
  CHECK(test::relative_l2(X, Xr) <= 2 * bound);

  device_buffer<float> d_y(reals), d_yr(reals);
  test::poison(d_y);
  plan.inverse(d_Xr.data(), d_y.data());
  check_cufft(cufftExecC2R(c2r.h, reinterpret_cast<cufftComplex*>(d_Xr.data()), d_yr.data()), "cufftExecC2R");
  GPUCONV_CUDA(cudaDeviceSynchronize());
  const auto y = test::download(d_y), yr = test::download(d_yr);
  REQUIRE(test::all_finite(y));
  CHECK(test::relative_l2(y, yr) <= 2 * bound);
  std::vector<double> nx(reals);
  for (std::size_t i = 0; i < reals; ++i) nx[i] = double(x[i]) * h * w;
  CHECK(test::relative_l2(y, nx) <= 2 * bound);
}

TEST_CASE("GPU fused 2D convolve equals a direct circular convolution", "[fft][gpu]") {
  GPUCONV_REQUIRE_GPU();
  const auto shape = GENERATE(std::array<int, 3>{16, 32, 3}, std::array<int, 3>{64, 16, 2}, std::array<int, 3>{32, 32, 5});
  const auto [h, w, batch] = shape;
  const auto seed = test::fresh_seed();
  INFO(h << " x " << w << " x " << batch << ", seed = " << seed);
  const std::size_t plane = std::size_t(h) * w;
  const auto x = test::random_reals<float>(plane * batch, seed);
  const auto k = test::random_reals<float>(plane, seed + 1);
  auto d_x = test::upload(x);
  auto d_k = test::upload(k);
  device_buffer<float> d_y(plane * batch);
  test::poison(d_y);
  fft::real_2d_plan plan(h, w, batch);
  device_buffer<cfloat> spectrum(plan.spectrum_elements());
  plan.spectrum_transposed(d_k.data(), spectrum.data());
  plan.convolve(d_x.data(), d_y.data(), spectrum.data());
  GPUCONV_CUDA(cudaDeviceSynchronize());
  const auto y = test::download(d_y);
  std::vector<double> ref(plane * batch, 0.0);
  for (int b = 0; b < batch; ++b)
    for (int r = 0; r < h; ++r)
      for (int c = 0; c < w; ++c) {
        double s = 0;
        for (int i = 0; i < h; ++i)
          for (int j = 0; j < w; ++j)
            s += double(k[i * w + j]) * x[b * plane + ((r - i + h) % h) * w + (c - j + w) % w];
        ref[b * plane + r * w + c] = s * h * w;  // unnormalised round trip
      }
  CHECK(test::relative_l2(y, ref) <= 4 * test::fft_error_bound<float>(fft::log2_exact(h) + fft::log2_exact(w), 2));
}

TEST_CASE("2D and complex plans reject bad shapes", "[fft]") {
  CHECK_THROWS_AS(fft::real_2d_plan(8, 16, 1), std::invalid_argument);
  CHECK_THROWS_AS(fft::real_2d_plan(16, 100, 1), std::invalid_argument);
  CHECK_THROWS_AS(fft::real_2d_plan(16, 8192, 1), std::invalid_argument);
  CHECK_THROWS_AS(fft::real_2d_plan(16, 16, 0), std::invalid_argument);
  CHECK_THROWS_AS(fft::complex_1d_plan(1, 1), std::invalid_argument);
  CHECK_THROWS_AS(fft::complex_1d_plan(8192, 1), std::invalid_argument);
}
