// Thread layer: fft_t, fft_radix_t and the register real transforms, on the host, against
// a long-double naive DFT on fresh random data. Bound: Higham's radix-2 bound (reference.hpp).
#include <catch2/catch_template_test_macros.hpp>
#include <catch2/catch_test_macros.hpp>

#include "fft/thread/real.hpp"
#include "support/reference.hpp"

using namespace gpuconv;
using namespace gpuconv::fft;
using test::cld;

// array_t has no vector view of its own; give the checks one.
namespace {
template <typename T, int n>
std::vector<T> as_vector(const array_t<T, n>& a) { return std::vector<T>(a.data, a.data + n); }
}  // namespace


namespace {

template <typename real_t, int n, typename Fft>
void check_complex_fft(Fft forward_fft) {
  const auto seed = test::fresh_seed();
  INFO("n = " << n << ", seed = " << seed);
  const auto r = test::random_reals<real_t>(2 * n, seed);
  array_t<complex_t<real_t>, n> x;
  std::vector<cld> xl(n);
  for (int i = 0; i < n; ++i) {
    x[i] = {r[2 * i], r[2 * i + 1]};
    xl[i] = cld(r[2 * i], r[2 * i + 1]);
  }
  const double bound = test::fft_error_bound<real_t>(log2_exact(n));
  const auto X = forward_fft(x);
  const auto ref = test::naive_dft(xl, false);
  CHECK(test::relative_l2(as_vector(X), ref) <= bound);

  const auto back = fft_t<real_t, n, true>{}(X);
  const auto ref_inv = test::naive_dft(std::vector<cld>(ref), true);
  std::vector<cld> back_l(n), expect(n);
  for (int i = 0; i < n; ++i) {
    back_l[i] = test::to_cld(back[i]);
    expect[i] = xl[i] * (long double)n;
  }
  // inverse alone, on the exact spectrum
  array_t<complex_t<real_t>, n> Xr;
  for (int i = 0; i < n; ++i) Xr[i] = {real_t(ref[i].real()), real_t(ref[i].imag())};
  const auto inv = fft_t<real_t, n, true>{}(Xr);
  std::vector<cld> inv_l(n);
  for (int i = 0; i < n; ++i) inv_l[i] = test::to_cld(inv[i]);
  CHECK(test::relative_l2(inv_l, ref_inv) <= bound);
  // round trip: forward then inverse, two transforms' worth of error
  CHECK(test::relative_l2(back_l, expect) <= 2 * bound);
}

template <typename real_t, int n>
void check_real_fft() {
  const auto seed = test::fresh_seed();
  INFO("n = " << n << ", seed = " << seed);
  const auto r = test::random_reals<real_t>(n, seed);
  array_t<real_t, n> x;
  std::vector<cld> xl(n);
  for (int i = 0; i < n; ++i) { x[i] = r[i]; xl[i] = r[i]; }
  const double bound = test::fft_error_bound<real_t>(log2_exact(n), 2);

  const auto X = rfft_t<real_t, n>{}(x);
  const auto ref = test::naive_dft(xl, false);
  std::vector<cld> half(ref.begin(), ref.begin() + n / 2 + 1), got(n / 2 + 1);
  for (int k = 0; k <= n / 2; ++k) got[k] = test::to_cld(X[k]);
  CHECK(test::relative_l2(got, half) <= bound);

  // C2R on the exact spectrum, with garbage in Im X[0] and Im X[n/2] that must be ignored
  array_t<complex_t<real_t>, n / 2 + 1> Xr;
  for (int k = 0; k <= n / 2; ++k) Xr[k] = {real_t(ref[k].real()), real_t(ref[k].imag())};
  Xr[0].im = real_t(0.75);
  Xr[n / 2].im = real_t(-0.5);
  const auto y = irfft_t<real_t, n>{}(Xr);
  std::vector<cld> yl(n), expect(n);
  for (int i = 0; i < n; ++i) { yl[i] = y[i]; expect[i] = xl[i] * (long double)n; }
  CHECK(test::relative_l2(yl, expect) <= bound);
}

}  // namespace

TEMPLATE_TEST_CASE("fft_t matches a long-double DFT for every register size", "[fft][thread]", float, double) {
  check_complex_fft<TestType, 1>(fft_t<TestType, 1>{});
  check_complex_fft<TestType, 2>(fft_t<TestType, 2>{});
  check_complex_fft<TestType, 4>(fft_t<TestType, 4>{});
  check_complex_fft<TestType, 8>(fft_t<TestType, 8>{});
  check_complex_fft<TestType, 16>(fft_t<TestType, 16>{});
  check_complex_fft<TestType, 32>(fft_t<TestType, 32>{});
  check_complex_fft<TestType, 64>(fft_t<TestType, 64>{});
}

TEMPLATE_TEST_CASE("radix-2, radix-4 and radix-8 steps compose to the same transform", "[fft][thread]", float,
                   double) {
  check_complex_fft<TestType, 8>(fft_radix_t<TestType, 8, 2>{});
  check_complex_fft<TestType, 8>(fft_radix_t<TestType, 8, 8>{});
  check_complex_fft<TestType, 16>(fft_radix_t<TestType, 16, 2>{});
  check_complex_fft<TestType, 16>(fft_radix_t<TestType, 16, 8>{});
  check_complex_fft<TestType, 32>(fft_radix_t<TestType, 32, 8>{});
  check_complex_fft<TestType, 64>(fft_radix_t<TestType, 64, 8>{});
  check_complex_fft<TestType, 64>(fft_radix_t<TestType, 64, 4>{});
}

TEMPLATE_TEST_CASE("rfft_t and irfft_t match a long-double DFT", "[fft][thread]", float, double) {
  check_real_fft<TestType, 2>();
  check_real_fft<TestType, 4>();
  check_real_fft<TestType, 8>();
  check_real_fft<TestType, 16>();
  check_real_fft<TestType, 32>();
  check_real_fft<TestType, 64>();
}

TEST_CASE("compile-time unit roots are accurate to double precision", "[fft][thread]") {
  for (int n : {1, 2, 3, 8, 12, 1000, 4096, 65536}) {
    for (int k = -n; k < 2 * n; k += (n > 64 ? 7 : 1)) {
      const auto w = unit_root(k, n);
      const long double a = -6.283185307179586476925286766559005768L * k / n;
      CHECK(std::abs((long double)w.re - std::cos(a)) < 4e-16);
      CHECK(std::abs((long double)w.im - std::sin(a)) < 4e-16);
    }
  }
}

TEST_CASE("twiddle_mul special cases agree with the general multiply", "[fft][thread]") {
  const complex_t<double> a{0.3, -1.7};
  auto general = [&](int k, int n, bool inverse) {
    auto w = unit_root(inverse ? -k : k, n);
    return a * w;
  };
  auto near = [](complex_t<double> x, complex_t<double> y) {
    return std::abs(x.re - y.re) < 1e-15 && std::abs(x.im - y.im) < 1e-15;
  };
  CHECK(near(twiddle_mul<8, 1, false>(a), general(1, 8, false)));
  CHECK(near(twiddle_mul<8, 3, false>(a), general(3, 8, false)));
  CHECK(near(twiddle_mul<8, 5, true>(a), general(5, 8, true)));
  CHECK(near(twiddle_mul<8, 7, true>(a), general(7, 8, true)));
  CHECK(near(twiddle_mul<4, 1, false>(a), general(1, 4, false)));
  CHECK(near(twiddle_mul<4, 3, true>(a), general(3, 4, true)));
  CHECK(near(twiddle_mul<16, 3, false>(a), general(3, 16, false)));
  CHECK(near(twiddle_mul<16, 24, true>(a), general(24, 16, true)));
}
