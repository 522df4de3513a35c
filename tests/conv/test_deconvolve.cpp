// Richardson-Lucy (conv/deconvolve.hpp) against a reference written here in double: the same
// algorithm term by term with a direct 3D convolution, on a small synthetic stack (point
// beads on a flat background, blurred by a known gaussian PSF, Poisson-like noise from a
// fixed seed). Checks: our float result equals the double reference within a stated bound,
// the restored beads are narrower than the observed ones and stay where they are; with and
// without the TV regulariser; the CPU backend always, the CUDA backend on a GPU ([gpu]).
#include <catch2/catch_test_macros.hpp>

#include <array>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "conv/backend3d.hpp"
#include "conv/deconvolve.hpp"
#include "conv/semantics.hpp"
#include "fft/device/buffer.hpp"
#include "fft/device/cuda_check.hpp"

using namespace gpuconv;
using namespace gpuconv::conv;

namespace {

struct shape3 {
  int d, h, w;
  std::size_t voxels() const { return std::size_t(d) * h * w; }
  std::size_t at(int z, int y, int x) const { return (std::size_t(z) * h + y) * w + x; }
};

// 'same' convolution (or correlation: the kernel flipped) in double, boundary rule b.
std::vector<double> direct(const std::vector<double>& in, shape3 s, const std::vector<double>& k, shape3 ks, bool corr,
                           boundary b) {
  std::vector<double> out(s.voxels());
  const int oz = (ks.d - 1) / 2, oy = (ks.h - 1) / 2, ox = (ks.w - 1) / 2;
  for (int z = 0; z < s.d; ++z)
    for (int y = 0; y < s.h; ++y)
      for (int x = 0; x < s.w; ++x) {
        double sum = 0;
        for (int a = 0; a < ks.d; ++a) {
          const int zz = border_index(z + oz - a, s.d, b);
          for (int c = 0; c < ks.h; ++c) {
            const int yy = border_index(y + oy - c, s.h, b);
            for (int e = 0; e < ks.w; ++e) {
              const int xx = border_index(x + ox - e, s.w, b);
              const double kv = corr ? k[ks.voxels() - 1 - ks.at(a, c, e)] : k[ks.at(a, c, e)];
              if (zz >= 0 && yy >= 0 && xx >= 0) sum += kv * in[s.at(zz, yy, xx)];
            }
          }
        }
        out[s.at(z, y, x)] = sum;
      }
  return out;
}

// deconvolve.hpp's algorithm in double.
std::vector<double> reference_rl(const std::vector<float>& observed, shape3 s, const std::vector<double>& psf,
                                 shape3 ks, int iterations, double lambda, double epsilon, boundary b) {
  std::vector<double> y(s.voxels()), u(s.voxels());
  double top = 0;
  for (std::size_t i = 0; i < y.size(); ++i) top = std::max(top, y[i] = std::max(0.0, double(observed[i])));
  const double eps = epsilon * top;
  u = y;
  for (int k = 0; k < iterations; ++k) {
    std::vector<double> r = direct(u, s, psf, ks, false, b);
    for (std::size_t i = 0; i < r.size(); ++i) r[i] = r[i] > eps ? y[i] / r[i] : 0;
    const std::vector<double> c = direct(r, s, psf, ks, true, b);
    std::vector<double> next(u.size());
    auto normal = [&](int z, int yy, int x, int axis) {
      const double v = u[s.at(z, yy, x)];
      const double gx = x + 1 < s.w ? u[s.at(z, yy, x + 1)] - v : 0;
      const double gy = yy + 1 < s.h ? u[s.at(z, yy + 1, x)] - v : 0;
      const double gz = z + 1 < s.d ? u[s.at(z + 1, yy, x)] - v : 0;
      const double g[3] = {gx, gy, gz};
      return g[axis] / std::sqrt(gx * gx + gy * gy + gz * gz + eps * eps);
    };
    for (int z = 0; z < s.d; ++z)
      for (int yy = 0; yy < s.h; ++yy)
        for (int x = 0; x < s.w; ++x) {
          double d = 1;
          if (lambda > 0) {
            double div = normal(z, yy, x, 0) + normal(z, yy, x, 1) + normal(z, yy, x, 2);
            if (x > 0) div -= normal(z, yy, x - 1, 0);
            if (yy > 0) div -= normal(z, yy - 1, x, 1);
            if (z > 0) div -= normal(z - 1, yy, x, 2);
            d = 1 - lambda * div;
          }
          const std::size_t i = s.at(z, yy, x);
          next[i] = std::max(0.0, u[i] * c[i] / d);
        }
    u = next;
  }
  return u;
}

struct beads_case {
  shape3 s{20, 32, 32};
  shape3 ks{11, 9, 9};  // gaussian sigma (z, y, x) = (1.3, 1.0, 1.0), 2 round(4 sigma) + 1 taps
  std::vector<double> psf;
  std::vector<float> psf_f, observed;
  std::vector<std::array<int, 3>> beads{{{6, 8, 9}}, {{10, 20, 22}}, {{13, 9, 24}}, {{9, 24, 8}}};

  beads_case() {
    const double sig[3] = {1.3, 1.0, 1.0};
    double sum = 0;
    for (int z = 0; z < ks.d; ++z)
      for (int y = 0; y < ks.h; ++y)
        for (int x = 0; x < ks.w; ++x) {
          const double dz = (z - ks.d / 2) / sig[0], dy = (y - ks.h / 2) / sig[1], dx = (x - ks.w / 2) / sig[2];
          psf.push_back(std::exp(-0.5 * (dz * dz + dy * dy + dx * dx)));
          sum += psf.back();
        }
    for (double& v : psf) psf_f.push_back(float(v /= sum));
    std::vector<double> truth(s.voxels(), 5.0);  // a flat background of 5
    for (const auto& b : beads) truth[s.at(b[0], b[1], b[2])] += 4000;
    const std::vector<double> blurred = direct(truth, s, psf, ks, false, boundary::reflect);
    // Poisson-like noise: blurred + sqrt(blurred) * N(0, 1), Box-Muller on mt19937's raw output
    // (the same numbers on every standard library)
    std::mt19937 rng(20261123);
    auto uniform = [&] { return (double(rng()) + 1.0) / 4294967297.0; };
    for (double v : blurred) {
      const double n = std::sqrt(-2 * std::log(uniform())) * std::cos(2 * M_PI * uniform());
      observed.push_back(float(std::max(0.0, v + std::sqrt(v) * n)));
    }
  }

  // RMS width along x and the centroid of the bead at b, over a window of +-4 voxels in x
  // on the bead's row, the local background (the window's minimum) removed.
  template <typename V>
  std::pair<double, double> width_and_centre(const V& u, const std::array<int, 3>& b) const {
    double lo = 1e300;
    for (int dx = -4; dx <= 4; ++dx) lo = std::min(lo, double(u[s.at(b[0], b[1], b[2] + dx)]));
    double m0 = 0, m1 = 0, m2 = 0;
    for (int dx = -4; dx <= 4; ++dx) {
      const double v = double(u[s.at(b[0], b[1], b[2] + dx)]) - lo;
      m0 += v;
      m1 += v * dx;
      m2 += v * dx * dx;
    }
    const double c = m1 / m0;
    return {std::sqrt(m2 / m0 - c * c), c};
  }
};

double relative_l2(const std::vector<float>& a, const std::vector<double>& b) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    num += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    den += b[i] * b[i];
  }
  return std::sqrt(num / den);
}

void check_against_reference(backend device, float lambda, std::size_t memory_limit = 0) {
  const beads_case bc;
  constexpr int iterations = 20;
  deconvolve_options o;
  o.iterations = iterations;
  o.tv_lambda = lambda;
  o.device = device;
  o.memory_limit = memory_limit;
  richardson_lucy rl(bc.s.d, bc.s.h, bc.s.w, bc.psf_f.data(), bc.ks.d, bc.ks.h, bc.ks.w, o);
  REQUIRE(rl.selected_backend() == device);
  std::vector<float> ours(bc.s.voxels());
  int calls = 0;
  CHECK(rl.run(bc.observed.data(), ours.data(), [&](int done, int total) {
    CHECK(done == ++calls);
    CHECK(total == iterations);
    return true;
  }) == iterations);
  const std::vector<double> ref =
      reference_rl(bc.observed, bc.s, bc.psf, bc.ks, iterations, lambda, o.epsilon, boundary::reflect);
  // fp32 FFT convolutions (~1e-6 relative each) through 20 multiplicative updates: measured
  // 2.7e-6 (RL) and 3.2e-6 (RL-TV) on the CPU backend; the bound is the 1e-5
  const double err = relative_l2(ours, ref);
  CAPTURE(err);
  CHECK(err < 1e-5);
  for (float v : ours) REQUIRE(v >= 0);
  for (const auto& b : bc.beads) {
    const auto [w_obs, c_obs] = bc.width_and_centre(bc.observed, b);
    const auto [w_out, c_out] = bc.width_and_centre(ours, b);
    CAPTURE(b[0], b[1], b[2], w_obs, w_out, c_obs, c_out);
    // sharper (the truth is a point; the PSF's sigma_x is 1.0): measured 0.55-0.64 of the
    // observed width after 20 iterations
    CHECK(w_out < 0.7 * w_obs);
    CHECK(std::abs(c_out) < 0.25);      // where they were
  }
}

}  // namespace

TEST_CASE("richardson_lucy: CPU backend equals the double reference; beads sharpen in place", "[conv][deconvolve]") {
  SECTION("plain RL") { check_against_reference(backend::cpu, 0.f); }
  SECTION("RL-TV") { check_against_reference(backend::cpu, 0.004f); }
}

TEST_CASE("richardson_lucy: CUDA backend equals the double reference", "[conv][deconvolve][gpu]") {
  if (!cuda_device_available()) SKIP("no CUDA device present");
  // the PSF is rank-1: the separable method, with the ratio (and without TV the update) folded
  // into its last pass; 150 KB per plan: bands of two output slices (the folded steps' operands
  // offset per band)
  SECTION("plain RL") { check_against_reference(backend::cuda, 0.f); }
  SECTION("RL-TV") { check_against_reference(backend::cuda, 0.004f); }
  SECTION("plain RL in bands") { check_against_reference(backend::cuda, 0.f, 150 * 1024); }
  SECTION("RL-TV in bands") { check_against_reference(backend::cuda, 0.004f, 150 * 1024); }
}

// automatic: the FFT tiles' slice path (32^3 tiles); multipass: fft::real_3d_plan's route (both
// with the steps' own kernels)
TEST_CASE("richardson_lucy: CUDA backend with a PSF that is not rank-1 (FFT tiles, both routes)",
          "[conv][deconvolve][gpu]") {
  if (!cuda_device_available()) SKIP("no CUDA device present");
  const beads_case bc;
  std::vector<double> psf = bc.psf;
  double sum = 0;
  for (std::size_t i = 0; i < psf.size(); ++i) sum += psf[i] *= 1 + 0.3 * double(i % 7) / 7;  // not a product
  std::vector<float> psf_f;
  for (double& v : psf) psf_f.push_back(float(v /= sum));
  for (cuda_path path : {cuda_path::automatic, cuda_path::multipass})
    for (float lambda : {0.f, 0.004f}) {
      deconvolve_options o;
      o.iterations = 8;
      o.tv_lambda = lambda;
      o.device = backend::cuda;
      o.path = path;
      richardson_lucy rl(bc.s.d, bc.s.h, bc.s.w, psf_f.data(), bc.ks.d, bc.ks.h, bc.ks.w, o);
      std::vector<float> ours(bc.s.voxels());
      REQUIRE(rl.run(bc.observed.data(), ours.data()) == o.iterations);
      const double err = relative_l2(ours, reference_rl(bc.observed, bc.s, psf, bc.ks, o.iterations, lambda, o.epsilon,
                                                        boundary::reflect));
      CAPTURE(int(path), lambda, err);
      CHECK(err < 1e-5);
      for (float v : ours) REQUIRE(v >= 0);
    }
  // the route each takes on this stack
  plan_options po;
  po.device = backend::cuda;
  po.semantics.border = boundary::reflect;
  CHECK(plan3d(bc.s.d, bc.s.h, bc.s.w, 1, psf_f.data(), bc.ks.d, bc.ks.h, bc.ks.w, po).path() == cuda_path::fused);
  po.path = cuda_path::multipass;
  CHECK(plan3d(bc.s.d, bc.s.h, bc.s.w, 1, psf_f.data(), bc.ks.d, bc.ks.h, bc.ks.w, po).path() == cuda_path::multipass);
}

TEST_CASE("plan3d: RL steps folded into the separable method's store equal the steps' own kernels bit for bit",
          "[conv][deconvolve][gpu]") {
  if (!cuda_device_available()) SKIP("no CUDA device present");
  const beads_case bc;
  const std::size_t n = bc.s.voxels();
  // u: the observed stack; y: another stack with zeros and negatives (the guard's branches)
  std::vector<float> y(n);
  for (std::size_t i = 0; i < n; ++i) y[i] = i % 11 == 0 ? 0.f : i % 13 == 0 ? -3.f : bc.observed[(i * 7) % n] + 1;
  device_buffer<float> d_u(n), d_y(n), d_b(n), d_folded(n), d_max(1);
  REQUIRE(cudaMemcpy(d_u.data(), bc.observed.data(), n * 4, cudaMemcpyHostToDevice) == cudaSuccess);
  REQUIRE(cudaMemcpy(d_y.data(), y.data(), n * 4, cudaMemcpyHostToDevice) == cudaSuccess);
  rl_device::max_nonnegative(d_y.data(), (long long)n, d_max.data(), nullptr);
  // eps = 1e-6 * max(y) keeps every sum here above it; 0.02 of max(y) sends the border sums of
  // the zero boundary below it (the guard's zero)
  for (float epsilon : {1e-6f, 0.02f})
    for (boundary b : {boundary::reflect, boundary::zero})
      for (std::size_t cap : {std::size_t(0), std::size_t(150 * 1024)}) {
        CAPTURE(epsilon, int(b), cap);
        plan_options po;
        po.device = backend::cuda;
        po.semantics.border = b;
        po.memory_limit = cap;
        plan3d p(bc.s.d, bc.s.h, bc.s.w, 1, bc.psf_f.data(), bc.ks.d, bc.ks.h, bc.ks.w, po);
        REQUIRE(p.path() == cuda_path::separable);
        auto& impl = plan3d_access::of(p);
        std::vector<float> separate(n), folded(n);
        // ratio: the convolution, then ratio_kernel on it; and folded
        p.execute_device(d_u.data(), d_b.data());
        rl_device::ratio(d_y.data(), d_b.data(), (long long)n, d_max.data(), epsilon, nullptr);
        REQUIRE(impl.execute_device_step(d_u.data(), d_folded.data(),
                                         {store_step::kind::ratio, d_y.data(), d_max.data(), epsilon}, nullptr));
        REQUIRE(cudaMemcpy(separate.data(), d_b.data(), n * 4, cudaMemcpyDeviceToHost) == cudaSuccess);
        REQUIRE(cudaMemcpy(folded.data(), d_folded.data(), n * 4, cudaMemcpyDeviceToHost) == cudaSuccess);
        std::size_t zeros = 0, differ = 0;
        for (std::size_t i = 0; i < n; ++i) {
          zeros += separate[i] == 0;
          differ += std::memcmp(&separate[i], &folded[i], 4) != 0;
        }
        CHECK(differ == 0);
        CHECK(zeros > 0);  // y's zeros at least
        // update: u_next = max(y * c, 0) (y as the estimate: its negatives give the clamp)
        p.execute_device(d_u.data(), d_b.data());
        rl_device::update(d_y.data(), d_b.data(), d_b.data(), bc.s.d, bc.s.h, bc.s.w, 0.f, d_max.data(), epsilon,
                          nullptr);
        REQUIRE(impl.execute_device_step(d_u.data(), d_folded.data(), {store_step::kind::update, d_y.data()}, nullptr));
        REQUIRE(cudaMemcpy(separate.data(), d_b.data(), n * 4, cudaMemcpyDeviceToHost) == cudaSuccess);
        REQUIRE(cudaMemcpy(folded.data(), d_folded.data(), n * 4, cudaMemcpyDeviceToHost) == cudaSuccess);
        differ = 0;
        for (std::size_t i = 0; i < n; ++i) differ += std::memcmp(&separate[i], &folded[i], 4) != 0;
        CHECK(differ == 0);
      }
  // the FFT tiles do not fold (either route): false, nothing written
  for (int tile : {16, 32}) {
    plan_options po;
    po.device = backend::cuda;
    po.tile = tile;
    plan3d tiles(bc.s.d, bc.s.h, bc.s.w, 1, bc.psf_f.data(), bc.ks.d, bc.ks.h, bc.ks.w, po);
    REQUIRE(tiles.path() == (tile == 16 ? cuda_path::multipass : cuda_path::fused));
    CHECK_FALSE(plan3d_access::of(tiles).execute_device_step(d_u.data(), d_folded.data(),
                                                             {store_step::kind::update, d_y.data()}, nullptr));
  }
}

TEST_CASE("richardson_lucy: bad options and PSFs are refused; a stop request ends the run", "[conv][deconvolve]") {
  const std::vector<float> psf(27, 1.f / 27);
  deconvolve_options o;
  o.device = backend::cpu;
  CHECK_NOTHROW(richardson_lucy(4, 5, 6, psf.data(), 3, 3, 3, o));
  auto refused = [&](deconvolve_options bad, const std::vector<float>& k = std::vector<float>(27, 1.f)) {
    CHECK_THROWS_AS(richardson_lucy(4, 5, 6, k.data(), 3, 3, 3, bad), std::invalid_argument);
  };
  deconvolve_options bad = o;
  bad.iterations = 0;
  refused(bad);
  bad = o;
  bad.tv_lambda = 1.f / 6;
  refused(bad);
  bad = o;
  bad.tv_lambda = -0.1f;
  refused(bad);
  bad = o;
  bad.epsilon = 0;
  refused(bad);
  std::vector<float> negative(27, 0.1f);
  negative[4] = -0.01f;
  refused(o, negative);
  refused(o, std::vector<float>(27, 0.f));
  std::vector<float> nan(27, 0.1f);
  nan[3] = NAN;
  refused(o, nan);

  // unnormalised PSF: scaled to sum 1 (the same result as the normalised one); a stop after 2
  o.iterations = 5;
  std::vector<float> y(4 * 5 * 6), a(y.size()), b(y.size());
  for (std::size_t i = 0; i < y.size(); ++i) y[i] = float(1 + (i * 7) % 11);
  richardson_lucy(4, 5, 6, psf.data(), 3, 3, 3, o).run(y.data(), a.data());
  const std::vector<float> scaled(27, 2.f);
  richardson_lucy(4, 5, 6, scaled.data(), 3, 3, 3, o).run(y.data(), b.data());
  for (std::size_t i = 0; i < a.size(); ++i) CHECK(std::abs(a[i] - b[i]) <= 1e-5f * std::abs(a[i]));
  CHECK(richardson_lucy(4, 5, 6, psf.data(), 3, 3, 3, o).run(y.data(), b.data(), [](int done, int) { return done < 2; }) == 2);
  CHECK_THROWS_AS(richardson_lucy(4, 5, 6, psf.data(), 3, 3, 3, o).run(y.data(), y.data()), std::invalid_argument);

  // an all-zero (or negative) observation gives zeros, not NaN
  std::vector<float> zero(y.size(), -1.f);
  o.tv_lambda = 0.01f;
  richardson_lucy(4, 5, 6, psf.data(), 3, 3, 3, o).run(zero.data(), a.data());
  for (float v : a) CHECK(v == 0.f);
}
