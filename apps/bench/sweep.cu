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
// count as a miss. --u8: uint8 images in and out (the kernels scaled to sum |k| = 1 so that the
// outputs stay inside 0..255), every method on them; the automatic choice is the plan's, which
// knows no pixel type, and err is the largest difference in levels from the first method's output
// (at most 1: each method rounds its own float sums).
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
#include "src/errors.hpp"  // printable: a file name or field as one safe line
#include "timing.cuh"

namespace gpuconv::bench {

namespace {

struct sweep_shape {
  int planes, height, width;
};

constexpr conv::cuda_path methods[] = {conv::cuda_path::direct, conv::cuda_path::separable, conv::cuda_path::fused,
                                       conv::cuda_path::three_pass, conv::cuda_path::multipass};
constexpr int method_count = sizeof(methods) / sizeof(methods[0]);
constexpr int separable_at = 1;
static_assert(methods[separable_at] == conv::cuda_path::separable);

// --tile T: the tile a method's plan is asked for (the fused and three-pass paths take T, the
// others their own)
int forced_tile(conv::cuda_path method, int tile) {
  return method == conv::cuda_path::fused || method == conv::cuda_path::three_pass ? tile : 0;
}

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
  std::printf("gpuconv-bench sweep on %s; %s 'same', %s, execute_device, median of %d runs after %d warm-up;\n"
              "measured copy bandwidth (read + write): %.0f GB/s (byte floor %.0f Gpix/s)\n\n",
              gpu, opt.u8 ? "uint8" : "fp32", opt.boundary.c_str(), opt.reps, opt.warmup, copy_gbs, copy_gbs / 8);
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
  // `in8`, `out8`: the uint8 sets (--u8; empty otherwise)
  auto measure = [&](const sweep_shape& sh, rotating_sets& io, std::vector<device_buffer<std::uint8_t>>& in8,
                     std::vector<device_buffer<std::uint8_t>>& out8, device_buffer<float>& first,
                     std::vector<float> kernel, int k, const char* name) {
    const long long pixels = (long long)sh.planes * sh.height * sh.width;
    const auto& in = io.in;
    auto& out = io.out;
    const int sets = io.size();
    if (opt.u8) {
      double sum = 0;
      for (float v : kernel) sum += std::abs(v);
      for (float& v : kernel) v = float(v / sum);
    }
    sweep_row r{sh, k, name, {}, -1, -1, conv::cuda_path::automatic, 0, 0, 0};
    bool have_first = false;
    // one run of a plan on input set i (uint8 or float)
    auto run_on = [&](conv::plan& p, int i, cudaStream_t s) {
      if (opt.u8) p.execute_device(in8[i].data(), out8[i].data(), s);
      else p.execute_device(in[i].data(), out[i].data(), s);
    };
    auto time_plan = [&](conv::plan& p) {
      int i = 0;
      return median_ms([&](cudaStream_t s) { run_on(p, ++i % sets, s); }, opt.warmup, opt.reps, stream);
    };
    // the first run of a plan: its output kept as `first` (the first method's) or compared with it
    auto first_run = [&](conv::plan& p) {
      run_on(p, 0, stream);
      if (!have_first) {
        if (opt.u8) from_u8(out8[0].data(), first.data(), pixels, stream);
        else GPUCONV_CUDA(cudaMemcpyAsync(first.data(), out[0].data(), pixels * 4, cudaMemcpyDeviceToDevice, stream));
        have_first = true;
      } else {
        r.err = std::max(r.err, opt.u8 ? double(max_u8_difference(out8[0].data(), first.data(), pixels, stream))
                                       : relative_l2(out[0].data(), first.data(), pixels, stream));
      }
    };
    conv::plan_options po;
    po.device = conv::backend::cuda;
    po.pixels = opt.u8 ? conv::pixel::u8 : conv::pixel::f32;  // (as a user's uint8 plan)
    po.semantics.border = border;
    if (border == conv::boundary::constant) po.semantics.constant_value = 0.25f;
    for (int m = 0; m < method_count; ++m) {
      r.ms[m] = -1;
      po.path = methods[m];
      // --tile: the fused and three-pass paths on that tile (the smallest of theirs that holds it
      // and the kernel), for fitting their prices tile by tile
      po.tile = forced_tile(methods[m], opt.tile);
      try {
        conv::plan p(sh.height, sh.width, sh.planes, kernel.data(), k, k, po);
        first_run(p);
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
          first_run(p);
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
      po.tile = forced_tile(methods[fastest], opt.tile);
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
    std::vector<device_buffer<std::uint8_t>> in8, out8;
    if (opt.u8)
      for (int i = 0; i < io.size(); ++i) {
        in8.emplace_back(pixels);
        out8.emplace_back(pixels);
        to_u8(io.in[i].data(), in8.back().data(), pixels, stream);
      }
    device_buffer<float> first(pixels);
    for (int k : sizes)
      for (bool rank1 : {false, true})
        measure(sh, io, in8, out8, first, sweep_kernel(k, rank1, seed), k, rank1 ? "rank-1" : "dense");
    if (sh.planes == 1 && sh.height == 4096 && sh.width == 4096)  // the named kernels (detected as separable)
      for (const named_kernel& n : named_kernels()) measure(sh, io, in8, out8, first, n.values, n.k, n.name);
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
              "their variants.\nerr: the largest %s between the methods' outputs.\n",
              opt.u8 ? "difference in levels" : "relative L2 difference");
  if (!opt.csv.empty()) {
    std::ofstream f(opt.csv);
    f << "gpu,planes,height,width,k,kernel,direct_ms,separable_ms,fused_ms,three_pass_ms,multipass_ms,chosen,chosen_ms,best_"
         "ms,err,separable_fma_ms,separable_fft_ms,pixel\n";
    for (const auto& r : rows) {
      f << '"' << gpu << "\"," << r.shape.planes << ',' << r.shape.height << ',' << r.shape.width << ',' << r.k
        << ',' << r.kernel;
      for (double t : r.ms) f << ',' << t;
      f << ',' << conv::to_string(r.chosen) << ',' << r.chosen_ms << ',' << r.best_ms << ',' << r.err << ','
        << r.sep_fma_ms << ',' << r.sep_fft_ms << ',' << (opt.u8 ? "uint8" : "fp32") << '\n';
    }
  }
  for (const auto& r : rows)
    if (!(opt.u8 ? r.err <= 1 : r.err < 1e-4)) {
      std::fprintf(stderr, "gpuconv-bench: sweep %dx%dx%d K=%d: the methods disagree (%s %.2e)\n", r.shape.planes,
                   r.shape.height, r.shape.width, r.k, opt.u8 ? "levels" : "rel L2", r.err);
      return 3;
    }
  return 0;
}

namespace {

// One row of a sweep's CSV, as run_sweep writes it.
struct replay_row {
  int planes = 0, height = 0, width = 0, k = 0;
  std::string kernel, chosen;
  double ms[method_count] = {};
};

std::vector<std::string> csv_fields(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (char c : line) {
    if (c == '"') quoted = !quoted;
    else if (c == ',' && !quoted) out.emplace_back();
    else if (c != '\r') out.back() += c;
  }
  return out;
}

// The sweep's kernel of a row: a named one as named_kernels() makes it, else a dense or rank-1 one
// (the values differ from the sweep's, which drew them from its seed; the cost model reads only
// the size, whether the kernel is rank-1 and whether it is a box).
std::vector<float> replay_kernel(const replay_row& r, int line) {
  if (r.kernel == "dense" || r.kernel == "rank-1") return sweep_kernel(r.k, r.kernel == "rank-1", 12345);
  for (const named_kernel& n : named_kernels())
    if (r.kernel == n.name && n.k == r.k) return n.values;
  throw std::invalid_argument("line " + std::to_string(line) + ": the kernel column is not dense, rank-1 or a named kernel of that size");
}

}  // namespace

int run_replay(const options& opt) {
  std::ifstream f(opt.input);
  if (!f) throw std::invalid_argument("cannot read '" + app::printable(opt.input) + "'");
  const bool by_rule = conv::boundary_reads_image(*conv::boundary_named(opt.boundary));
  std::string line;
  std::getline(f, line);
  const std::vector<std::string> header = csv_fields(line);
  auto column = [&](const char* name) {
    for (std::size_t i = 0; i < header.size(); ++i)
      if (header[i] == name) return (int)i;
    throw std::invalid_argument("'" + app::printable(opt.input) + "' is not a sweep's CSV: no column " + name);
  };
  const char* method_columns[method_count] = {"direct_ms", "separable_ms", "fused_ms", "three_pass_ms", "multipass_ms"};
  int cm[method_count];
  for (int m = 0; m < method_count; ++m) cm[m] = column(method_columns[m]);
  const int cg = column("gpu"), cp = column("planes"), ch = column("height"), cw = column("width"), ck = column("k"),
            cn = column("kernel"), cc = column("chosen");
  // the separable passes by FMA and by FFT lines, each forced (older sweeps lack them; -1: not run)
  const auto fma_at = std::find(header.begin(), header.end(), "separable_fma_ms"),
             fft_at = std::find(header.begin(), header.end(), "separable_fft_ms");
  const bool variants = fma_at != header.end() && fft_at != header.end();
  // (older sweeps have no pixel column: fp32; a uint8 sweep's rows are priced as a uint8 plan
  // chooses: by the model's prices, which are fp32's for every pixel type)
  const auto pixel_at = std::find(header.begin(), header.end(), "pixel");
  std::string gpu;
  using ratio_set = std::vector<double>;
  // the methods' columns, then the separable passes' two variants each forced (rank-1 rows of a
  // sweep that timed them): the FMA passes (or the shared tile) and the FFT passes
  constexpr int columns = method_count + 2, fma_col = method_count;
  std::vector<ratio_set> by_method(columns);
  // time over price by shape and column, in the order the shapes first appear
  std::vector<std::string> shapes;
  std::vector<std::vector<ratio_set>> by_shape;
  int rows = 0, same = 0, within = 0;
  for (int n = 2; std::getline(f, line); ++n) {
    if (line.empty()) continue;
    const std::vector<std::string> v = csv_fields(line);
    if (v.size() != header.size())
      throw std::invalid_argument("line " + std::to_string(n) + " of '" + app::printable(opt.input) + "': " +
                                  std::to_string(v.size()) + " fields, the header has " + std::to_string(header.size()));
    replay_row r;
    try {
      r.planes = std::stoi(v[cp]), r.height = std::stoi(v[ch]), r.width = std::stoi(v[cw]), r.k = std::stoi(v[ck]);
      for (int m = 0; m < method_count; ++m) r.ms[m] = std::stod(v[cm[m]]);
    } catch (const std::exception&) {
      throw std::invalid_argument("line " + std::to_string(n) + " of '" + app::printable(opt.input) + "': not a number where one belongs");
    }
    if (r.planes < 1 || r.height < 1 || r.width < 1 || r.k < 1)
      throw std::invalid_argument("line " + std::to_string(n) + " of '" + app::printable(opt.input) + "': a size below 1");
    if (pixel_at != header.end()) {
      const std::string& name = v[pixel_at - header.begin()];
      if (name != "fp32" && name != "uint8" && name != "uint16")
        throw std::invalid_argument("line " + std::to_string(n) + " of '" + app::printable(opt.input) + "': pixel '" +
                                    app::printable(name) + "' (fp32, uint8 or uint16)");
    }
    r.kernel = v[cn];
    r.chosen = v[cc];
    gpu = v[cg];
    const std::vector<float> kernel = replay_kernel(r, n);
    // a method's price in ms, forced (-1 where it cannot hold this kernel)
    auto price_ms = [&](conv::cuda_path path, int tile) {
      try {
        return conv::choose_cuda_method(kernel, 1, r.k, r.k, r.height, r.width, r.planes, path, tile, opt.sms, by_rule)
                   .cost_ps * 1e-9;
      } catch (const std::invalid_argument&) {
        return -1.0;
      }
    };
    // The separable method of a rank-1 row as the model runs it now: the FMA passes (or the shared
    // tile) or the FFT passes (separable_tiles::fft_passes), where the sweep timed both; the row's
    // fastest counts both variants.
    double other_variant = -1;
    double variant_ms[2] = {-1, -1}, variant_price[2] = {-1, -1};  // the FMA passes, the FFT passes
    if (variants && r.kernel == "rank-1") {
      double fma = -1, fft = -1;
      try {
        fma = std::stod(v[fma_at - header.begin()]), fft = std::stod(v[fft_at - header.begin()]);
      } catch (const std::exception&) {
        throw std::invalid_argument("line " + std::to_string(n) + " of '" + app::printable(opt.input) +
                                    "': not a number where one belongs");
      }
      const bool by_fft = conv::separable_tiles::fft_passes(r.k, r.k, r.height, r.width, false);
      const double now = by_fft ? fft : fma;
      if (now >= 0) {
        r.ms[separable_at] = now;
        other_variant = by_fft ? fma : fft;
      }
      // each variant's price as the sweep forced it (force_line_fft; the FFT passes where they fit),
      // then the mode the replay runs with back (GPUCONV_LINE_FFT's, for the later rows' choices)
      const int mode = conv::forced_line_fft();
      for (int i = 0; i < 2; ++i) {
        conv::force_line_fft(i == 0 ? -1 : 1);
        if (i == 0 || conv::separable_tiles::fft_passes(r.k, r.k, r.height, r.width, false)) {
          variant_ms[i] = i == 0 ? fma : fft;
          variant_price[i] = price_ms(conv::cuda_path::separable, 0);
        }
      }
      conv::force_line_fft(mode);
    }
    const conv::cuda_choice choice = conv::choose_cuda_method(kernel, 1, r.k, r.k, r.height, r.width, r.planes,
                                                              conv::cuda_path::automatic, 0, opt.sms, by_rule);
    double price[method_count];
    for (int m = 0; m < method_count; ++m)
      price[m] = price_ms(methods[m], forced_tile(methods[m], opt.tile));  // --tile: the tile the sweep ran it on
    double best = 1e30;
    int model = -1;
    for (int m = 0; m < method_count; ++m) {
      if (r.ms[m] >= 0) best = std::min(best, r.ms[m]);
      if (methods[m] == choice.path) model = m;
    }
    if (other_variant >= 0) best = std::min(best, other_variant);
    const double ratio = model >= 0 && r.ms[model] >= 0 ? r.ms[model] / best : INFINITY;
    ++rows;
    same += r.chosen == conv::to_string(choice.path);
    within += ratio <= 1.10;
    char shape[48];
    std::snprintf(shape, sizeof shape, "%dx%dx%d", r.planes, r.height, r.width);
    auto at = std::find(shapes.begin(), shapes.end(), std::string(shape));
    if (at == shapes.end()) {
      shapes.emplace_back(shape);
      by_shape.emplace_back(columns);
      at = shapes.end() - 1;
    }
    auto& shape_sets = by_shape[at - shapes.begin()];
    for (int m = 0; m < method_count; ++m)
      if (r.ms[m] > 0 && price[m] > 0) {
        by_method[m].push_back(r.ms[m] / price[m]);
        shape_sets[m].push_back(r.ms[m] / price[m]);
      }
    for (int i = 0; i < 2; ++i)
      if (variant_ms[i] > 0 && variant_price[i] > 0) {
        by_method[fma_col + i].push_back(variant_ms[i] / variant_price[i]);
        shape_sets[fma_col + i].push_back(variant_ms[i] / variant_price[i]);
      }
    if (opt.rows) {
      // the model's method, and for the FFT paths its tile (fused:128, multipass:64x128): a sweep
      // holds one fused time a row, at the tile its model took then, so a change that moves the
      // tile needs the time from a sweep with that tile forced (--tile; scripts/replay-tiles.py)
      std::string model_name = conv::to_string(choice.path);
      if (choice.path == conv::cuda_path::fused || choice.path == conv::cuda_path::three_pass ||
          choice.path == conv::cuda_path::multipass)
        model_name += ":" + (choice.tiles.tile_h == choice.tiles.tile_w
                                 ? std::to_string(choice.tiles.tile_h)
                                 : std::to_string(choice.tiles.tile_h) + "x" + std::to_string(choice.tiles.tile_w));
      std::printf("%-16s %4d %-7s | recorded %-10s model %-14s %5.2f%s |", shape, r.k, r.kernel.c_str(), r.chosen.c_str(),
                  model_name.c_str(), ratio, ratio > 1.10 ? "!" : " ");
      for (int m = 0; m < method_count; ++m) {
        if (r.ms[m] > 0 && price[m] > 0) std::printf(" %6.2f", r.ms[m] / price[m]);
        else std::printf(" %6s", "-");
      }
      if (variants) {
        std::printf(" |");
        for (int i = 0; i < 2; ++i) {
          if (variant_ms[i] > 0 && variant_price[i] > 0) std::printf(" %6.2f", variant_ms[i] / variant_price[i]);
          else std::printf(" %6s", "-");
        }
      }
      std::printf("\n");
    }
  }
  if (rows == 0) throw std::invalid_argument("'" + app::printable(opt.input) + "' has no rows");
  auto quantile = [](std::vector<double> v, double q) {
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, std::size_t(q * double(v.size() - 1) + 0.5))];
  };
  std::printf("%sreplay of %s: %d rows (%s, boundary %s, %d multiprocessors%s)\n", opt.rows ? "\n" : "",
              app::printable(opt.input).c_str(), rows, app::printable(gpu).c_str(), opt.boundary.c_str(), opt.sms,
              opt.tile > 0 ? (", fused and three-pass on tiles of " + std::to_string(opt.tile)).c_str() : "");
  std::printf("the model's choice: the recorded one in %d of %d rows; within 10%% of the fastest method (by the\n"
              "methods' forced times) in %d of %d\n",
              same, rows, within, rows);
  if (variants)
    std::printf("(rank-1 rows: the separable time is that of the variant the model runs now, the FMA passes or\n"
                "the FFT passes, each timed forced; the fastest counts both; the last two columns: each variant's\n"
                "forced time over its own price)\n");
  std::printf("\nmeasured time over price: median (10th-90th percentile) [rows]\n%-16s", "shape");
  for (int m = 0; m < method_count; ++m) std::printf(" %-21s", conv::to_string(methods[m]));
  if (variants) std::printf(" %-21s %-21s", "fma passes", "fft passes");
  std::printf("\n");
  auto cell = [&](const ratio_set& s) {
    if (s.empty()) std::printf(" %-21s", "-");
    else {
      char c[40];
      std::snprintf(c, sizeof c, "%.2f (%.2f-%.2f) [%zu]", quantile(s, 0.5), quantile(s, 0.1), quantile(s, 0.9), s.size());
      std::printf(" %-21s", c);
    }
  };
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    std::printf("%-16s", shapes[i].c_str());
    for (int m = 0; m < (variants ? columns : method_count); ++m) cell(by_shape[i][m]);
    std::printf("\n");
  }
  std::printf("%-16s", "all");
  for (int m = 0; m < (variants ? columns : method_count); ++m) cell(by_method[m]);
  std::printf("\n");
  return 0;
}

}  // namespace gpuconv::bench
