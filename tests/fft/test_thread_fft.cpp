// Thread layer: fft_t, fft_radix_t and the register real transforms, on the host, against
// a long-double naive DFT on fresh random data. Bound: Higham's radix-2 bound (reference.hpp).
#include <catch2/catch_template_test_macros.hpp>
#include <catch2/catch_test_macros.hpp>

#include <algorithm>

#include "fft/plan/dispatch.hpp"
#include "fft/thread/mixed_radix.hpp"
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

namespace {

// The mixed-radix step of fft/thread/mixed_radix.hpp with the block layer emulated: T threads
// of a column, each holding its items in time order; the R M-point transforms between the two
// halves done by fft_t over the whole column (block_fft_t's contract: thread t holds points
// t + T m before and after). Forward, then inverse of the exact spectrum, against a long-double
// DFT; every element held by exactly one item.
template <typename real_t, int R, int M, int T>
void check_mixed_step() {
  using layout = mixed_layout<R, M, T>;
  using cx = complex_t<real_t>;
  constexpr int n = R * M, P = layout::items, Pm = layout::Pm;
  const auto seed = test::fresh_seed();
  INFO("n = " << n << " (R = " << R << ", T = " << T << "), seed = " << seed);
  std::vector<int> seen_time(n, 0), seen_freq(n, 0);
  for (int t = 0; t < T; ++t)
    for (int q = 0; q < P; ++q) {
      ++seen_time[layout::time_index(t, q)];
      ++seen_freq[layout::freq_index(t, q)];
    }
  CHECK(std::count(seen_time.begin(), seen_time.end(), 1) == n);
  CHECK(std::count(seen_freq.begin(), seen_freq.end(), 1) == n);

  auto twiddle = [](int e) {
    const auto w = unit_root(e, n);
    return cx{real_t(w.re), real_t(w.im)};
  };
  // the M-point transforms of item rows k1 across the T threads, in place
  auto sub_transforms = [](std::vector<array_t<cx, P>>& v, bool inverse) {
    for (int k1 = 0; k1 < R; ++k1) {
      array_t<cx, M> line;
      for (int t = 0; t < T; ++t)
        for (int m = 0; m < Pm; ++m) line[t + T * m] = v[t][k1 * Pm + m];
      line = inverse ? fft_t<real_t, M, true>{}(line) : fft_t<real_t, M, false>{}(line);
      for (int t = 0; t < T; ++t)
        for (int m = 0; m < Pm; ++m) v[t][k1 * Pm + m] = line[t + T * m];
    }
  };
  const auto r = test::random_reals<real_t>(2 * n, seed);
  std::vector<cld> xl(n);
  for (int i = 0; i < n; ++i) xl[i] = cld(r[2 * i], r[2 * i + 1]);
  std::vector<array_t<cx, P>> v(T);
  for (int t = 0; t < T; ++t)
    for (int q = 0; q < P; ++q) {
      const int j = layout::time_index(t, q);
      v[t][q] = {r[2 * j], r[2 * j + 1]};
    }
  for (int t = 0; t < T; ++t) layout::template forward_odd<real_t>(v[t], t, twiddle);
  sub_transforms(v, false);
  const auto ref = test::naive_dft(xl, false);
  std::vector<cld> got(n);
  for (int t = 0; t < T; ++t)
    for (int q = 0; q < P; ++q) got[layout::freq_index(t, q)] = test::to_cld(v[t][q]);
  const double bound = test::fft_error_bound<real_t>(log2_exact(n));
  CHECK(test::relative_l2(got, ref) <= bound);

  // inverse of the exact spectrum
  for (int t = 0; t < T; ++t)
    for (int q = 0; q < P; ++q) {
      const cld X = ref[layout::freq_index(t, q)];
      v[t][q] = {real_t(X.real()), real_t(X.imag())};
    }
  sub_transforms(v, true);
  for (int t = 0; t < T; ++t) layout::template inverse_odd<real_t>(v[t], t, twiddle);
  std::vector<cld> back(n), expect(n);
  for (int t = 0; t < T; ++t)
    for (int q = 0; q < P; ++q) back[layout::time_index(t, q)] = test::to_cld(v[t][q]);
  for (int i = 0; i < n; ++i) expect[i] = xl[i] * (long double)n;
  CHECK(test::relative_l2(back, expect) <= bound);
}

template <typename real_t, int R>
void check_odd_dft() {
  const auto seed = test::fresh_seed();
  INFO("R = " << R << ", seed = " << seed);
  const auto r = test::random_reals<real_t>(2 * R, seed);
  array_t<complex_t<real_t>, R> x;
  std::vector<cld> xl(R);
  for (int i = 0; i < R; ++i) {
    x[i] = {r[2 * i], r[2 * i + 1]};
    xl[i] = cld(r[2 * i], r[2 * i + 1]);
  }
  const double bound = test::fft_error_bound<real_t>(3);
  CHECK(test::relative_l2(as_vector(odd_dft_t<real_t, R, false>{}(x)), test::naive_dft(xl, false)) <= bound);
  CHECK(test::relative_l2(as_vector(odd_dft_t<real_t, R, true>{}(x)), test::naive_dft(xl, true)) <= bound);
}

}  // namespace

TEMPLATE_TEST_CASE("odd_dft_t and the mixed-radix step match a long-double DFT", "[fft][thread]", float, double) {
  check_odd_dft<TestType, 3>();
  check_odd_dft<TestType, 5>();
  check_mixed_step<TestType, 3, 16, 2>();   // 48, the strided pass's shape
  check_mixed_step<TestType, 5, 16, 4>();   // 80
  check_mixed_step<TestType, 3, 32, 4>();   // 96
  check_mixed_step<TestType, 5, 32, 8>();   // 160
  check_mixed_step<TestType, 3, 64, 8>();   // 192
  check_mixed_step<TestType, 5, 64, 16>();  // 320
  check_mixed_step<TestType, 5, 16, 1>();   // one thread a column
  check_mixed_step<TestType, 3, 64, 64>();  // one point a thread
}

TEST_CASE("mixed lengths: the odd part, the power of two and the compiled set", "[fft][thread]") {
  CHECK(odd_part(160) == 5);
  CHECK(pow2_part(160) == 32);
  CHECK(odd_part(256) == 1);
  CHECK(is_mixed_length(48));
  CHECK_FALSE(is_mixed_length(24));  // M < 16
  CHECK_FALSE(is_mixed_length(112));  // 7 x 16
  CHECK_FALSE(is_mixed_length(64));
  for (int n : mixed_lengths) CHECK(is_mixed_length(n));
  // the dispatch reaches each compiled length with its own value, and nothing else
  for (int n : mixed_lengths) {
    int got = 0;
    dispatch_mixed(n, [&](auto len) { got = decltype(len)::value; });
    CHECK(got == n);
  }
  CHECK_THROWS_AS(dispatch_mixed(144, [](auto) {}), std::invalid_argument);
  CHECK(mixed_lengths_text() == "48, 80, 96, 160, 192, 320");
}
