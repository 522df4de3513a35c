// Which of a host's CPUs share a core's vector units (issue 16: parallel efficiency at 16
// threads): a register-only AVX-512 FMA loop on CPU 0 alone, then on CPU 0 and CPU j together
// for every j (each thread pinned), then on every CPU at once; per-thread rates in G FMA
// instructions a second. A pair whose threads run at half CPU 0's lone rate shares one core's
// FMA units. Also prints what the kernel says of the topology and the caches. A diagnostic,
// not built by CMake (static, so that it runs on the GPU host as it is):
//   g++ -O2 -std=c++20 -static -pthread scripts/cpu-topology-probe.cpp -o /tmp/cpu-topology-probe
#include <immintrin.h>
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

using clk = std::chrono::steady_clock;

[[gnu::target("arch=x86-64-v4"), gnu::noinline]] float fma_zmm(long iters) {
  __m512 a[12];
  const __m512 c = _mm512_set1_ps(0.999f), d = _mm512_set1_ps(0.001f);
  for (int i = 0; i < 12; ++i) a[i] = _mm512_set1_ps(float(i));
  for (long it = 0; it < iters; ++it) {
#pragma GCC unroll 12
    for (int i = 0; i < 12; ++i) a[i] = _mm512_fmadd_ps(a[i], c, d);
  }
  __m512 s = a[0];
  for (int i = 1; i < 12; ++i) s = _mm512_add_ps(s, a[i]);
  return _mm512_reduce_add_ps(s);
}

std::string read_line(const std::string& path) {
  std::ifstream in(path);
  std::string s;
  std::getline(in, s);
  return s;
}

// per-thread rates (G FMA instructions a second) of threads pinned to `cpus`, all started at once
std::vector<double> rates(const std::vector<int>& cpus, long iters) {
  std::atomic<int> ready{0};
  std::vector<double> out(cpus.size());
  std::vector<std::thread> ts;
  volatile float sink = 0;
  for (size_t i = 0; i < cpus.size(); ++i)
    ts.emplace_back([&, i] {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(cpus[i], &set);
      pthread_setaffinity_np(pthread_self(), sizeof set, &set);
      ++ready;
      while (ready < int(cpus.size())) {
      }
      const auto t0 = clk::now();
      sink = sink + fma_zmm(iters);
      out[i] = 12.0 * double(iters) / std::chrono::duration<double, std::nano>(clk::now() - t0).count();
    });
  for (auto& t : ts) t.join();
  return out;
}

int main() {
  const int n = int(std::thread::hardware_concurrency());
  std::printf("%d CPUs; model: %s\n", n, [] {
    std::ifstream in("/proc/cpuinfo");
    for (std::string s; std::getline(in, s);)
      if (s.rfind("model name", 0) == 0) return s.substr(s.find(':') + 2);
    return std::string("?");
  }().c_str());
  for (int c = 0; c < n; ++c) {
    const std::string t = "/sys/devices/system/cpu/cpu" + std::to_string(c) + "/topology/";
    std::printf("cpu%-2d core_id %s package %s siblings %s\n", c, read_line(t + "core_id").c_str(),
                read_line(t + "physical_package_id").c_str(), read_line(t + "thread_siblings_list").c_str());
  }
  for (int i = 0; i < 4; ++i) {
    const std::string p = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/";
    std::printf("cache L%s %s: %s, shared by CPUs %s\n", read_line(p + "level").c_str(), read_line(p + "type").c_str(),
                read_line(p + "size").c_str(), read_line(p + "shared_cpu_list").c_str());
  }
  const long iters = 40000000;
  rates({0}, iters);  // warm-up (the clock's ramp)
  double alone = 0;
  for (int i = 0; i < 3; ++i) alone = std::max(alone, rates({0}, iters)[0]);
  std::printf("\nCPU 0 alone: %.2f G FMA/s\n", alone);
  std::printf("CPU 0 with CPU j (both pinned; per-thread rate of the slower, / CPU 0 alone):\n");
  for (int j = 1; j < n; ++j) {
    const auto r = rates({0, j}, iters);
    const double slow = std::min(r[0], r[1]);
    std::printf("  j = %-2d  %.2f  (%.2f)%s\n", j, slow, slow / alone, slow / alone < 0.75 ? "  <- shares CPU 0's units" : "");
  }
  for (int k : {n / 2, n}) {
    std::vector<int> cpus(k);
    for (int i = 0; i < k; ++i) cpus[i] = i;
    const auto r = rates(cpus, iters);
    double sum = 0;
    for (double v : r) sum += v;
    std::printf("CPUs 0..%d at once: %.1f G FMA/s in all = %.2f x CPU 0 alone (slowest thread %.2f)\n", k - 1, sum,
                sum / alone, *std::min_element(r.begin(), r.end()));
  }
  if (n >= 4) {
    std::vector<int> even;
    for (int i = 0; i < n; i += 2) even.push_back(i);
    const auto r = rates(even, iters);
    double sum = 0;
    for (double v : r) sum += v;
    std::printf("even CPUs (%zu) at once: %.1f G FMA/s in all = %.2f x CPU 0 alone\n", even.size(), sum, sum / alone);
  }
}
