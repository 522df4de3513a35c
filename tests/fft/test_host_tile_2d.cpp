// The host 2D tile FFT (the CPU backend's FFT method) against a long-double DFT, for each
// instruction set's loops this machine can run (the others skip visibly): the spectrum
// (rows kv, lanes ku <= th/2) and the round trip inverse(forward(x)) = th * tw * x.
// Bound: Higham's for log2(th) + log2(tw) levels plus 2 for the real wrapper, as for 1D.
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>

#include <array>
#include <cstring>

#include "fft/host/real_2d_tile.hpp"
#include "support/reference.hpp"

using namespace gpuconv;
using test::cld;

namespace {

bool runs_here(const fft::host::tile_kernels& k) {
  if (&k == &fft::host::isa_base::kernels) return true;
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (&k == &fft::host::isa_v3::kernels) return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
#else
  return false;
#endif
}

}  // namespace

TEST_CASE("host 2D tile FFT matches a long-double DFT, every ISA's loops", "[fft][host]") {
  const fft::host::tile_kernels* isa =
      GENERATE(&fft::host::isa_v4::kernels, &fft::host::isa_v3::kernels, &fft::host::isa_base::kernels);
  const auto shape = GENERATE(std::array<int, 2>{4, 16}, std::array<int, 2>{16, 16}, std::array<int, 2>{32, 64},
                              std::array<int, 2>{128, 32}, std::array<int, 2>{64, 128});
  if (!runs_here(*isa)) SKIP(std::string("this CPU cannot run the ") + isa->isa + " loops");
  const int th = shape[0], tw = shape[1];
  const auto seed = test::fresh_seed();
  INFO("isa " << isa->isa << ", tile " << th << " x " << tw << ", seed " << seed);
  const auto x = test::random_reals<float>(std::size_t(th) * tw, seed);
  fft::host::real_2d_tile_plan plan(th, tw, *isa);
  auto ws = plan.make_workspace();
  auto row = [&](int u) { return (u & 1 ? ws.z_im.data() : ws.z_re.data()) + std::size_t(u >> 1) * tw; };
  for (int u = 0; u < th; ++u) std::memcpy(row(u), x.data() + std::size_t(u) * tw, sizeof(float) * tw);
  plan.forward(ws);

  // reference: DFT along each row, then along each column
  std::vector<std::vector<cld>> rows(th);
  for (int u = 0; u < th; ++u) {
    std::vector<cld> r(tw);
    for (int v = 0; v < tw; ++v) r[v] = x[std::size_t(u) * tw + v];
    rows[u] = test::naive_dft(r, false);
  }
  std::vector<cld> want, got;
  for (int kv = 0; kv < tw; ++kv) {
    std::vector<cld> c(th);
    for (int u = 0; u < th; ++u) c[u] = rows[u][kv];
    const auto C = test::naive_dft(c, false);
    for (int ku = 0; ku <= th / 2; ++ku) {
      want.push_back(C[ku]);
      const std::size_t i = std::size_t(kv) * plan.lanes() + ku;
      got.emplace_back(ws.s_re[i], ws.s_im[i]);
    }
  }
  const double bound = test::fft_error_bound<float>(fft::log2_exact(th) + fft::log2_exact(tw), 2);
  CHECK(test::relative_l2(got, want) <= bound);
  for (int kv = 0; kv < tw; ++kv)  // the padding lanes stay zero
    for (int ku = th / 2 + 1; ku < plan.lanes(); ++ku) REQUIRE(ws.s_re[std::size_t(kv) * plan.lanes() + ku] == 0.f);

  plan.inverse(ws);
  std::vector<double> back, scaled;
  for (int u = 0; u < th; ++u)
    for (int v = 0; v < tw; ++v) {
      back.push_back(row(u)[v]);
      scaled.push_back(double(th) * tw * x[std::size_t(u) * tw + v]);
    }
  CHECK(test::relative_l2(back, scaled) <= 2 * bound);
}
