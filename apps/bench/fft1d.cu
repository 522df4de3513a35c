// gpuconv-bench fft1d: batched 1D R2C and C2R, ours against cuFFT in the same run.
//
// Bytes moved per transform (the floor): R2C reads 4n and writes 8(n/2+1) bytes per row,
// C2R the reverse: ~8 bytes per point. Flops are ~2.5 n log2 n per row (half-length
// complex FFT plus the post-twiddle), far below the H100's fp32 rate: memory-bound.
// Figures: median of `reps` event-timed runs after warm-up, 2^28 points by default.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <cufft.h>

#include "bench.hpp"
#include "fft/plan/real_1d_plan.hpp"
#include "timing.cuh"

namespace gpuconv::bench {

namespace {

struct cufft_plan {
  cufftHandle h{};
  cufft_plan(int n, long long batch, cufftType type, cudaStream_t s) {
    long long nn = n;
    std::size_t work = 0;
    check_cufft(cufftCreate(&h), "cufftCreate");
    check_cufft(cufftMakePlanMany64(h, 1, &nn, nullptr, 1, 0, nullptr, 1, 0, type, batch, &work), "cufftMakePlanMany64");
    check_cufft(cufftSetStream(h, s), "cufftSetStream");
  }
  ~cufft_plan() { cufftDestroy(h); }
};

struct row_t {
  int n;
  double r2c_ms, r2c_cufft_ms, c2r_ms, c2r_cufft_ms, r2c_err, c2r_err;
};

}  // namespace

int run_fft1d(const options& opt) {
  cuda_stream stream;
  cudaDeviceProp prop{};
  GPUCONV_CUDA(cudaGetDeviceProperties(&prop, 0));
  const long long points = opt.points;
  const double copy_gbs = copy_bandwidth_gbs(std::size_t(points) * 4, opt.reps, stream);
  std::printf("gpuconv-bench fft1d on %s (%d SMs, %.0f MB L2)\n", prop.name, prop.multiProcessorCount,
              prop.l2CacheSize / 1e6);
  std::printf("points per transform: %lld, median of %d runs after %d warm-up\n", points, opt.reps, opt.warmup);
  std::printf("measured copy bandwidth (read + write): %.0f GB/s\n\n", copy_gbs);

  device_buffer<float> x(points), y(points), yc(points);
  device_buffer<cufftComplex> X(points / 2 + points / 4 + 4), Xc(X.size());
  const auto seed = (std::uint64_t)std::chrono::steady_clock::now().time_since_epoch().count();
  fill_random(x.data(), points, seed, stream);

  std::vector<row_t> rows;
  for (int n = 4; n <= 4096; n *= 2) {
    if (!opt.sizes.empty() && std::find(opt.sizes.begin(), opt.sizes.end(), n) == opt.sizes.end()) continue;
    const long long batch = points / n;
    const std::size_t complexes = std::size_t(batch) * (n / 2 + 1);
    fft::real_1d_plan plan(n, batch);
    cufft_plan r2c(n, batch, CUFFT_R2C, stream), c2r(n, batch, CUFFT_C2R, stream);
    auto* Xo = reinterpret_cast<fft::complex_t<float>*>(X.data());

    // correctness on this run's random data: ours against cuFFT
    GPUCONV_CUDA(cudaMemsetAsync(X.data(), 0xFF, complexes * 8, stream));
    plan.forward(x.data(), Xo, stream);
    check_cufft(cufftExecR2C(r2c.h, x.data(), Xc.data()), "cufftExecR2C");
    const double r2c_err = relative_l2(reinterpret_cast<float*>(X.data()), reinterpret_cast<float*>(Xc.data()),
                                       complexes * 2, stream);
    GPUCONV_CUDA(cudaMemsetAsync(y.data(), 0xFF, points * 4, stream));
    plan.inverse(Xo, y.data(), stream);
    check_cufft(cufftExecC2R(c2r.h, Xc.data(), yc.data()), "cufftExecC2R");
    const double c2r_err = relative_l2(y.data(), yc.data(), points, stream);

    row_t r{n, 0, 0, 0, 0, r2c_err, c2r_err};
    r.r2c_ms = median_ms([&](cudaStream_t s) { plan.forward(x.data(), Xo, s); }, opt.warmup, opt.reps, stream);
    r.r2c_cufft_ms = median_ms([&](cudaStream_t) { check_cufft(cufftExecR2C(r2c.h, x.data(), Xc.data()), "R2C"); },
                               opt.warmup, opt.reps, stream);
    plan.forward(x.data(), Xo, stream);  // a Hermitian spectrum for the C2R timings
    r.c2r_ms = median_ms([&](cudaStream_t s) { plan.inverse(Xo, y.data(), s); }, opt.warmup, opt.reps, stream);
    // cuFFT's C2R may overwrite its input: restore it before each run, outside the events
    r.c2r_cufft_ms = median_ms(
        [&](cudaStream_t) { check_cufft(cufftExecC2R(c2r.h, Xc.data(), yc.data()), "C2R"); },
        [&] { GPUCONV_CUDA(cudaMemcpyAsync(Xc.data(), X.data(), complexes * 8, cudaMemcpyDeviceToDevice, stream)); },
        opt.warmup, opt.reps, stream);
    rows.push_back(r);
    std::fprintf(stderr, "n=%d done\n", n);
  }

  auto bytes = [&](int n) { return double(points) * 4 + double(points / n) * (n / 2 + 1) * 8; };
  std::printf("%6s | %8s %7s %6s %8s %6s | %8s %7s %6s %8s %6s | %8s %8s\n", "n", "R2C ms", "Gpt/s", "%copy",
              "cuFFT ms", "ratio", "C2R ms", "Gpt/s", "%copy", "cuFFT ms", "ratio", "errR2C", "errC2R");
  for (const auto& r : rows) {
    const double b = bytes(r.n);
    auto pct = [&](double ms) { return 100.0 * b / (ms * 1e-3) / 1e9 / copy_gbs; };
    std::printf("%6d | %8.3f %7.1f %5.1f%% %8.3f %5.2fx | %8.3f %7.1f %5.1f%% %8.3f %5.2fx | %8.1e %8.1e\n", r.n,
                r.r2c_ms, points / (r.r2c_ms * 1e6), pct(r.r2c_ms), r.r2c_cufft_ms, r.r2c_cufft_ms / r.r2c_ms,
                r.c2r_ms, points / (r.c2r_ms * 1e6), pct(r.c2r_ms), r.c2r_cufft_ms, r.c2r_cufft_ms / r.c2r_ms,
                r.r2c_err, r.c2r_err);
  }
  if (!opt.csv.empty()) {
    std::ofstream f(opt.csv);
    f << "gpu,copy_gbs,points,n,r2c_ms,r2c_cufft_ms,c2r_ms,c2r_cufft_ms,r2c_pct_copy,c2r_pct_copy,r2c_rel_l2,c2r_rel_l2\n";
    for (const auto& r : rows) {
      const double b = bytes(r.n);
      f << '"' << prop.name << "\"," << copy_gbs << ',' << points << ',' << r.n << ',' << r.r2c_ms << ','
        << r.r2c_cufft_ms << ',' << r.c2r_ms << ',' << r.c2r_cufft_ms << ','
        << 100.0 * b / (r.r2c_ms * 1e-3) / 1e9 / copy_gbs << ',' << 100.0 * b / (r.c2r_ms * 1e-3) / 1e9 / copy_gbs
        << ',' << r.r2c_err << ',' << r.c2r_err << '\n';
    }
  }
  // a wrong transform must not produce a figure that looks fine
  for (const auto& r : rows)
    if (!(r.r2c_err < 1e-5 && r.c2r_err < 1e-5)) {
      std::fprintf(stderr, "gpuconv-bench: n=%d disagrees with cuFFT (rel L2 %.2e / %.2e)\n", r.n, r.r2c_err, r.c2r_err);
      return 3;
    }
  return 0;
}

}  // namespace gpuconv::bench
