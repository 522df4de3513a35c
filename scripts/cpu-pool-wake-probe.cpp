// How long the CPU backend's thread pool (conv/cpu_pool.cpp) takes to put every thread of a call
// to work (issue 16): run_on_threads(T, body) where each body notes when it started and waits
// for all T; prints, per T, the medians over calls of the last thread's start and of the whole
// call, in microseconds from the call - after 20 ms idle (as between a program's calls) and
// back to back - and in how many calls two of the T threads started on the same CPU (the kernel
// put a woken worker beside a busy thread instead of on an idle CPU: that worker then waits for
// the other's time slice to end or for a migration). A diagnostic, not built by CMake (static, so that it runs on the GPU host):
//   g++ -O2 -std=c++20 -static -pthread -I. scripts/cpu-pool-wake-probe.cpp \
//       build/conv/libgpuconv_conv.a -o /tmp/cpu-pool-wake-probe && /tmp/cpu-pool-wake-probe
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <sched.h>
#include <thread>
#include <vector>

#include "conv/cpu_pool.hpp"

using clk = std::chrono::steady_clock;

int main() {
  const int hw = int(std::thread::hardware_concurrency());
  std::vector<int> counts;
  for (int t = 2; t <= hw; t *= 2) counts.push_back(t);
  if (counts.empty() || counts.back() != hw) counts.push_back(hw);
  std::printf("threads | idle 20 ms before: last start, call (us), calls with a shared CPU | back to back: the same\n");
  for (int threads : counts) {
    double med[2][2];
    int shared[2] = {0, 0}, calls = 0;
    for (int idle = 1; idle >= 0; --idle) {
      std::vector<double> last, call;
      calls = 0;
      for (int rep = 0; rep < 60; ++rep) {
        std::vector<std::atomic<int>> on_cpu(1024);
        if (idle) std::this_thread::sleep_for(std::chrono::milliseconds(20));
        std::atomic<int> arrived{0};
        std::atomic<long long> latest{0};
        const auto t0 = clk::now();
        auto body = [&] {
          const int cpu = sched_getcpu();
          if (cpu >= 0 && cpu < 1024) ++on_cpu[cpu];
          const long long at = std::chrono::duration_cast<std::chrono::nanoseconds>(clk::now() - t0).count();
          long long seen = latest.load();
          while (at > seen && !latest.compare_exchange_weak(seen, at)) {
          }
          ++arrived;
          while (arrived.load() < threads) {
          }
        };
        gpuconv::conv::run_on_threads(threads, body);
        const double total = std::chrono::duration<double, std::micro>(clk::now() - t0).count();
        if (rep < 5) continue;
        last.push_back(latest.load() / 1e3), call.push_back(total), ++calls;
        shared[idle] += std::any_of(on_cpu.begin(), on_cpu.end(), [](const std::atomic<int>& n) { return n.load() > 1; });
      }
      std::sort(last.begin(), last.end());
      std::sort(call.begin(), call.end());
      med[idle][0] = last[last.size() / 2], med[idle][1] = call[call.size() / 2];
    }
    std::printf("%7d | %9.1f %9.1f %3d of %d | %9.1f %9.1f %3d of %d\n", threads, med[1][0], med[1][1], shared[1], calls,
                med[0][0], med[0][1], shared[0], calls);
  }
}
