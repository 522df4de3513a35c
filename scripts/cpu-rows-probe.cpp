// Where the CPU separable method's time goes on a host: per-thread rates of independent
// threads (1 and N at once) for a register-only FMA loop (zmm, ymm) and for the passes of
// conv/cpu_rows.cpp on a 1024-wide row, kw = kh = 31 (row_taps, taps_rows, column_rows), and
// row_taps against row_taps16 for kw = 7..127. A diagnostic for docs/benchmarks.md, not part of
// the build (static, so that it runs on the GPU host as it is):
//   g++ -O2 -std=c++20 -static -pthread -I. -Iconv scripts/cpu-rows-probe.cpp conv/cpu_rows.cpp \
//       conv/cpu_pool.cpp -o /tmp/cpu-rows-probe && /tmp/cpu-rows-probe 1 16
#include <immintrin.h>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>
#include "conv/cpu_rows.hpp"
using namespace gpuconv::conv;
using clk = std::chrono::steady_clock;

[[gnu::target("arch=x86-64-v4"), gnu::noinline]] float fma_zmm(long iters) {
  __m512 a[12]; __m512 c = _mm512_set1_ps(0.999f), d = _mm512_set1_ps(0.001f);
  for (int i = 0; i < 12; ++i) a[i] = _mm512_set1_ps((float)i);
  for (long it = 0; it < iters; ++it) {
#pragma GCC unroll 12
    for (int i = 0; i < 12; ++i) a[i] = _mm512_fmadd_ps(a[i], c, d);
  }
  __m512 s = a[0]; for (int i = 1; i < 12; ++i) s = _mm512_add_ps(s, a[i]);
  return _mm512_reduce_add_ps(s);
}
[[gnu::target("arch=x86-64-v3"), gnu::noinline]] float fma_ymm(long iters) {
  __m256 a[12]; __m256 c = _mm256_set1_ps(0.999f), d = _mm256_set1_ps(0.001f);
  for (int i = 0; i < 12; ++i) a[i] = _mm256_set1_ps((float)i);
  for (long it = 0; it < iters; ++it) {
#pragma GCC unroll 12
    for (int i = 0; i < 12; ++i) a[i] = _mm256_fmadd_ps(a[i], c, d);
  }
  __m256 s = a[0]; for (int i = 1; i < 12; ++i) s = _mm256_add_ps(s, a[i]);
  float o[8]; _mm256_storeu_ps(o, s); return o[0];
}
// work units per ns per thread (aggregate over the slowest thread / threads)
template <class F> double per_thread_rate(int threads, double work, F f) {
  std::atomic<int> ready{0}; std::vector<std::thread> ts; std::vector<double> ns(threads);
  for (int t = 0; t < threads; ++t) ts.emplace_back([&, t] {
    ready++; while (ready < threads) {}
    auto t0 = clk::now(); f(t); ns[t] = std::chrono::duration<double, std::nano>(clk::now() - t0).count();
  });
  for (auto& t : ts) t.join();
  double worst = 0; for (double v : ns) worst = std::max(worst, v);
  return work / worst;
}

int main(int argc, char** argv) {
  std::vector<int> counts = {1, 8, 16};
  if (argc > 1) { counts.clear(); for (int i = 1; i < argc; ++i) counts.push_back(atoi(argv[i])); }
  const long iters = 20000000;
  const int n = 1024, kw = 31, kh = 31;
  std::vector<float> k(kw, 1.0f / kw);
  std::printf("threads | zmm FMA/ns | ymm FMA/ns | row u8 ns/out | row f32 ns/out | taps f32 ns/out"
              " | col u8 ns/out | col f32 ns/out\n");
  for (int T : counts) {
    volatile float sink = 0;
    double z = per_thread_rate(T, iters * 12.0, [&](int) { sink = fma_zmm(iters); });
    double y = per_thread_rate(T, iters * 12.0, [&](int) { sink = fma_ymm(iters); });
    const int reps = 4000;
    auto row_u8 = [&](int) {
      std::vector<std::uint8_t> src(n + kw + 64, 7); std::vector<float> out(n + 64);
      for (int r = 0; r < reps; ++r) row_taps(src.data() + 16, k.data(), kw, n, out.data());
      sink = out[5]; };
    auto row_f32 = [&](int) {
      std::vector<float> src(n + kw + 64, 7); std::vector<float> out(n + 64);
      for (int r = 0; r < reps; ++r) row_taps(src.data() + 16, k.data(), kw, n, out.data());
      sink = out[5]; };
    auto row16 = [&](auto tag, int kw_) { return [&, tag, kw_](int) {
      using T = decltype(tag);
      std::vector<std::vector<T>> src(16, std::vector<T>(n + kw_ + 64, (T)7)); std::vector<const T*> sp(16);
      std::vector<std::vector<float>> o(16, std::vector<float>(n + 64)); std::vector<float*> op(16);
      std::vector<float> kk(kw_, 1.0f / kw_);
      for (int r = 0; r < 16; ++r) { sp[r] = src[r].data(); op[r] = o[r].data(); }
      for (int r = 0; r < reps / 16; ++r) row_taps16(sp.data(), kk.data(), kw_, n, op.data());
      sink = o[3][5]; }; };
    auto row1 = [&](auto tag, int kw_) { return [&, tag, kw_](int) {
      using T = decltype(tag);
      std::vector<T> src(n + kw_ + 64, (T)7); std::vector<float> out(n + 64); std::vector<float> kk(kw_, 1.0f / kw_);
      for (int r = 0; r < reps; ++r) row_taps(src.data() + 16, kk.data(), kw_, n, out.data());
      sink = out[5]; }; };
    if (T == counts[0]) {
      std::printf("row pass ns/out, 1 row vs 16 rows (threads %d):\n", T);
      for (int kw_ : {7, 9, 15, 31, 63, 127}) {
        double a = 1 / per_thread_rate(T, (double)reps * n, row1(std::uint8_t{}, kw_));
        double b = 1 / per_thread_rate(T, (double)reps * n, row16(std::uint8_t{}, kw_));
        double c = 1 / per_thread_rate(T, (double)reps * n, row1(float{}, kw_));
        double d = 1 / per_thread_rate(T, (double)reps * n, row16(float{}, kw_));
        std::printf("  kw %3d  u8 %.3f -> %.3f   f32 %.3f -> %.3f\n", kw_, a, b, c, d);
      }
    }
    auto taps_f32 = [&](int) {
      std::vector<float> src(n + kw + 64, 7); std::vector<float> out(n + 64); const float* rows[1] = {src.data() + 16};
      for (int r = 0; r < reps; ++r) taps_rows(rows, k.data(), 1, kw, n, out.data());
      sink = out[5]; };
    auto col = [&](auto tag) { return [&, tag](int) {
      using T = decltype(tag);
      const int ring_rows = kh + column_block - 1;
      std::vector<float> ring(ring_rows * (n + 32), 3.f);
      std::vector<const float*> rows(ring_rows);
      for (int m = 0; m < ring_rows; ++m) rows[m] = ring.data() + m * (n + 32);
      std::vector<T> out(column_block * n);
      for (int r = 0; r < reps / column_block; ++r)
        column_rows(rows.data(), k.data(), kh, column_block, n, out.data(), n);
      sink = (float)out[5]; }; };
    double ru8 = 1 / per_thread_rate(T, (double)reps * n, row_u8);
    double rf = 1 / per_thread_rate(T, (double)reps * n, row_f32);
    double tf = 1 / per_thread_rate(T, (double)reps * n, taps_f32);
    double cu8 = 1 / per_thread_rate(T, (double)reps * n, col(std::uint8_t{}));
    double cf = 1 / per_thread_rate(T, (double)reps * n, col(float{}));
    std::printf("%7d | %10.2f | %10.2f | %13.3f | %14.3f | %15.3f | %13.3f | %14.3f\n", T, z, y, ru8, rf, tf, cu8, cf);
  }
}
