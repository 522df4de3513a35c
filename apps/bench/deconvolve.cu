// gpuconv-bench deconvolve: Richardson-Lucy (conv::richardson_lucy, CUDA backend, run_device)
// on a 128 x 512 x 512 (D x H x W) fp32 stack with a 31^3 PSF (--psf gaussian: rank-1, which
// plan3d runs by its separable method; --psf general: a core and a halo, rank 2, the FFT
// tiles - what a measured PSF takes), `--iterations` (50)
// per run, timed with events (median of --reps after --warmup). Zero boundary, so that the
// result is the function a CuPy implementation over cupyx.scipy.signal.fftconvolve computes:
// scripts/rl_cupy.py runs that peer on the same data and compares. The stack: 400 point beads
// on a background of 10, blurred by the PSF (plan3d), plus Poisson-like noise (a fixed hash,
// no RNG state), clamped at 0.
// --dump DIR writes DIR/observed.f32, psf.f32, ours.f32 (raw little-endian float32,
// depth-major) and DIR/ours.json (shape, iterations, boundary, epsilon, ms) for the script.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "bench.hpp"
#include "conv/deconvolve.hpp"
#include "timing.cuh"

namespace gpuconv::bench {

namespace {

constexpr int depth = 128, height = 512, width = 512, psf_side = 31;

// A 31^3 gaussian, sigma 4 across (y, x) and 6 along z (an elongated widefield-like PSF),
// truncated to the cube, normalised.
// general: plus a halo of a twentieth of the peak, sigma 8 across and 3 along z (the out-of-focus
// light of a widefield PSF, roughly): a sum of two rank-1 terms, not rank-1.
std::vector<float> make_psf(bool general) {
  std::vector<float> psf;
  double sum = 0;
  const int r = psf_side / 2;
  for (int z = -r; z <= r; ++z)
    for (int y = -r; y <= r; ++y)
      for (int x = -r; x <= r; ++x) {
        double v = std::exp(-0.5 * (x * x / 16.0 + y * y / 16.0 + z * z / 36.0));
        if (general) v += 0.05 * std::exp(-0.5 * (x * x / 64.0 + y * y / 64.0 + z * z / 9.0));
        psf.push_back(float(v));
        sum += psf.back();
      }
  for (float& v : psf) v = float(v / sum);
  return psf;
}

// A uniform in (0, 1) from an integer (splitmix64's finaliser): the same numbers everywhere.
double hash_uniform(std::uint64_t i) {
  std::uint64_t z = i + 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return (double(z >> 11) + 0.5) / 9007199254740992.0;
}

std::vector<float> observed_stack(const std::vector<float>& psf) {
  const long long n = (long long)depth * height * width;
  std::vector<float> truth(static_cast<std::size_t>(n), 10.f), blurred(static_cast<std::size_t>(n));
  for (int b = 0; b < 400; ++b) {
    const long long i = (long long)(hash_uniform(3 * b) * depth) * height * width +
                        (long long)(hash_uniform(3 * b + 1) * height) * width + (long long)(hash_uniform(3 * b + 2) * width);
    truth[std::size_t(i)] += 50000.f;
  }
  conv::plan_options po;
  po.device = conv::backend::cuda;
  po.semantics.border = conv::boundary::zero;
  conv::plan3d(depth, height, width, 1, psf.data(), psf_side, psf_side, psf_side, po).execute(truth.data(), blurred.data());
  for (long long i = 0; i < n; ++i) {  // Box-Muller from two hashes
    const double v = std::max(0.f, blurred[std::size_t(i)]);
    const double g = std::sqrt(-2 * std::log(hash_uniform(2 * i + 1000000))) * std::cos(6.283185307179586 * hash_uniform(2 * i + 1000001));
    blurred[std::size_t(i)] = float(std::max(0.0, v + std::sqrt(v) * g));
  }
  return blurred;
}

void dump(const std::string& path, const std::vector<float>& v) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(v.data()), std::streamsize(v.size() * sizeof(float)));
  if (!f) throw std::runtime_error("cannot write " + path);
}

}  // namespace

int run_deconvolve(const options& opt) {
  cuda_stream stream;
  cudaDeviceProp prop{};
  GPUCONV_CUDA(cudaGetDeviceProperties(&prop, 0));
  const int iterations = opt.iterations;
  const long long n = (long long)depth * height * width;
  const bool general = opt.psf == "general";
  const auto psf = make_psf(general);
  const std::vector<float> observed = observed_stack(psf);
  const std::size_t count = static_cast<std::size_t>(n);
  device_buffer<float> y(count), u(count);
  GPUCONV_CUDA(cudaMemcpy(y.data(), observed.data(), count * 4, cudaMemcpyHostToDevice));

  conv::deconvolve_options o;
  o.iterations = iterations;
  o.border = conv::boundary::zero;
  o.device = conv::backend::cuda;
  conv::richardson_lucy rl(depth, height, width, psf.data(), psf_side, psf_side, psf_side, o);
  const int reps = std::min(opt.reps, 5), warmup = std::min(opt.warmup, 1);
  const float ms = median_ms([&](cudaStream_t s) { rl.run_device(y.data(), u.data(), s); }, warmup, reps, stream);
  std::vector<float> ours(count);
  GPUCONV_CUDA(cudaMemcpy(ours.data(), u.data(), count * 4, cudaMemcpyDeviceToHost));

  std::printf("gpuconv-bench deconvolve on %s: Richardson-Lucy, %d x %d x %d (D x H x W) fp32, %d^3 %s PSF (%s), zero "
              "boundary, %d iterations, median of %d runs after %d warm-up\n",
              prop.name, depth, height, width, psf_side, general ? "general" : "gaussian",
              general ? "rank 2: the FFT tiles" : "rank-1: the separable method", iterations, reps, warmup);
  std::printf("%10s %12s %14s %22s\n", "ours ms", "ms/iteration", "Gvox/s (conv)", "(2 convolutions/iteration)");
  std::printf("%10.1f %12.2f %14.2f\n", ms, ms / iterations, 2.0 * iterations * n / (ms * 1e6));
  std::printf("peer: python3 scripts/rl_cupy.py DIR after --dump DIR (CuPy RL over cupyx.scipy.signal.fftconvolve, same "
              "data, time and rel L2)\n");
  if (!opt.csv.empty()) {
    std::ofstream f(opt.csv);
    f << "gpu,d,h,w,k,iterations,ms,ms_per_iteration\n"
      << '"' << prop.name << "\"," << depth << ',' << height << ',' << width << ',' << psf_side << ',' << iterations
      << ',' << ms << ',' << ms / iterations << '\n';
  }
  if (!opt.dump.empty()) {
    dump(opt.dump + "/observed.f32", observed);
    dump(opt.dump + "/psf.f32", psf);
    dump(opt.dump + "/ours.f32", ours);
    std::ofstream j(opt.dump + "/ours.json");
    j << "{\"gpu\": \"" << prop.name << "\", \"depth\": " << depth << ", \"height\": " << height << ", \"width\": " << width
      << ", \"psf\": " << psf_side << ", \"iterations\": " << iterations << ", \"boundary\": \"zero\", \"epsilon\": "
      << o.epsilon << ", \"ms\": " << ms << "}\n";
    if (!j) throw std::runtime_error("cannot write " + opt.dump + "/ours.json");
  }
  for (float v : ours)
    if (!(v >= 0) || !std::isfinite(v)) {
      std::fprintf(stderr, "gpuconv-bench: the estimate holds a negative or non-finite value\n");
      return 3;
    }
  return 0;
}

}  // namespace gpuconv::bench
