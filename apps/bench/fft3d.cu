// gpuconv-bench fft3d: 3D R2C and C2R of one volume, ours (fft::real_3d_plan) against cuFFT 3D
// (cufftMakePlanMany64, rank 3) in the same run: 128^3, 256^3, 512^3 and 256 x 1024 x 1024
// (D x H x W; --sizes 128,256,512,1024 picks).
//
// Bytes of the floor: R2C reads 4 bytes per point and writes 8*(n/2+1)/n, ~8 bytes per point
// (C2R the reverse); GB/s below counts those bytes once, so a transform at 100% of the copy
// bandwidth would move the data once. Ours makes three passes (rows, H, D), each a read and a
// write. Figures: median of `reps` event-timed runs after warm-up; ours is checked against
// cuFFT on this run's data (rel L2).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <type_traits>
#include <vector>

#include <cufft.h>

#include "bench.hpp"
#include "fft/host/real_3d_host.hpp"
#include "fft/kernels/strided_c2c.cuh"
#include "fft/plan/device_table.hpp"
#include "fft/plan/real_3d_plan.hpp"
#include "timing.cuh"

namespace gpuconv::bench {

namespace {

struct cufft_plan3d {
  cufftHandle h{};
  cufft_plan3d(long long d, long long hh, long long w, cufftType type, cudaStream_t s) {
    long long dims[3] = {d, hh, w};
    std::size_t work = 0;
    check_cufft(cufftCreate(&h), "cufftCreate");
    check_cufft(cufftMakePlanMany64(h, 3, dims, nullptr, 1, 0, nullptr, 1, 0, type, 1, &work), "cufftMakePlanMany64");
    check_cufft(cufftSetStream(h, s), "cufftSetStream");
  }
  ~cufft_plan3d() { cufftDestroy(h); }
  cufft_plan3d(const cufft_plan3d&) = delete;
  cufft_plan3d& operator=(const cufft_plan3d&) = delete;
};

struct row3_t {
  int d, h, w;
  double r2c_ms, r2c_cufft_ms, c2r_ms, c2r_cufft_ms, r2c_err, c2r_err;
  double r2c_plain_ms = 0, c2r_plain_ms = 0;  // the same plan without early (dependent) launches
};

// Both R2C results against the host transform in double (fft/host/real_3d_host.hpp): the
// accuracy comparison the tests make, printed (one size: the host transform is single-threaded).
void accuracy_vs_double(const device_buffer<float>& x, const device_buffer<cufftComplex>& ours,
                        const device_buffer<cufftComplex>& theirs, int d, int h, int w, cudaStream_t stream) {
  GPUCONV_CUDA(cudaStreamSynchronize(stream));
  std::vector<float> xf(x.size());
  std::vector<cufftComplex> a(ours.size()), b(theirs.size());
  GPUCONV_CUDA(cudaMemcpy(xf.data(), x.data(), x.bytes(), cudaMemcpyDeviceToHost));
  GPUCONV_CUDA(cudaMemcpy(a.data(), ours.data(), ours.bytes(), cudaMemcpyDeviceToHost));
  GPUCONV_CUDA(cudaMemcpy(b.data(), theirs.data(), theirs.bytes(), cudaMemcpyDeviceToHost));
  std::vector<double> xd(xf.begin(), xf.end());
  std::vector<fft::complex_t<double>> ref(a.size());
  fft::host::real_3d_plan<double>(d, h, w).forward(xd.data(), ref.data());
  auto rel = [&](const std::vector<cufftComplex>& v) {
    double num = 0, den = 0;
    for (std::size_t i = 0; i < v.size(); ++i) {
      const double dr = v[i].x - ref[i].re, di = v[i].y - ref[i].im;
      num += dr * dr + di * di;
      den += ref[i].re * ref[i].re + ref[i].im * ref[i].im;
    }
    return std::sqrt(num / den);
  };
  std::printf("%dx%dx%d R2C rel L2 against the transform in double: ours %.2e, cuFFT %.2e\n\n", d, h, w, rel(a), rel(b));
}

// One pass of the forward transform alone, for the table of passes: ms, and the rel L2 of a
// variant's result against the plan's own pass on the same input.
struct pass_t {
  const char* what;
  int columns, items;  // 0: not a strided pass
  double ms, err;
};

// The strided C2C along one axis with C columns a block and P values a thread: time and error
// against `want` (the default pass's result on `start`).
template <int n, int C, int P>
void strided_variant(std::vector<pass_t>& out, const char* what, const cufftComplex* start, cufftComplex* work,
                     const cufftComplex* want, long long outer, long long inner, const options& opt,
                     cudaStream_t stream) {
  if constexpr (C * (n / P) <= 1024 && C * (n + n / 16 + 1) * 8 <= 227 * 1024) {
    using policy = fft::strided_c2c_policy<n, C, P>;
    const long long columns = outer * inner;
    const auto table = fft::device_column_table(n);
    const unsigned grid = fft::strided_grid<n, policy>(columns, fft::current_device_sms());
    const std::size_t count = std::size_t(columns) * n;
    auto* w = reinterpret_cast<fft::complex_t<float>*>(work);
    auto run = [&](cudaStream_t s) {
      fft::launch_c2c_strided<n, false, fft::strided_no_pointwise, policy>(w, w, columns, inner, grid, table.data(),
                                                                           fft::strided_no_pointwise{}, s);
    };
    auto restore = [&] {
      GPUCONV_CUDA(cudaMemcpyAsync(work, start, count * 8, cudaMemcpyDeviceToDevice, stream));
    };
    restore();
    run(stream);
    const double err = relative_l2(reinterpret_cast<const float*>(work), reinterpret_cast<const float*>(want),
                                   count * 2, stream);
    const double ms = median_ms(run, restore, opt.warmup, opt.reps, stream);
    out.push_back({what, C, P, ms, err});
  }
}

// The forward transform's passes one by one (rows R2C, C2C along H, C2C along D), the strided
// ones also with other shapes (columns a block x values a thread), and a copy of the complex
// volume (one read and one write: each pass's floor).
void passes_table(int d, int h, int w, const device_buffer<float>& x, const options& opt, cudaStream_t stream) {
  const std::size_t complexes = std::size_t(d) * h * (w / 2 + 1);
  device_buffer<cufftComplex> A(complexes), B(complexes), work(complexes), want(complexes);
  auto* a = reinterpret_cast<fft::complex_t<float>*>(A.data());
  auto* b = reinterpret_cast<fft::complex_t<float>*>(B.data());
  std::vector<pass_t> out;
  const double copy_ms = median_ms(
      [&](cudaStream_t s) { GPUCONV_CUDA(cudaMemcpyAsync(B.data(), A.data(), complexes * 8, cudaMemcpyDeviceToDevice, s)); },
      opt.warmup, opt.reps, stream);
  fft::real_1d_plan rows(w, (long long)d * h);
  rows.forward(x.data(), a, stream);  // A: after the rows
  out.push_back({"rows R2C", 0, 0, median_ms([&](cudaStream_t s) { rows.forward(x.data(), b, s); }, opt.warmup, opt.reps, stream), 0});
  const long long half = w / 2 + 1;
  fft::strided_c2c_plan along_h(h, d, half), along_d(d, 1, (long long)h * half);
  // B: after H (the default pass), then the default D pass timed on it
  auto restore_b = [&] { GPUCONV_CUDA(cudaMemcpyAsync(B.data(), A.data(), complexes * 8, cudaMemcpyDeviceToDevice, stream)); };
  restore_b();
  along_h.forward(b, b, stream);
  GPUCONV_CUDA(cudaMemcpyAsync(want.data(), B.data(), complexes * 8, cudaMemcpyDeviceToDevice, stream));
  out.push_back({"H (default)", fft::strided_default_columns(h), fft::strided_default_items(h),
                 median_ms([&](cudaStream_t s) { along_h.forward(b, b, s); }, restore_b, opt.warmup, opt.reps, stream), 0});
  auto variants = [&](auto len, const char* what, const cufftComplex* start, const cufftComplex* ref, long long outer,
                      long long inner) {
    constexpr int n = decltype(len)::value;
    strided_variant<n, 4, 16>(out, what, start, work.data(), ref, outer, inner, opt, stream);
    strided_variant<n, 8, 16>(out, what, start, work.data(), ref, outer, inner, opt, stream);
    strided_variant<n, 16, 16>(out, what, start, work.data(), ref, outer, inner, opt, stream);
    strided_variant<n, 32, 16>(out, what, start, work.data(), ref, outer, inner, opt, stream);
    strided_variant<n, 8, 32>(out, what, start, work.data(), ref, outer, inner, opt, stream);
    strided_variant<n, 16, 32>(out, what, start, work.data(), ref, outer, inner, opt, stream);
    strided_variant<n, 32, 32>(out, what, start, work.data(), ref, outer, inner, opt, stream);
  };
  auto by_side = [&](int n, auto&& f) {
    switch (n) {
      case 128: f(std::integral_constant<int, 128>{}); break;
      case 256: f(std::integral_constant<int, 256>{}); break;
      case 512: f(std::integral_constant<int, 512>{}); break;
      case 1024: f(std::integral_constant<int, 1024>{}); break;
      default: break;
    }
  };
  by_side(h, [&](auto len) { variants(len, "H", A.data(), want.data(), d, half); });
  // the D pass on the result of H (in `want`), its default result in B
  GPUCONV_CUDA(cudaMemcpyAsync(B.data(), want.data(), complexes * 8, cudaMemcpyDeviceToDevice, stream));
  along_d.forward(b, b, stream);
  device_buffer<cufftComplex> want_d(complexes);
  GPUCONV_CUDA(cudaMemcpyAsync(want_d.data(), B.data(), complexes * 8, cudaMemcpyDeviceToDevice, stream));
  auto restore_d = [&] { GPUCONV_CUDA(cudaMemcpyAsync(B.data(), want.data(), complexes * 8, cudaMemcpyDeviceToDevice, stream)); };
  out.push_back({"D (default)", fft::strided_default_columns(d), fft::strided_default_items(d),
                 median_ms([&](cudaStream_t s) { along_d.forward(b, b, s); }, restore_d, opt.warmup, opt.reps, stream), 0});
  by_side(d, [&](auto len) { variants(len, "D", want.data(), want_d.data(), 1, (long long)h * half); });
  std::printf("%dx%dx%d forward, pass by pass (copy of the complex volume: %.3f ms)\n", d, h, w, copy_ms);
  std::printf("  %-12s %8s %6s %9s %7s %9s\n", "pass", "columns", "items", "ms", "%copy", "rel L2");
  for (const auto& p : out) {
    char c[16] = "-", i[16] = "-";
    if (p.columns) std::snprintf(c, sizeof c, "%d", p.columns);
    if (p.items) std::snprintf(i, sizeof i, "%d", p.items);
    std::printf("  %-12s %8s %6s %9.3f %6.1f%% %9.1e\n", p.what, c, i, p.ms, 100 * copy_ms / p.ms, p.err);
  }
  std::printf("\n");
}

// The 3D slice path's pass along D (conv/slices3d.cu: FFT, times the kernel's spectrum,
// inverse, the slices from 30 on stored, as for a 31^3 PSF) over [pairs][n][128 x 128] complex
// tiles of ~2^26 values, for the power-of-two and the mixed tile depths, with C columns a block
// and P values a thread: ps a value and the share of a copy's rate (a read and a write of
// every value), the error against the first variant of the same depth.

// One depth's data, shared by its variants: the input, the spectrum, the work buffer, the first
// variant's result, and a copy's time over the same bytes.
struct depth_data {
  static constexpr long long inner = 128 * 128;
  long long columns;
  std::size_t count;  // complex values
  device_buffer<float> start, spectrum, want;
  device_buffer<fft::complex_t<float>> work;
  double copy_ms = 0;
  bool have_want = false;
  depth_data(int n, const options& opt, cudaStream_t stream)
      : columns(std::max<long long>(1, (1LL << 26) / (n * inner)) * inner),
        count(std::size_t(columns) * n),
        start(count * 2),
        spectrum(std::size_t(n) * inner * 2),
        want(count * 2),
        work(count) {
    fill_random(start.data(), count * 2, 7 + n, stream);
    fill_random(spectrum.data(), std::size_t(n) * inner * 2, 11 + n, stream);
    copy_ms = median_ms(
        [&](cudaStream_t s) { GPUCONV_CUDA(cudaMemcpyAsync(want.data(), start.data(), count * 8, cudaMemcpyDeviceToDevice, s)); },
        opt.warmup, opt.reps, stream);
  }
};

template <int n, int C, int P, bool late = true>
void depth_variant(depth_data& d, const options& opt, cudaStream_t stream) {
  using policy =
      fft::strided_c2c_policy<n, C, P, std::conditional_t<late, fft::twiddle_load_late, fft::twiddle_load_ro>>;
  const auto table = fft::device_column_table(n);
  const unsigned grid = fft::strided_grid<n, policy>(d.columns, fft::current_device_sms());
  const fft::strided_multiply op{reinterpret_cast<const fft::complex_t<float>*>(d.spectrum.data()), 30};
  auto restore = [&] {
    GPUCONV_CUDA(cudaMemcpyAsync(d.work.data(), d.start.data(), d.count * 8, cudaMemcpyDeviceToDevice, stream));
  };
  auto run = [&](cudaStream_t s) {
    fft::launch_c2c_strided<n, false, fft::strided_multiply, policy>(d.work.data(), d.work.data(), d.columns,
                                                                      depth_data::inner, grid, table.data(), op, s);
  };
  restore();
  run(stream);
  const auto* got = reinterpret_cast<const float*>(d.work.data());
  double err = 0;
  if (d.have_want) {
    err = relative_l2(got, d.want.data(), d.count * 2, stream);
  } else {  // the first variant's result is the others' reference
    GPUCONV_CUDA(cudaMemcpyAsync(d.want.data(), got, d.count * 8, cudaMemcpyDeviceToDevice, stream));
    d.have_want = true;
  }
  const double ms = median_ms(run, restore, opt.warmup, opt.reps, stream);
  std::printf("  %5d %8d %6d %7d %5s %9.3f %9.2f %6.1f%% %9.1e\n", n, C, P, policy::block_threads,
              policy::radix > 1 ? (late ? "late" : "ro") : "-", ms, ms * 1e9 / double(d.count), 100 * d.copy_ms / ms,
              err);
}

template <int C, int P, bool late_ = true>
struct shape {
  static constexpr int c = C, p = P;
  static constexpr bool late = late_;
};

// Every shape of one depth n on the same data.
template <int n, typename... Shapes>
void depth_rows(const options& opt, cudaStream_t stream, Shapes...) {
  depth_data d(n, opt, stream);
  (depth_variant<n, Shapes::c, Shapes::p, Shapes::late>(d, opt, stream), ...);
}

void depth_passes_table(const options& opt, cudaStream_t stream) {
  std::printf("the slice path's pass along D (convolve, slices from 30 on stored), [pairs][n][128^2] tiles\n");
  std::printf("  %5s %8s %6s %7s %5s %9s %9s %7s %9s\n", "n", "columns", "items", "threads", "W_n", "ms", "ps/value",
              "%copy", "rel diff");
  // a shape: (columns, items, late W_n loads)
  depth_rows<64>(opt, stream, shape<64, 16>{});
  depth_rows<128>(opt, stream, shape<32, 16>{});
  depth_rows<256>(opt, stream, shape<16, 16>{});
  depth_rows<80>(opt, stream, shape<32, 20>{}, shape<32, 10>{});
  depth_rows<96>(opt, stream, shape<32, 24>{}, shape<32, 12>{});
  depth_rows<160>(opt, stream, shape<32, 20>{}, shape<16, 20>{}, shape<32, 20, false>{});
  depth_rows<192>(opt, stream, shape<32, 24>{}, shape<16, 12>{}, shape<32, 24, false>{});
  depth_rows<320>(opt, stream, shape<16, 20>{}, shape<32, 20>{}, shape<16, 20, false>{});
  std::printf("\n");
}

}  // namespace

int run_fft3d(const options& opt) {
  cuda_stream stream;
  cudaDeviceProp prop{};
  GPUCONV_CUDA(cudaGetDeviceProperties(&prop, 0));
  const double copy_gbs = copy_bandwidth_gbs(std::size_t(1) << 28, opt.reps, stream);
  std::printf("gpuconv-bench fft3d on %s (%d SMs, %.0f MB L2)\n", prop.name, prop.multiProcessorCount,
              prop.l2CacheSize / 1e6);
  std::printf("one volume per transform, median of %d runs after %d warm-up\n", opt.reps, opt.warmup);
  std::printf("measured copy bandwidth (read + write): %.0f GB/s\n\n", copy_gbs);
  const auto seed = (std::uint64_t)std::chrono::steady_clock::now().time_since_epoch().count();

  if (opt.passes) depth_passes_table(opt, stream);
  std::vector<row3_t> rows;
  for (int n : {128, 256, 512, 1024}) {
    if (!opt.sizes.empty() && std::find(opt.sizes.begin(), opt.sizes.end(), n) == opt.sizes.end()) continue;
    const int d = n == 1024 ? 256 : n, h = n, w = n;  // 1024: the 256 x 1024 x 1024 stack
    const long long points = (long long)d * h * w;
    const std::size_t complexes = std::size_t(d) * h * (w / 2 + 1);
    device_buffer<float> x(points), y(points), yc(points);
    device_buffer<cufftComplex> X(complexes), Xc(complexes);
    fill_random(x.data(), points, seed + n, stream);
    fft::real_3d_plan plan(d, h, w, 1);
    auto* Xo = reinterpret_cast<fft::complex_t<float>*>(X.data());
    row3_t r{d, h, w, 0, 0, 0, 0, 0, 0};
    {
      cufft_plan3d r2c(d, h, w, CUFFT_R2C, stream);
      GPUCONV_CUDA(cudaMemsetAsync(X.data(), 0xFF, complexes * 8, stream));
      plan.forward(x.data(), Xo, stream);
      check_cufft(cufftExecR2C(r2c.h, x.data(), Xc.data()), "cufftExecR2C");
      r.r2c_err = relative_l2(reinterpret_cast<float*>(X.data()), reinterpret_cast<float*>(Xc.data()), complexes * 2,
                              stream);
      if (n == 128) accuracy_vs_double(x, X, Xc, d, h, w, stream);
      if (opt.passes) passes_table(d, h, w, x, opt, stream);
      r.r2c_ms = median_ms([&](cudaStream_t s) { plan.forward(x.data(), Xo, s); }, opt.warmup, opt.reps, stream);
      fft::real_3d_plan plain(d, h, w, 1, false);
      r.r2c_plain_ms = median_ms([&](cudaStream_t s) { plain.forward(x.data(), Xo, s); }, opt.warmup, opt.reps, stream);
      r.r2c_cufft_ms = median_ms([&](cudaStream_t) { check_cufft(cufftExecR2C(r2c.h, x.data(), Xc.data()), "R2C"); },
                                 opt.warmup, opt.reps, stream);
    }
    {
      cufft_plan3d c2r(d, h, w, CUFFT_C2R, stream);
      plan.forward(x.data(), Xo, stream);  // a Hermitian spectrum
      GPUCONV_CUDA(cudaMemcpyAsync(Xc.data(), X.data(), complexes * 8, cudaMemcpyDeviceToDevice, stream));
      GPUCONV_CUDA(cudaMemsetAsync(y.data(), 0xFF, points * 4, stream));
      plan.inverse(Xo, y.data(), stream);
      check_cufft(cufftExecC2R(c2r.h, Xc.data(), yc.data()), "cufftExecC2R");
      r.c2r_err = relative_l2(y.data(), yc.data(), points, stream);
      r.c2r_ms = median_ms([&](cudaStream_t s) { plan.inverse(Xo, y.data(), s); }, opt.warmup, opt.reps, stream);
      fft::real_3d_plan plain(d, h, w, 1, false);
      r.c2r_plain_ms = median_ms([&](cudaStream_t s) { plain.inverse(Xo, y.data(), s); }, opt.warmup, opt.reps, stream);
      // cuFFT's C2R may overwrite its input: restore it before each run, outside the events
      r.c2r_cufft_ms = median_ms(
          [&](cudaStream_t) { check_cufft(cufftExecC2R(c2r.h, Xc.data(), yc.data()), "C2R"); },
          [&] { GPUCONV_CUDA(cudaMemcpyAsync(Xc.data(), X.data(), complexes * 8, cudaMemcpyDeviceToDevice, stream)); },
          opt.warmup, opt.reps, stream);
    }
    rows.push_back(r);
    std::fprintf(stderr, "%dx%dx%d done\n", d, h, w);
  }

  auto bytes = [](const row3_t& r) { return double(r.d) * r.h * r.w * 4 + double(r.d) * r.h * (r.w / 2 + 1) * 8; };
  std::printf("%14s | %8s %7s %6s %8s %6s | %8s %7s %6s %8s %6s | %8s %8s\n", "D x H x W", "R2C ms", "GB/s", "%copy",
              "cuFFT ms", "ratio", "C2R ms", "GB/s", "%copy", "cuFFT ms", "ratio", "errR2C", "errC2R");
  for (const auto& r : rows) {
    const double b = bytes(r);
    auto gbs = [&](double ms) { return b / (ms * 1e-3) / 1e9; };
    char shape[32];
    std::snprintf(shape, sizeof shape, "%dx%dx%d", r.d, r.h, r.w);
    std::printf("%14s | %8.4f %7.0f %5.1f%% %8.4f %5.2fx | %8.4f %7.0f %5.1f%% %8.4f %5.2fx | %8.1e %8.1e\n", shape,
                r.r2c_ms, gbs(r.r2c_ms), 100 * gbs(r.r2c_ms) / copy_gbs, r.r2c_cufft_ms, r.r2c_cufft_ms / r.r2c_ms,
                r.c2r_ms, gbs(r.c2r_ms), 100 * gbs(r.c2r_ms) / copy_gbs, r.c2r_cufft_ms, r.c2r_cufft_ms / r.c2r_ms,
                r.r2c_err, r.c2r_err);
  }
  std::printf("\nthe same plans with each pass launched only after the previous one ended (no programmatic\n"
              "dependent launch): R2C ms, C2R ms, and what the early launches save\n");
  for (const auto& r : rows)
    std::printf("%5dx%dx%d | R2C %.4f (early %.4f, %+.1f%%) | C2R %.4f (early %.4f, %+.1f%%)\n", r.d, r.h, r.w,
                r.r2c_plain_ms, r.r2c_ms, 100 * (r.r2c_plain_ms / r.r2c_ms - 1), r.c2r_plain_ms, r.c2r_ms,
                100 * (r.c2r_plain_ms / r.c2r_ms - 1));
  if (!opt.csv.empty()) {
    std::ofstream f(opt.csv);
    f << "gpu,copy_gbs,d,h,w,r2c_ms,r2c_cufft_ms,c2r_ms,c2r_cufft_ms,r2c_gbs,c2r_gbs,r2c_rel_l2,c2r_rel_l2\n";
    for (const auto& r : rows) {
      const double b = bytes(r);
      f << '"' << prop.name << "\"," << copy_gbs << ',' << r.d << ',' << r.h << ',' << r.w << ',' << r.r2c_ms << ','
        << r.r2c_cufft_ms << ',' << r.c2r_ms << ',' << r.c2r_cufft_ms << ',' << b / (r.r2c_ms * 1e-3) / 1e9 << ','
        << b / (r.c2r_ms * 1e-3) / 1e9 << ',' << r.r2c_err << ',' << r.c2r_err << '\n';
    }
  }
  for (const auto& r : rows)
    if (!(r.r2c_err < 1e-5 && r.c2r_err < 1e-5)) {
      std::fprintf(stderr, "gpuconv-bench: %dx%dx%d disagrees with cuFFT (rel L2 %.2e / %.2e)\n", r.d, r.h, r.w,
                   r.r2c_err, r.c2r_err);
      return 3;
    }
  return 0;
}

}  // namespace gpuconv::bench
