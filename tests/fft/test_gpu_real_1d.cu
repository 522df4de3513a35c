// GPU batched R2C/C2R against the host transforms in double and against cuFFT, every power
// of two 4..4096, batches 1, 3 and a large odd count, fresh random data, poisoned outputs; C2R's
// staged and flat kernels at n = 128 by batch; the twiddle table the kernels read (host side).
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>

#include <cufft.h>

#include <algorithm>
#include <cmath>

#include "fft/host/real_1d_host.hpp"
#include "fft/kernels/real_1d_policy.hpp"
#include "fft/plan/dispatch.hpp"
#include "fft/plan/real_1d_plan.hpp"
#include "fft/thread/twiddle.hpp"
#include "support/gpu.hpp"
#include "support/reference.hpp"

using namespace gpuconv;
using cfloat = fft::complex_t<float>;

namespace {

using test::check_cufft;

struct cufft_plan : test::cufft_handle {
  cufft_plan(int n, int batch, cufftType type) { check_cufft(cufftPlan1d(&h, n, type, batch), "cufftPlan1d"); }
};

// cuFFT's C2R of `spectrum` (batch rows of n/2 + 1 complex; cuFFT may overwrite it: pass a copy)
std::vector<float> cufft_inverse(int n, int batch, cfloat* spectrum) {
  device_buffer<float> y((std::size_t)n * batch);
  cufft_plan ref(n, batch, CUFFT_C2R);
  check_cufft(cufftExecC2R(ref.h, reinterpret_cast<cufftComplex*>(spectrum), y.data()), "cufftExecC2R");
  GPUCONV_CUDA(cudaDeviceSynchronize());
  return test::download(y);
}

std::vector<float> flatten(const std::vector<cfloat>& v) {
  std::vector<float> f(2 * v.size());
  for (std::size_t i = 0; i < v.size(); ++i) { f[2 * i] = v[i].re; f[2 * i + 1] = v[i].im; }
  return f;
}

}  // namespace

TEST_CASE("GPU batched R2C and C2R match the host in double and cuFFT", "[fft][gpu]") {
  GPUCONV_REQUIRE_GPU();
  const int n = GENERATE(4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096);
  const int batch = GENERATE_COPY(1, 3, (1 << 21) / n + 1);  // the last is large and odd
  const auto seed = test::fresh_seed();
  INFO("n = " << n << ", batch = " << batch << ", seed = " << seed);
  const int H = n / 2 + 1;
  const std::size_t reals = (std::size_t)n * batch, complexes = (std::size_t)H * batch;
  const double bound = test::fft_error_bound<float>(fft::log2_exact(n), 2);

  // ---- R2C ----
  const auto x = test::random_reals<float>(reals, seed);
  auto d_x = test::upload(x);
  device_buffer<cfloat> d_X(complexes), d_Xc(complexes);
  test::poison(d_X);
  test::poison(d_Xc);
  fft::real_1d_plan plan(n, batch);
  plan.forward(d_x.data(), d_X.data());
  GPUCONV_CUDA(cudaDeviceSynchronize());
  {
    cufft_plan ref(n, batch, CUFFT_R2C);
    check_cufft(cufftExecR2C(ref.h, d_x.data(), reinterpret_cast<cufftComplex*>(d_Xc.data())), "cufftExecR2C");
    GPUCONV_CUDA(cudaDeviceSynchronize());
  }
  const auto X = test::download(d_X), Xc = test::download(d_Xc);
  REQUIRE(test::all_finite(flatten(X)));  // every output element was written

  std::vector<double> xd(x.begin(), x.end());
  std::vector<fft::complex_t<double>> Xd(complexes);
  fft::host::real_1d_plan<double>(n, batch, 2).forward(xd.data(), Xd.data());
  CHECK(test::relative_l2(X, Xd) <= bound);
  CHECK(test::relative_l2(X, Xc) <= 2 * bound);

  // ---- C2R, on a Hermitian spectrum (the double-precision one, rounded) ----
  std::vector<cfloat> S(complexes);
  for (std::size_t i = 0; i < complexes; ++i) S[i] = {float(Xd[i].re), float(Xd[i].im)};
  auto d_S = test::upload(S);
  auto d_Sc = test::upload(S);  // cuFFT's C2R may overwrite its input
  device_buffer<float> d_y(reals);
  test::poison(d_y);
  plan.inverse(d_S.data(), d_y.data());
  GPUCONV_CUDA(cudaDeviceSynchronize());
  const auto y = test::download(d_y), yc = cufft_inverse(n, batch, d_Sc.data());
  REQUIRE(test::all_finite(y));
  std::vector<fft::complex_t<double>> Sd(complexes);
  for (std::size_t i = 0; i < complexes; ++i) Sd[i] = {S[i].re, S[i].im};
  std::vector<double> yd(reals);
  fft::host::real_1d_plan<double>(n, batch, 2).inverse(Sd.data(), yd.data());
  CHECK(test::relative_l2(y, yd) <= bound);
  CHECK(test::relative_l2(y, yc) <= 2 * bound);
  // and the round trip gets x back (times n)
  std::vector<double> nx(reals);
  for (std::size_t i = 0; i < reals; ++i) nx[i] = double(x[i]) * n;
  CHECK(test::relative_l2(y, nx) <= 2 * bound);
}

TEST_CASE("GPU C2R's staged kernel (small batches) and flat kernel (large) both match cuFFT", "[fft][gpu]") {
  GPUCONV_REQUIRE_GPU();
  constexpr int n = 128;  // GPUCONV_REAL_1D_STAGED_C2R_SIZES' default
  if constexpr (!fft::has_staged_c2r<n>) SKIP("no staged C2R kernel at n = 128 in this build");
  const int H = n / 2 + 1;
  bool ran[2] = {false, false};  // flat, staged
  // batch 1 is one group (staged on any device); 200001 rows are 6251 flat groups, more than a
  // wave of any current GPU (flat); 16385 (the 3D FFT's 128^3 row pass + 1) in between
  for (const int batch : {1, 3, 16385, 200001}) {
    const auto seed = test::fresh_seed();
    fft::real_1d_plan plan(n, batch);
    INFO("batch = " << batch << ", staged = " << plan.c2r_staged() << ", seed = " << seed);
    ran[plan.c2r_staged()] = true;
    const std::size_t reals = (std::size_t)n * batch, complexes = (std::size_t)H * batch;
    const auto x = test::random_reals<float>(reals, seed);
    auto d_x = test::upload(x);
    device_buffer<cfloat> d_S(complexes), d_Sc(complexes);
    {  // a Hermitian spectrum: cuFFT's R2C of the reals, copied for cuFFT's C2R (it may overwrite it)
      cufft_plan ref(n, batch, CUFFT_R2C);
      check_cufft(cufftExecR2C(ref.h, d_x.data(), reinterpret_cast<cufftComplex*>(d_S.data())), "cufftExecR2C");
      GPUCONV_CUDA(cudaMemcpy(d_Sc.data(), d_S.data(), complexes * sizeof(cfloat), cudaMemcpyDeviceToDevice));
    }
    device_buffer<float> d_y(reals);
    test::poison(d_y);
    plan.inverse(d_S.data(), d_y.data());
    GPUCONV_CUDA(cudaDeviceSynchronize());
    const auto y = test::download(d_y), yc = cufft_inverse(n, batch, d_Sc.data());
    REQUIRE(test::all_finite(y));  // every output element was written
    const double bound = test::fft_error_bound<float>(fft::log2_exact(n), 2);
    CHECK(test::relative_l2(y, yc) <= 2 * bound);
    std::vector<double> nx(reals);  // the round trip gives x back (times n)
    for (std::size_t i = 0; i < reals; ++i) nx[i] = double(x[i]) * n;
    CHECK(test::relative_l2(y, nx) <= 4 * bound);
  }
  CHECK(ran[0]);
  CHECK(ran[1]);
}

TEST_CASE("GPU plan rejects bad shapes and pointers", "[fft]") {
  CHECK_THROWS_AS(fft::real_1d_plan(2, 1), std::invalid_argument);
  CHECK_THROWS_AS(fft::real_1d_plan(8192, 1), std::invalid_argument);
  CHECK_THROWS_AS(fft::real_1d_plan(100, 1), std::invalid_argument);
  CHECK_THROWS_AS(fft::real_1d_plan(64, 0), std::invalid_argument);
}

TEST_CASE("GPU plan rejects null and misaligned pointers", "[fft][gpu]") {
  GPUCONV_REQUIRE_GPU();
  fft::real_1d_plan plan(64, 4);
  device_buffer<float> x(64 * 4 + 4);
  device_buffer<cfloat> X(33 * 4 + 2);
  CHECK_THROWS_AS(plan.forward(nullptr, X.data()), std::invalid_argument);
  CHECK_THROWS_AS(plan.forward(x.data() + 1, X.data()), std::invalid_argument);
  CHECK_THROWS_AS(plan.inverse(X.data() + 1, x.data()), std::invalid_argument);
}

TEST_CASE("1D plan's twiddle table: W_n^k, then each Stockham pass's W_{Ns R}^{j r} in read order", "[fft]") {
  // host side only: the tables the kernels read (R2C's, and C2R's: its passes may differ),
  // against the roots in double
  const int n = GENERATE(4, 64, 128, 256, 1024, 2048, 4096);
  const bool inverse = GENERATE(false, true);
  CAPTURE(n, inverse);
  const auto table = fft::real_1d_plan::twiddles(n, inverse);
  REQUIRE(table.size() >= std::size_t(n));
  double worst = 0;
  auto check = [&](std::size_t at, long long k, long long m) {
    const auto w = fft::unit_root(k, m);
    worst = std::max(worst, std::hypot(double(table[at].re) - w.re, double(table[at].im) - w.im));
  };
  for (int k = 0; k < n; ++k) check(std::size_t(k), k, n);
  // the passes' part (fft/block/stockham.cuh): after the first pass (radix P), Ns = P, P*R, ...
  // with R = min(N / Ns, P); entries (r - 1) * Ns + j, 1 <= r < R, j < Ns
  std::size_t at = std::size_t(n);
  fft::dispatch_pow2<4>(n, [&](auto len) {
    constexpr int nn = decltype(len)::value;
    const bool pass_tables = inverse ? fft::real_1d_policy<nn, true>::pass_tables : fft::real_1d_policy<nn>::pass_tables;
    if (!pass_tables) return;
    const int N = n / 2,
              P = inverse ? fft::real_1d_policy<nn, true>::items_per_thread : fft::real_1d_policy<nn>::items_per_thread;
    for (int ns = P; ns < N; ns *= std::min(N / ns, P)) {
      const int R = std::min(N / ns, P);
      for (int r = 1; r < R; ++r)
        for (int j = 0; j < ns; ++j) check(at++, (long long)j * r, (long long)ns * R);
    }
  });
  CHECK(table.size() == at);  // nothing more, nothing less
  CHECK(worst <= 1e-7);
  // the sizes whose rows span a warp or more read per-pass tables (policy::pass_tables)
  if (n >= 2048) CHECK(table.size() > std::size_t(n));
  CHECK_THROWS_AS(fft::real_1d_plan::twiddles(100), std::invalid_argument);
}
