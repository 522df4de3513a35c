// gpuconv-bench host: conv::plan::execute on host buffers against the PCIe floor, in the same
// run. Per case: page-locked cudaMemcpy of the input H2D and of the output D2H (each timed
// alone, medians): the floor is their sum, what a call that moves its bytes once each way in
// turn takes; a plain cudaMemcpy from and to the caller's pageable buffers (what a naive
// call gets); execute() on pageable buffers (malloc'd, touched once, as a NumPy array) and
// on page-locked ones; execute_device() alone. Results are checked against execute_device.
// gpuconv-bench host3d: the same columns for conv::plan3d (volumes through host_staging.hpp).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "bench.hpp"
#include "conv/host_copy.hpp"
#include "conv/plan.hpp"
#include "conv/plan3d.hpp"
#include "timing.cuh"

namespace gpuconv::bench {

namespace {

template <typename F>
double median_wall_ms(F&& f, int warmup, int reps) {
  for (int i = 0; i < warmup; ++i) f();
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    const auto a = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

struct host_case {
  const char* name;
  int planes, h, w, k;
  int bytes;  // 4 fp32, 1 uint8, 2 uint16
};

template <typename T>
struct pinned_array {
  explicit pinned_array(std::size_t n) : n(n) { GPUCONV_CUDA(cudaMallocHost(reinterpret_cast<void**>(&p), n * sizeof(T))); }
  ~pinned_array() { cudaFreeHost(p); }
  pinned_array(const pinned_array&) = delete;
  pinned_array& operator=(const pinned_array&) = delete;
  T* p = nullptr;
  std::size_t n;
};

struct host_row {
  std::string name;
  double mb_in, mb_out, h2d_gbs, d2h_gbs, floor_ms, pageable_copy_ms, exec_ms, exec_pinned_ms, device_ms, max_diff;
};

// The columns of one case: the floor, the pageable copies, execute_device, and execute on
// pageable and page-locked buffers, checked against execute_device. P: conv::plan or plan3d.
template <typename T, typename P>
host_row measure(const std::string& name, std::size_t n, P& p, const options& opt, cudaStream_t stream) {
  const std::size_t bytes = n * sizeof(T);
  // pageable caller buffers, touched once (a NumPy array the caller has filled)
  std::vector<T> in(n), out(n), ref(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t r = std::uint32_t(i * 2654435761u) >> 8;
    if constexpr (std::is_same_v<T, float>) in[i] = float(r % 10000) / 10000.f;
    else in[i] = T(r % (std::is_same_v<T, std::uint8_t> ? 256 : 65536));
  }
  pinned_array<T> pin_in(n), pin_out(n);
  std::copy(in.begin(), in.end(), pin_in.p);
  std::fill(pin_out.p, pin_out.p + n, T(0));
  device_buffer<T> d_in(n), d_out(n);

  const float h2d = median_ms([&](cudaStream_t s) { GPUCONV_CUDA(cudaMemcpyAsync(d_in.data(), pin_in.p, bytes, cudaMemcpyHostToDevice, s)); },
                              opt.warmup, opt.reps, stream);
  const float d2h = median_ms([&](cudaStream_t s) { GPUCONV_CUDA(cudaMemcpyAsync(pin_out.p, d_out.data(), bytes, cudaMemcpyDeviceToHost, s)); },
                              opt.warmup, opt.reps, stream);
  const double pageable = median_wall_ms([&] {
    GPUCONV_CUDA(cudaMemcpy(d_in.data(), in.data(), bytes, cudaMemcpyHostToDevice));
    GPUCONV_CUDA(cudaMemcpy(out.data(), d_out.data(), bytes, cudaMemcpyDeviceToHost));
  }, opt.warmup, opt.reps);
  const float dev = median_ms([&](cudaStream_t s) { p.execute_device(d_in.data(), d_out.data(), s); }, opt.warmup, opt.reps, stream);
  GPUCONV_CUDA(cudaMemcpy(d_in.data(), in.data(), bytes, cudaMemcpyHostToDevice));
  p.execute_device(d_in.data(), d_out.data(), stream);
  GPUCONV_CUDA(cudaStreamSynchronize(stream));
  GPUCONV_CUDA(cudaMemcpy(ref.data(), d_out.data(), bytes, cudaMemcpyDeviceToHost));

  const double exec = median_wall_ms([&] { p.execute(in.data(), out.data()); }, opt.warmup, opt.reps);
  const double exec_pinned = median_wall_ms([&] { p.execute(pin_in.p, pin_out.p); }, opt.warmup, opt.reps);
  double max_diff = 0;
  for (std::size_t i = 0; i < n; ++i) {
    max_diff = std::max(max_diff, std::fabs(double(out[i]) - double(ref[i])));
    max_diff = std::max(max_diff, std::fabs(double(pin_out.p[i]) - double(ref[i])));
  }
  host_row r;
  r.name = name;
  r.mb_in = r.mb_out = double(bytes) / 1e6;
  r.h2d_gbs = double(bytes) / (h2d * 1e-3) / 1e9;
  r.d2h_gbs = double(bytes) / (d2h * 1e-3) / 1e9;
  r.floor_ms = h2d + d2h;
  r.pageable_copy_ms = pageable;
  r.exec_ms = exec;
  r.exec_pinned_ms = exec_pinned;
  r.device_ms = dev;
  r.max_diff = max_diff;
  return r;
}

template <typename T>
host_row run_case(const host_case& c, const options& opt, cudaStream_t stream) {
  std::vector<float> kernel(std::size_t(c.k) * c.k);
  for (std::size_t i = 0; i < kernel.size(); ++i) kernel[i] = 1.0f / float(kernel.size()) * (0.5f + float((i * 2654435761u) % 1000) / 1000.f);
  conv::plan_options po;
  po.device = conv::backend::cuda;
  conv::plan p(c.h, c.w, c.planes, kernel.data(), c.k, c.k, po);
  return measure<T>(c.name, std::size_t(c.planes) * c.h * c.w, p, opt, stream);
}

struct host3d_case {
  const char* name;
  int d, h, w, k;
  bool gaussian;  // a rank-1 PSF (the separable method) instead of a general one (the FFT tiles)
  int bytes;
};

template <typename T>
host_row run_case3d(const host3d_case& c, const options& opt, cudaStream_t stream) {
  const auto psf = c.gaussian ? make_gaussian_psf3d(c.k) : make_psf3d(c.k);
  conv::plan_options po;
  po.device = conv::backend::cuda;
  conv::plan3d p(c.d, c.h, c.w, 1, psf.data(), c.k, c.k, c.k, po);
  return measure<T>(c.name, std::size_t(c.d) * c.h * c.w, p, opt, stream);
}

void print_header() {
  std::printf("%-26s %7s | %6s %6s %8s | %9s | %8s %6s | %8s %6s | %7s | %s\n", "case", "MB in", "H2D", "D2H", "floor",
              "pageable", "execute", "%floor", "pinned", "%floor", "device", "max diff");
  std::printf("%-26s %7s | %6s %6s %8s | %9s | %8s %6s | %8s %6s | %7s |\n", "", "", "GB/s", "GB/s", "ms", "copy ms",
              "ms", "", "ms", "", "ms");
}

void print_row(const host_row& r) {
  std::printf("%-26s %7.1f | %6.1f %6.1f %8.2f | %9.2f | %8.2f %5.0f%% | %8.2f %5.0f%% | %7.3f | %.2g\n", r.name.c_str(),
              r.mb_in, r.h2d_gbs, r.d2h_gbs, r.floor_ms, r.pageable_copy_ms, r.exec_ms, 100 * r.floor_ms / r.exec_ms,
              r.exec_pinned_ms, 100 * r.floor_ms / r.exec_pinned_ms, r.device_ms, r.max_diff);
  std::fflush(stdout);
}

void write_csv(const std::string& file, const std::vector<host_row>& rows) {
  if (file.empty()) return;
  std::ofstream f(file);
  f << "case,mb_in,h2d_gbs,d2h_gbs,floor_ms,pageable_copy_ms,execute_ms,execute_pinned_ms,device_ms,max_diff\n";
  for (const auto& r : rows)
    f << r.name << ',' << r.mb_in << ',' << r.h2d_gbs << ',' << r.d2h_gbs << ',' << r.floor_ms << ',' << r.pageable_copy_ms
      << ',' << r.exec_ms << ',' << r.exec_pinned_ms << ',' << r.device_ms << ',' << r.max_diff << '\n';
}

// Every case through run(case, sample type{}) by its bytes a sample, printed as it comes, then
// the CSV.
template <typename Case, std::size_t N, typename F>
void run_table(const Case (&cases)[N], const options& opt, F&& run) {
  std::vector<host_row> rows;
  print_header();
  for (const Case& c : cases) {
    host_row r = c.bytes == 4 ? run(c, float{}) : c.bytes == 1 ? run(c, std::uint8_t{}) : run(c, std::uint16_t{});
    print_row(r);
    rows.push_back(r);
  }
  write_csv(opt.csv, rows);
}

}  // namespace

int run_host(const options& opt) {
  cuda_stream stream;
  cudaDeviceProp prop{};
  GPUCONV_CUDA(cudaGetDeviceProperties(&prop, 0));
  std::printf("gpuconv-bench host on %s: plan::execute on host buffers ('same', reflect101, K x K kernel) against\n"
              "the PCIe floor (page-locked H2D of the input + D2H of the output, each alone); medians of %d runs\n\n",
              prop.name, opt.reps);
  const host_case cases[] = {
      {"3x3000x4000 f32 K=9", 3, 3000, 4000, 9, 4},  {"3x3000x4000 u8 K=9", 3, 3000, 4000, 9, 1},
      {"3x3000x4000 u16 K=9", 3, 3000, 4000, 9, 2},  {"3x3000x4000 f32 K=63", 3, 3000, 4000, 63, 4},
      {"1x4096^2 f32 K=9", 1, 4096, 4096, 9, 4},     {"64x256^2 f32 K=9", 64, 256, 256, 9, 4},
      {"1x1024^2 f32 K=9", 1, 1024, 1024, 9, 4},
  };
  {  // the host side's own rates: parallel memcpy between pageable buffers, and page-locking a buffer
    const std::size_t bytes = std::size_t(144) << 20;
    std::vector<char> a(bytes, 1), b(bytes, 2);
    std::printf("host memcpy of %zu MB (GB/s by threads):", bytes >> 20);
    const std::vector<conv::copy_segment> seg{{b.data(), a.data(), bytes}};
    for (int t : {1, 2, 4, 8, 16}) {
      const double ms = median_wall_ms([&] { conv::parallel_copy(t, seg); }, 1, 5);
      std::printf(" %d: %.1f", t, double(bytes) / (ms * 1e-3) / 1e9);
    }
    const double reg = median_wall_ms([&] {
      GPUCONV_CUDA(cudaHostRegister(a.data(), bytes, cudaHostRegisterDefault));
      GPUCONV_CUDA(cudaHostUnregister(a.data()));
    }, 1, 5);
    std::printf("\ncudaHostRegister + cudaHostUnregister of %zu MB: %.2f ms\n\n", bytes >> 20, reg);
  }
  run_table(cases, opt, [&](const host_case& c, auto type) { return run_case<decltype(type)>(c, opt, stream); });
  return 0;
}

int run_host3d(const options& opt) {
  cuda_stream stream;
  cudaDeviceProp prop{};
  GPUCONV_CUDA(cudaGetDeviceProperties(&prop, 0));
  std::printf("gpuconv-bench host3d on %s: plan3d::execute on host buffers ('same', reflect101, K^3 PSF) against\n"
              "the PCIe floor (page-locked H2D of the input + D2H of the output, each alone); medians of %d runs\n\n",
              prop.name, opt.reps);
  const host3d_case cases[] = {
      {"128x512^2 f32 K=31", 128, 512, 512, 31, false, 4},   {"128x512^2 u16 K=31", 128, 512, 512, 31, false, 2},
      {"128x512^2 u8 K=31", 128, 512, 512, 31, false, 1},    {"128x512^2 f32 gauss K=31", 128, 512, 512, 31, true, 4},
      {"64x256^2 f32 K=15", 64, 256, 256, 15, false, 4},
  };
  run_table(cases, opt, [&](const host3d_case& c, auto type) { return run_case3d<decltype(type)>(c, opt, stream); });
  return 0;
}

}  // namespace gpuconv::bench
