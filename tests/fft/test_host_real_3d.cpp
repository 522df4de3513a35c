// Host batched 3D R2C/C2R (the GPU transform's twin, the CPU backend's tile transform)
// against a long-double DFT (naive per axis: the 3D DFT is the composition of the 1D DFTs
// along each axis), float and double, on fresh random data; round trip.
// Bound: the FFT error bound of log2(d*h*w) levels plus the real wrapper's two.
#include <catch2/catch_template_test_macros.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>

#include <array>

#include "fft/host/real_3d_host.hpp"
#include "support/reference.hpp"

using namespace gpuconv;
using test::cld;

namespace {

// The full complex 3D DFT of [d][h][w] values, long double, axis by axis.
std::vector<cld> dft3(std::vector<cld> x, int d, int h, int w, bool inverse) {
  auto along = [&](int n, long long outer, long long inner) {
    std::vector<cld> line(n);
    for (long long o = 0; o < outer; ++o)
      for (long long c = 0; c < inner; ++c) {
        for (int k = 0; k < n; ++k) line[k] = x[(o * n + k) * inner + c];
        const auto y = test::naive_dft(line, inverse);
        for (int k = 0; k < n; ++k) x[(o * n + k) * inner + c] = y[k];
      }
  };
  along(w, (long long)d * h, 1);
  along(h, d, w);
  along(d, 1, (long long)h * w);
  return x;
}

}  // namespace

TEMPLATE_TEST_CASE("host 3D R2C and C2R match a long-double DFT", "[fft][host][3d]", float, double) {
  using real_t = TestType;
  const auto shape = GENERATE(std::array<int, 4>{1, 1, 4, 1}, std::array<int, 4>{2, 4, 8, 2},
                              std::array<int, 4>{8, 8, 8, 1}, std::array<int, 4>{16, 4, 32, 2},
                              std::array<int, 4>{4, 32, 128, 1}, std::array<int, 4>{64, 2, 16, 1});
  const auto [d, h, w, batch] = shape;
  const auto seed = test::fresh_seed();
  INFO(d << " x " << h << " x " << w << " x " << batch << ", seed = " << seed);
  const int half = w / 2 + 1;
  const std::size_t volume = std::size_t(d) * h * w, spectrum = std::size_t(d) * h * half;
  const auto x = test::random_reals<real_t>(volume * batch, seed);
  fft::host::real_3d_plan<real_t> plan(d, h, w, batch);
  std::vector<fft::complex_t<real_t>> X(spectrum * batch, {real_t(NAN), real_t(NAN)});
  plan.forward(x.data(), X.data());
  const double bound = test::fft_error_bound<real_t>(fft::log2_exact((long long)d * h * w), 2);
  for (int b = 0; b < batch; ++b) {
    std::vector<cld> in(volume);
    for (std::size_t i = 0; i < volume; ++i) in[i] = x[b * volume + i];
    const auto full = dft3(in, d, h, w, false);
    std::vector<cld> ref(spectrum), got(spectrum);
    for (std::size_t r = 0; r < std::size_t(d) * h; ++r)
      for (int k = 0; k < half; ++k) {
        ref[r * half + k] = full[r * w + k];
        got[r * half + k] = test::to_cld(X[b * spectrum + r * half + k]);
      }
    CHECK(test::relative_l2(got, ref) <= bound);
  }
  // round trip: inverse(forward(x)) = d*h*w*x, the input spectrum left as it was
  const auto X_copy = X;
  std::vector<real_t> y(volume * batch, real_t(NAN));
  plan.inverse(X.data(), y.data());
  std::vector<double> nx(y.size());
  for (std::size_t i = 0; i < y.size(); ++i) nx[i] = double(x[i]) * double(volume);
  CHECK(test::relative_l2(y, nx) <= 2 * bound);
  bool untouched = true;
  for (std::size_t i = 0; i < X.size(); ++i) untouched = untouched && X[i].re == X_copy[i].re && X[i].im == X_copy[i].im;
  CHECK(untouched);
}

TEST_CASE("host 3D plan rejects bad shapes", "[fft][host][3d]") {
  CHECK_THROWS_AS(fft::host::real_3d_plan<float>(3, 4, 8), std::invalid_argument);
  CHECK_THROWS_AS(fft::host::real_3d_plan<float>(4, 4, 2), std::invalid_argument);
  CHECK_THROWS_AS(fft::host::real_3d_plan<float>(4, 4, 8, 0), std::invalid_argument);
}
