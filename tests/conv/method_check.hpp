// The backends' methods (conv/method.hpp) forced one by one against the direct double-precision
// reference: shared by test_cpu_methods.cpp (the CPU's direct, separable, FFT) and
// test_gpu_methods.cpp (the CUDA backend's direct and separable).
// float: ||out - ref|| / || |k| * |x| || <= tolerance (1e-5 for the methods that sum kh * kw or
// kh + kw float products, ~K * 6e-8 relative; 2e-5 for the CPU FFT, 4 x its bound on 128^2
// tiles), each output's scale being at least ||k||_2 rms(x) as in test_conv_plan.cpp.
// uint8/uint16: the reference rounded half to even and saturated, except pixels within that
// tolerance of the scale of a half step, which may round either way (and past the type's range by
// more than it, exactly saturated, however large the kernel's taps); where the CPU's separable
// method runs uint8 in fixed point (conv/separable_vnni.hpp), within its error bound too.
#pragma once
#include <catch2/catch_test_macros.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>

#include "conv/method.hpp"
#include "conv/plan.hpp"
#include "conv/reference.hpp"
#include "conv/separable_vnni.hpp"
#include "fft/host/isa.hpp"
#include "support/reference.hpp"

namespace gpuconv::test {

using namespace gpuconv::conv;

inline const std::array<boundary, 6> all_borders{boundary::zero, boundary::constant, boundary::replicate,
                                                 boundary::reflect, boundary::reflect101, boundary::wrap};

// kernels: `count` kernels of kh x kw, rank-1 when `separable`
inline std::vector<float> make_kernels(int count, int kh, int kw, bool separable, std::uint64_t seed) {
  if (!separable) return random_reals<float>(std::size_t(count) * kh * kw, seed);
  const auto c = random_reals<float>(std::size_t(count) * kh, seed), r = random_reals<float>(std::size_t(count) * kw, seed + 1);
  std::vector<float> k(std::size_t(count) * kh * kw);
  for (int q = 0; q < count; ++q)
    for (int i = 0; i < kh; ++i)
      for (int j = 0; j < kw; ++j) k[(std::size_t(q) * kh + i) * kw + j] = c[q * kh + i] * r[q * kw + j];
  return k;
}

// One method of one backend: the plan options that force it, what plan::method() / path()
// must then say, and the float tolerance.
struct forced_method {
  backend device = backend::cpu;
  cpu_method cpu = cpu_method::automatic;
  cuda_path cuda = cuda_path::automatic;
  bool rank1 = false;  // the method needs rank-1 kernels
  double tolerance = 1e-5;
  bool box = false;    // box kernels (every value of a kernel equal; kernel q of a bank (q + 1) / (kh kw))
  int tile = 0;        // plan_options::tile (0: the plan's choice)
  float magnitude = 1.f;  // the kernels' values times this (random ones are in [-1, 1])
  std::string name() const {
    return (device == backend::cpu ? std::string("cpu ") + to_string(cpu) : std::string("cuda ") + to_string(cuda)) +
           (box ? " (box kernels)" : "");
  }
};

inline forced_method cpu_forced(cpu_method m) {
  return {backend::cpu, m, cuda_path::automatic, m == cpu_method::separable, m == cpu_method::fft ? 2e-5 : 1e-5};
}
inline forced_method cuda_forced(cuda_path p) {
  return {backend::cuda, cpu_method::automatic, p, p == cuda_path::separable, 1e-5};
}

// The fixed point a CPU separable plan of these kernels takes for uint8 (conv/separable_vnni.hpp):
// the bank of the factors the plan finds in the effective kernels, empty where it keeps the float
// passes.
inline std::vector<fixed_rank1> fixed_bank_of(const std::vector<float>& kernels, int count, int kh, int kw, operation op,
                                              long long out_h, long long out_w) {
  std::vector<float> effective;
  for (int k = 0; k < count; ++k) {
    const auto e = effective_kernel(kernels.data() + std::size_t(k) * kh * kw, kh, kw, op);
    effective.insert(effective.end(), e.begin(), e.end());
  }
  return fixed_bank(choose_cpu_method(effective, count, kh, kw, out_h, out_w, cpu_method::separable).factors, count, kh,
                    kw);
}

template <typename T>
void check_method(const forced_method& method, long long h, long long w, int planes, int count, int kh, int kw,
                  const options& o) {
  const auto seed = fresh_seed();
  INFO("method " << method.name() << ", type bytes " << sizeof(T) << (std::is_same_v<T, float> ? " (float)" : "")
                 << ", image " << h << "x" << w << "x" << planes << ", bank " << count << " of " << kh << "x" << kw
                 << ", mode " << int(o.mode) << ", op " << int(o.op) << ", border " << int(o.border) << ", seed " << seed
                 << ", taps times " << method.magnitude);
  constexpr bool narrow = !std::is_same_v<T, float>;
  const double hi = std::is_same_v<T, std::uint8_t> ? 255 : 65535;
  const auto noise = random_reals<float>(std::size_t(h * w * planes), seed);
  std::vector<T> img(noise.size());
  std::vector<float> img_f(noise.size()), img_abs(noise.size());
  for (std::size_t i = 0; i < img.size(); ++i) {
    img[i] = narrow ? T(std::lround((noise[i] * 0.5 + 0.5) * hi)) : T(noise[i]);
    img_f[i] = float(img[i]);
    img_abs[i] = std::abs(img_f[i]);
  }
  std::vector<float> ks = make_kernels(count, kh, kw, method.rank1, seed + 5);
  if (method.box)
    for (std::size_t i = 0; i < ks.size(); ++i) ks[i] = float(i / (std::size_t(kh) * kw) + 1) / float(kh * kw);
  for (auto& v : ks) v *= method.magnitude;
  plan_options po;
  po.semantics = o;
  if (narrow) po.semantics.constant_value = float(hi * 0.3) + 0.4f;  // rounded to the type, as OpenCV does
  po.device = method.device;
  po.cpu = method.cpu;
  po.path = method.cuda;
  po.tile = method.tile;
  po.threads = 2;
  plan p(h, w, planes, ks.data(), count, kh, kw, po);
  // a forced method is the one that runs; automatic reports what it chose
  if (method.device == backend::cpu) {
    if (method.cpu != cpu_method::automatic) REQUIRE(p.method() == method.cpu);
  } else {
    if (method.cuda != cuda_path::automatic) REQUIRE(p.path() == method.cuda);
    else REQUIRE(p.path() != cuda_path::automatic);
  }
  const long long per = p.output_height() * p.output_width();
  std::vector<T> out(std::size_t(per * planes * count), T(77));
  p.execute(img.data(), out.data());
  // the CPU's separable method on uint8 in fixed point: each kernel's error bound (levels)
  std::vector<fixed_rank1> fixed;
  if (std::is_same_v<T, std::uint8_t> && method.device == backend::cpu && p.method() == cpu_method::separable &&
      fft::host::selected_host_vnni()) {
    fixed = fixed_bank_of(ks, count, kh, kw, o.op, p.output_height(), p.output_width());
  }
  options ro = po.semantics;
  if (narrow) ro.constant_value = float(std::nearbyint(ro.constant_value));
  options ro_abs = ro;
  ro_abs.constant_value = std::abs(ro.constant_value);
  for (int k = 0; k < count; ++k) {
    const float* kk = ks.data() + std::size_t(k) * kh * kw;
    std::vector<float> k_abs(kk, kk + std::size_t(kh) * kw);
    for (auto& v : k_abs) v = std::abs(v);
    // an output's scale is at least ||k||_2 rms(x): the FFT spreads its rounding over the tile
    double k2 = 0, x2 = 0;
    for (int i = 0; i < kh * kw; ++i) k2 += double(kk[i]) * kk[i];
    for (float v : img_f) x2 += double(v) * v;
    const double floor = std::max(std::sqrt(k2 * x2 / double(img_f.size())), 1e-3);
    const double tolerance = method.tolerance;
    std::vector<double> ref(std::size_t(per * planes)), scale(ref.size());
    direct_convolve(img_f.data(), h, w, planes, kk, kh, kw, ro, ref.data());
    direct_convolve(img_abs.data(), h, w, planes, k_abs.data(), kh, kw, ro_abs, scale.data());
    double num = 0, den = 0;
    for (int q = 0; q < planes; ++q)
      for (long long i = 0; i < per; ++i) {
        const double got = double(out[std::size_t((q * count + k) * per + i)]), want = ref[std::size_t(q * per + i)];
        const double s = std::max(scale[std::size_t(q * per + i)], floor);
        REQUIRE(std::isfinite(got));
        if constexpr (narrow) {
          const double expect = std::min(hi, std::max(0.0, std::nearbyint(want)));
          const double bound = fixed.empty() ? 0.0 : fixed[std::size_t(k)].error_bound;
          const double allowance = tolerance * s + 1e-3 + bound, frac = want - std::floor(want);
          INFO("kernel " << k << ", plane " << q << ", pixel " << i << ": got " << got << ", reference " << want);
          if (want - allowance > hi + 0.5) REQUIRE(got == hi);  // saturated beyond any rounding
          else if (want + allowance < -0.5) REQUIRE(got == 0);
          else if (std::abs(frac - 0.5) > allowance) REQUIRE(got == expect);
          else REQUIRE(std::abs(got - std::min(hi, std::max(0.0, want))) <= 0.5 + allowance);
        } else {
          num += (got - want) * (got - want);
          den += s * s;
        }
      }
    if constexpr (!narrow) {
      INFO("kernel " << k << ": relative L2 error " << std::sqrt(num / den));
      CHECK(std::sqrt(num / den) <= tolerance);
    }
  }
}

// Calls f(o) for every mode x operation x boundary (constant value 0.25), 'valid' only where a
// kh x kw kernel fits an h x w image.
template <typename F>
void for_each_semantics(int kh, int kw, long long h, long long w, F&& f) {
  for (auto mode : {output_mode::same, output_mode::full, output_mode::valid})
    for (auto op : {operation::convolution, operation::correlation})
      for (auto border : all_borders) {
        if (mode == output_mode::valid && (kh > h || kw > w)) continue;
        options o;
        o.mode = mode;
        o.op = op;
        o.border = border;
        o.constant_value = 0.25f;
        f(o);
      }
}

// Modes x operations x boundaries x types over kernel and image sizes that cover the edge
// cases: 1 x 1 images, images smaller than the kernel, 'valid' down to one output.
template <typename Kernels, typename Images>
void sweep_method(const forced_method& method, const Kernels& k, const Images& img) {
  for_each_semantics(k[0], k[1], img[0], img[1], [&](const options& o) {
    check_method<float>(method, img[0], img[1], 2, 1, k[0], k[1], o);
    check_method<std::uint8_t>(method, img[0], img[1], 1, 1, k[0], k[1], o);
    check_method<std::uint16_t>(method, img[0], img[1], 1, 1, k[0], k[1], o);
  });
}

}  // namespace gpuconv::test
