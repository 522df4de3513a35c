// gpuconv-bench sweep: the CUDA backend's crossover table. For kernel sizes K = 1..255 (odd
// and even) and several image shapes, every method forced in turn (direct, separable, fused,
// three-pass, multi-pass; '-' where it cannot hold the kernel) and the automatic choice (the
// cost model, method.hpp), each timed as execute_device on fp32 'same' with the default
// boundary (--boundary B another: zero, constant (0.25), replicate, reflect, wrap); the choice's
// time over the best method's, flagged past 1.10 (the target: never more than 10% slower). Two
// kernels per size: a dense random one (separable does not apply) and a rank-1 one (outer
// product of two random vectors); on 4096^2 also the named kernels users call most (gaussian:2,
// gaussian:20 = 161 x 161, box:15, box:255). Rank-1 kernels also time the
// separable method's two kinds of passes each (force_line_fft: FMA walks or shared tile, and FFT
// lines where they hold the factors), the columns the cost model's prices are fitted to. --shapes
// PLANESxHEIGHTxWIDTH,... replaces the four image shapes; --tile T forces the fused and three-pass
// paths onto square tiles of T (the automatic choice stays free). Every method's output is compared
// with the direct path's, or the first method's (relative L2), so that a wrong result cannot
// hide behind a fast time. The chosen plan and the fastest method are timed again back to back at
// the end of each row (each keeps its lower median), so that the order of the timings does not
// count as a miss.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "bench.hpp"
#include "conv/boundary_name.hpp"
#include "conv/method.hpp"
#include "conv/plan.hpp"
#include "conv/separable.hpp"
#include "conv/separable_fft.hpp"
#include "timing.cuh"

namespace gpuconv::bench {

namespace {

struct sweep_shape {
  int planes, height, width;
};

constexpr conv::cuda_path methods[] = {conv::cuda_path::direct, conv::cuda_path::separable, conv::cuda_path::fused,
                                       conv::cuda_path::three_pass, conv::cuda_path::multipass};
constexpr int method_count = sizeof(methods) / sizeof(methods[0]);

struct sweep_row {
  sweep_shape shape;
  int k;
  const char* kernel;  // "dense", "rank-1", or a named kernel ("gauss20", "box255", ...)
  double ms[method_count];  // < 0: the method cannot hold the kernel
  double sep_fma_ms, sep_fft_ms;  // the separable passes forced each way (< 0: not run)
  conv::cuda_path chosen;
  double chosen_ms, best_ms, err;
};

std::vector<float> sweep_kernel(int k, bool rank1, std::uint64_t seed) {
  auto value = [&](std::uint64_t i) { return float(((i + seed) * 2654435761u) % 1000) / 1000.f - 0.5f; };
  std::vector<float> out(std::size_t(k) * k);
  for (int i = 0; i < k; ++i)
    for (int j = 0; j < k; ++j)
      out[std::size_t(i) * k + j] = rank1 ? (value(i) + 0.6f) * (value(1000 + j) + 0.6f) : value(std::size_t(i) * k + j);
  return out;
}

// The kernels users name most, as gpuconv's named kernels make them: gaussian:SIGMA
// (8 sigma + 1 taps a side, normalised; gaussian:20 is 161 x 161) and box:K.
std::vector<float> gaussian_kernel(double sigma, int& k) {
  k = 2 * int(std::round(4 * sigma)) + 1;
  std::vector<double> g(k);
  double sum = 0;
  for (int i = 0; i < k; ++i) sum += g[i] = std::exp(-0.5 * std::pow((i - (k - 1) / 2) / sigma, 2));
  std::vector<float> out(std::size_t(k) * k);
  for (int i = 0; i < k; ++i)
    for (int j = 0; j < k; ++j) out[std::size_t(i) * k + j] = float(g[i] * g[j] / (sum * sum));
  return out;
}

struct named_kernel {
  const char* name;
  int k;
  std::vector<float> values;
};

std::vector<named_kernel> named_kernels() {
  std::vector<named_kernel> out;
  for (double sigma : {2.0, 20.0}) {
    named_kernel n{sigma == 2.0 ? "gauss2" : "gauss20", 0, {}};
    n.values = gaussian_kernel(sigma, n.k);
    out.push_back(std::move(n));
  }
  for (int k : {15, 255}) out.push_back({k == 15 ? "box15" : "box255", k, std::vector<float>(std::size_t(k) * k, 1.f / float(k * k))});
  return out;
}

}  // namespace

int run_sweep(const options& opt) {
  cuda_stream stream;
  cudaDeviceProp prop{};
  GPUCONV_CUDA(cudaGetDeviceProperties(&prop, 0));
  const char* gpu = prop.name;
  const double copy_gbs = copy_bandwidth_gbs(std::size_t(1) << 30, opt.reps, stream);
  std::printf("gpuconv-bench sweep on %s; fp32 'same', %s, execute_device, median of %d runs after %d warm-up;\n"
              "measured copy bandwidth (read + write): %.0f GB/s (byte floor %.0f Gpix/s)\n\n",
              gpu, opt.boundary.c_str(), opt.reps, opt.warmup, copy_gbs, copy_gbs / 8);
  const conv::boundary border = conv::boundary_named(opt.boundary).value();  // checked by main
  std::vector<int> sizes = opt.sizes;
  if (sizes.empty())
    sizes = {1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 13, 15, 16, 19, 23, 27, 31, 32, 41, 51, 63, 64, 81, 101, 127, 128, 161, 191, 255};
  std::vector<sweep_shape> shapes = {{1, 4096, 4096}, {64, 256, 256}, {1024, 64, 64}, {3, 3000, 4000}};
  if (!opt.shapes.empty()) {
    shapes.clear();
    for (const std::string& text : opt.shapes) {
      sweep_shape sh{};
      char x1 = 0, x2 = 0, extra = 0;
      if (std::sscanf(text.c_str(), "%d%c%d%c%d%c", &sh.planes, &x1, &sh.height, &x2, &sh.width, &extra) != 5 ||
          x1 != 'x' || x2 != 'x' || sh.planes < 1 || sh.height < 1 || sh.width < 1) {
        std::fprintf(stderr, "gpuconv-bench: --shapes: \"%s\" is not PLANESxHEIGHTxWIDTH\n", text.c_str());
        return 2;
      }
      shapes.push_back(sh);
    }
  }
  const std::uint64_t seed = (std::uint64_t)std::chrono::steady_clock::now().time_since_epoch().count();
  std::vector<sweep_row> rows;
  // every method and the automatic choice for one kernel on one shape (`io`: its rotating buffers)
  auto measure = [&](const sweep_shape& sh, rotating_sets& io, device_buffer<float>& first, const std::vector<float>& kernel,
                     int k, const char* name) {
    const long long pixels = (long long)sh.planes * sh.height * sh.width;
    const auto& in = io.in;
    auto& out = io.out;
    const int sets = io.size();
    sweep_row r{sh, k, name, {}, -1, -1, conv::cuda_path::automatic, 0, 0, 0};
    bool have_first = false;
    auto time_plan = [&](conv::plan& p) {
      int i = 0;
      return median_ms([&](cudaStream_t s) { ++i; p.execute_device(in[i % sets].data(), out[i % sets].data(), s); },
                       opt.warmup, opt.reps, stream);
    };
    conv::plan_options po;
    po.device = conv::backend::cuda;
    po.semantics.border = border;
    if (border == conv::boundary::constant) po.semantics.constant_value = 0.25f;
    for (int m = 0; m < method_count; ++m) {
      r.ms[m] = -1;
      po.path = methods[m];
      // --tile: the fused and three-pass paths on that tile (the smallest of theirs that holds it
      // and the kernel), for fitting their prices tile by tile
      po.tile = methods[m] == conv::cuda_path::fused || methods[m] == conv::cuda_path::three_pass ? opt.tile : 0;
      try {
        conv::plan p(sh.height, sh.width, sh.planes, kernel.data(), k, k, po);
        p.execute_device(in[0].data(), out[0].data(), stream);
        if (!have_first) {
          GPUCONV_CUDA(cudaMemcpyAsync(first.data(), out[0].data(), pixels * 4, cudaMemcpyDeviceToDevice, stream));
          have_first = true;
        } else {
          r.err = std::max(r.err, relative_l2(out[0].data(), first.data(), pixels, stream));
        }
        r.ms[m] = time_plan(p);
      } catch (const std::invalid_argument&) {
        // the method cannot hold this kernel (or the memory cap its workspace)
      }
    }
    po.path = conv::cuda_path::separable;
    for (int mode : {-1, 1}) {  // the separable passes each way, where the kernel is rank-1
      conv::force_line_fft(mode);
      try {
        conv::plan p(sh.height, sh.width, sh.planes, kernel.data(), k, k, po);
        if (mode < 0 || conv::separable_tiles::fft_passes(k, k, sh.height, sh.width, false)) {
          p.execute_device(in[0].data(), out[0].data(), stream);
          r.err = std::max(r.err, relative_l2(out[0].data(), first.data(), pixels, stream));
          (mode < 0 ? r.sep_fma_ms : r.sep_fft_ms) = time_plan(p);
        }
      } catch (const std::invalid_argument&) {
        // not rank-1, or the passes cannot hold the factors
      }
    }
    conv::force_line_fft(0);
    int fastest = -1;
    for (int m = 0; m < method_count; ++m)
      if (r.ms[m] >= 0 && (fastest < 0 || r.ms[m] < r.ms[fastest])) fastest = m;
    po.path = conv::cuda_path::automatic;
    po.tile = 0;
    conv::plan chosen(sh.height, sh.width, sh.planes, kernel.data(), k, k, po);
    r.chosen = chosen.path();
    // The chosen plan and the fastest method's plan are timed again back to back (chosen, fastest,
    // chosen), each keeping the lower of its medians: timed only after every other method, the
    // chosen plan ran up to 11% slower than the same plan timed first (3 x 3000 x 4000, direct,
    // K = 3..6, session 73), which counted as misses that were not the choice's.
    r.chosen_ms = time_plan(chosen);
    if (fastest >= 0) {
      po.path = methods[fastest];
      po.tile = methods[fastest] == conv::cuda_path::fused || methods[fastest] == conv::cuda_path::three_pass ? opt.tile : 0;
      conv::plan again(sh.height, sh.width, sh.planes, kernel.data(), k, k, po);
      r.ms[fastest] = std::min(r.ms[fastest], double(time_plan(again)));
      r.chosen_ms = std::min(r.chosen_ms, double(time_plan(chosen)));
    }
    r.best_ms = 1e30;
    for (double t : r.ms)
      if (t >= 0) r.best_ms = std::min(r.best_ms, t);
    rows.push_back(r);
    std::fprintf(stderr, "sweep %dx%dx%d K=%d %s done\n", sh.planes, sh.height, sh.width, k, name);
  };
  for (const sweep_shape& sh : shapes) {
    const long long pixels = (long long)sh.planes * sh.height * sh.width;
    rotating_sets io(pixels, seed, stream);
    device_buffer<float> first(pixels);
    for (int k : sizes)
      for (bool rank1 : {false, true}) measure(sh, io, first, sweep_kernel(k, rank1, seed), k, rank1 ? "rank-1" : "dense");
    if (sh.planes == 1 && sh.height == 4096 && sh.width == 4096)  // the named kernels (detected as separable)
      for (const named_kernel& n : named_kernels()) measure(sh, io, first, n.values, n.k, n.name);
  }
  std::printf("%-16s %4s %6s | %8s %8s %8s %8s %8s %8s %8s | %-10s %8s %7s %6s | %8s\n", "images", "K", "kernel",
              "direct", "separ.", "sep-fma", "sep-fft", "fused", "3pass", "multi", "chosen", "ms", "Gpix/s", "ratio",
              "err");
  int within = 0, worst_index = -1;
  double worst = 0;
  for (std::size_t n = 0; n < rows.size(); ++n) {
    const sweep_row& r = rows[n];
    char img[32];
    std::snprintf(img, sizeof img, "%dx%dx%d", r.shape.planes, r.shape.height, r.shape.width);
    std::printf("%-16s %4d %6s |", img, r.k, r.kernel);
    auto cell = [](double t) {
      if (t < 0) std::printf(" %8s", "-");
      else std::printf(" %8.3f", t);
    };
    for (int m = 0; m < method_count; ++m) {
      cell(r.ms[m]);
      if (methods[m] == conv::cuda_path::separable) cell(r.sep_fma_ms), cell(r.sep_fft_ms);
    }
    const double ratio = r.chosen_ms / r.best_ms;
    const double px = double(r.shape.planes) * r.shape.height * r.shape.width;
    within += ratio <= 1.10;
    if (ratio > worst) worst = ratio, worst_index = (int)n;
    std::printf(" | %-10s %8.3f %7.1f %5.2f%s | %8.1e\n", conv::to_string(r.chosen), r.chosen_ms, px / (r.chosen_ms * 1e6),
                ratio, ratio > 1.10 ? "!" : " ", r.err);
  }
  std::printf("\nratio: the chosen plan's time over the fastest method's ('!' past 1.10). Within 10%%: %d of %zu cases",
              within, rows.size());
  if (worst_index >= 0) {
    const sweep_row& w = rows[worst_index];
    std::printf("; worst %.2f (%dx%dx%d K=%d %s, chose %s)", worst, w.shape.planes, w.shape.height, w.shape.width, w.k,
                w.kernel, conv::to_string(w.chosen));
  }
  std::printf(".\nsep-fma, sep-fft: the separable method's passes forced to FMA walks (or the shared tile) and to FFT\n"
              "lines (force_line_fft; '-' where they do not apply); ratio counts the five methods as the plan picks\n"
              "their variants.\nerr: the largest relative L2 difference between the methods' outputs.\n");
  if (!opt.csv.empty()) {
    std::ofstream f(opt.csv);
    f << "gpu,planes,height,width,k,kernel,direct_ms,separable_ms,fused_ms,three_pass_ms,multipass_ms,chosen,chosen_ms,best_"
         "ms,err,separable_fma_ms,separable_fft_ms\n";
    for (const auto& r : rows) {
      f << '"' << gpu << "\"," << r.shape.planes << ',' << r.shape.height << ',' << r.shape.width << ',' << r.k
        << ',' << r.kernel;
      for (double t : r.ms) f << ',' << t;
      f << ',' << conv::to_string(r.chosen) << ',' << r.chosen_ms << ',' << r.best_ms << ',' << r.err << ','
        << r.sep_fma_ms << ',' << r.sep_fft_ms << '\n';
    }
  }
  for (const auto& r : rows)
    if (!(r.err < 1e-4)) {
      std::fprintf(stderr, "gpuconv-bench: sweep %dx%dx%d K=%d: the methods disagree (rel L2 %.2e)\n", r.shape.planes,
                   r.shape.height, r.shape.width, r.k, r.err);
      return 3;
    }
  return 0;
}

}  // namespace gpuconv::bench
