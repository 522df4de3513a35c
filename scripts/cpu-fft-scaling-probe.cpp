// How the CPU FFT method's in-cache work scales with busy cores on a host (issue 16: parallel
// efficiency at 16 threads): T threads, each on its own 128^2 workspace, run the tile transform
// (forward, multiply by a spectrum, inverse: the FFT method's work per tile without the gather
// from the image and the scatter to the output) over and over; the time a tile takes a thread
// at T = 1, 2, 4, 8, 16 threads, the thread counts interleaved round by round so that the
// host's drift falls on all of them alike. A thread's tile needs ~260 KB (its workspace and the
// spectrum): from L2, never from memory, so a slower tile at 16 threads is the core's own rate
// dropping as more cores are busy, which no change to the method's threading can win back.
// A diagnostic, not built by CMake (static, so that it runs on the GPU host as it is):
//   g++ -O2 -std=c++20 -static -pthread -I. scripts/cpu-fft-scaling-probe.cpp \
//       build/fft/libgpuconv_fft.a -o /tmp/cpu-fft-scaling-probe && /tmp/cpu-fft-scaling-probe
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <thread>
#include <vector>

#include "fft/host/real_2d_tile.hpp"

using clk = std::chrono::steady_clock;
using gpuconv::fft::host::real_2d_tile_plan;

// ns a tile on each of `threads` threads started together, each doing `tiles` tiles
std::vector<double> tile_ns(const real_2d_tile_plan& plan, const std::vector<float>& spec_re,
                            const std::vector<float>& spec_im, int threads, int tiles) {
  std::atomic<int> ready{0};
  std::vector<double> out(threads);
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t)
    ts.emplace_back([&, t] {
      auto ws = plan.make_workspace();
      for (std::size_t i = 0; i < ws.z_re.size(); ++i) ws.z_re[i] = float((i * 7 + t) % 13), ws.z_im[i] = float(i % 5);
      ++ready;
      while (ready < threads) {
      }
      const auto t0 = clk::now();
      for (int i = 0; i < tiles; ++i) {
        plan.forward(ws);
        plan.multiply(ws, spec_re.data(), spec_im.data());
        plan.inverse(ws);
        ws.z_re[0] *= 1e-8f;  // keep the values bounded
      }
      out[t] = std::chrono::duration<double, std::nano>(clk::now() - t0).count() / tiles;
    });
  for (auto& t : ts) t.join();
  return out;
}

int main(int argc, char** argv) {
  const int side = argc > 1 ? std::atoi(argv[1]) : 128, rounds = argc > 2 ? std::atoi(argv[2]) : 5;
  const int hw = int(std::thread::hardware_concurrency());
  real_2d_tile_plan plan(side, side);
  std::vector<float> spec_re(plan.spectrum_floats(), 1e-4f), spec_im(plan.spectrum_floats(), 0.f);
  std::vector<int> counts;
  for (int t = 1; t <= hw; t *= 2) counts.push_back(t);
  if (counts.back() != hw) counts.push_back(hw);
  const int tiles = std::max(20, int(400.0 * 128 * 128 / (double(side) * side)));
  tile_ns(plan, spec_re, spec_im, 1, tiles);  // warm-up
  std::map<int, std::vector<double>> mean_ns, worst_ns;
  for (int r = 0; r < rounds; ++r)
    for (int t : counts) {
      const auto ns = tile_ns(plan, spec_re, spec_im, t, tiles);
      double sum = 0;
      for (double v : ns) sum += v;
      mean_ns[t].push_back(sum / t);
      worst_ns[t].push_back(*std::max_element(ns.begin(), ns.end()));
    }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  std::printf("%d^2 tiles (%s), %d tiles a thread, %d rounds, thread counts interleaved; medians\n", side, plan.isa(),
              tiles, rounds);
  std::printf("threads | us a tile (mean of threads)  slowest thread | x the 1-thread tile | efficiency bound\n");
  const double one = median(mean_ns[1]);
  for (int t : counts) {
    const double m = median(mean_ns[t]), w = median(worst_ns[t]);
    std::printf("%7d | %10.2f %24.2f | %18.2f | %5.0f%%\n", t, m / 1e3, w / 1e3, m / one, 100 * one / w);
  }
}
