// Host batched R2C/C2R (the CPU backend's transforms) against a long-double naive DFT,
// every power of two 4..4096, float and double, on fresh random data.
#include <catch2/catch_template_test_macros.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>

#include "fft/host/real_1d_host.hpp"
#include "support/reference.hpp"

using namespace gpuconv;
using test::cld;

TEMPLATE_TEST_CASE("host batched R2C and C2R match a long-double DFT", "[fft][host]", float, double) {
  using real_t = TestType;
  const int n = GENERATE(4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096);
  const int batch = n >= 1024 ? 2 : 3;
  const int threads = GENERATE(1, 2);
  const auto seed = test::fresh_seed();
  INFO("n = " << n << ", batch = " << batch << ", threads = " << threads << ", seed = " << seed);
  const int H = n / 2 + 1;
  const auto x = test::random_reals<real_t>((std::size_t)n * batch, seed);

  fft::host::real_1d_plan<real_t> plan(n, batch, threads);
  std::vector<fft::complex_t<real_t>> X((std::size_t)H * batch, {real_t(NAN), real_t(NAN)});
  plan.forward(x.data(), X.data());

  const double bound = test::fft_error_bound<real_t>(fft::log2_exact(n), 2);
  for (int b = 0; b < batch; ++b) {
    std::vector<cld> row(n);
    for (int i = 0; i < n; ++i) row[i] = x[(std::size_t)b * n + i];
    const auto ref = test::naive_dft(row, false);
    std::vector<cld> half(ref.begin(), ref.begin() + H), got(H);
    for (int k = 0; k < H; ++k) got[k] = test::to_cld(X[(std::size_t)b * H + k]);
    CHECK(test::relative_l2(got, half) <= bound);

    // C2R of the exact spectrum must give n*x; Im X[0], Im X[n/2] are ignored.
    std::vector<fft::complex_t<real_t>> exact(H);
    for (int k = 0; k < H; ++k) exact[k] = {real_t(half[k].real()), real_t(half[k].imag())};
    exact[0].im = real_t(3);
    exact[H - 1].im = real_t(-2);
    fft::host::real_1d_plan<real_t> one(n, 1, 1);
    std::vector<real_t> y(n, real_t(NAN));
    one.inverse(exact.data(), y.data());
    std::vector<cld> expect(n);
    for (int i = 0; i < n; ++i) expect[i] = row[i] * (long double)n;
    CHECK(test::relative_l2(y, expect) <= bound);
  }

  // Round trip over the whole batch.
  std::vector<real_t> back((std::size_t)n * batch, real_t(NAN));
  plan.inverse(X.data(), back.data());
  std::vector<cld> expect(back.size());
  for (std::size_t i = 0; i < back.size(); ++i) expect[i] = (long double)x[i] * n;
  CHECK(test::relative_l2(back, expect) <= 2 * bound);
}

TEST_CASE("host plan rejects bad shapes", "[fft][host]") {
  using plan_t = fft::host::real_1d_plan<float>;
  CHECK_THROWS_AS(plan_t(0, 1), std::invalid_argument);
  CHECK_THROWS_AS(plan_t(2, 1), std::invalid_argument);
  CHECK_THROWS_AS(plan_t(48, 1), std::invalid_argument);
  CHECK_THROWS_AS(plan_t(64, 0), std::invalid_argument);
  CHECK_THROWS_AS(plan_t(64, -3), std::invalid_argument);
}
