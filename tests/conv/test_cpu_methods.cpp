// The CPU backend's methods (conv/method.hpp) forced one by one, each against the direct
// double-precision reference: direct, separable (rank-1 kernels: outer products) and FFT,
// over modes x operations x boundaries x pixel types (float, uint8, uint16), kernel banks,
// and the chooser itself.
// float: ||out - ref|| / || |k| * |x| || <= 1e-5 for direct and separable (they sum kh * kw or
// kh + kw float products, ~K * 6e-8 relative), 2e-5 for the FFT (4 x its bound on 128^2
// tiles), each output's scale being at least ||k||_2 rms(x) as in test_conv_plan.cpp.
// uint8/uint16: the reference rounded half to even and saturated, except pixels within that
// tolerance of the scale of a half step, which may round either way.
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <thread>
#ifdef __linux__
#include <sched.h>
#endif
#include <vector>

#include "conv/backend.hpp"
#include "conv/cpu_rows.hpp"
#include "conv/separable_vnni.hpp"
#include "fft/host/isa.hpp"
#include "method_check.hpp"

using namespace gpuconv;
using namespace gpuconv::conv;
using test::cpu_forced;
using test::make_kernels;

namespace {

void sweep_method(cpu_method method) {
  const auto k = GENERATE(std::array<int, 2>{1, 1}, std::array<int, 2>{2, 3}, std::array<int, 2>{3, 3},
                          std::array<int, 2>{7, 4}, std::array<int, 2>{15, 15});
  const auto img = GENERATE(std::array<int, 2>{1, 1}, std::array<int, 2>{9, 13}, std::array<int, 2>{70, 150});
  test::sweep_method(cpu_forced(method), k, img);
}

// the CPU method `m` forced
template <typename T>
void check_method(cpu_method m, long long h, long long w, int planes, int count, int kh, int kw, const options& o) {
  test::check_method<T>(cpu_forced(m), h, w, planes, count, kh, kw, o);
}

}  // namespace

TEST_CASE("CPU direct method matches the reference: modes x operations x boundaries x types", "[conv]") {
  sweep_method(cpu_method::direct);
}

TEST_CASE("CPU separable method matches the reference: modes x operations x boundaries x types", "[conv]") {
  sweep_method(cpu_method::separable);
}

TEST_CASE("CPU FFT method matches the reference: modes x operations x boundaries x types", "[conv]") {
  sweep_method(cpu_method::fft);
}

TEST_CASE("CPU methods: banks, several units per plane, wide kernels", "[conv]") {
  options o;
  o.border = boundary::reflect;
  for (auto m : {cpu_method::direct, cpu_method::separable, cpu_method::fft}) {
    check_method<float>(m, 300, 1100, 2, 3, 5, 7, o);   // several bands and strips, a bank
    check_method<std::uint8_t>(m, 90, 700, 1, 2, 9, 3, o);
    o.mode = output_mode::full;
    check_method<float>(m, 80, 75, 1, 1, 41, 33, o);    // kernel wider than a band's rows
    o.mode = output_mode::same;
  }
}

TEST_CASE("CPU direct and separable: every fixed tap count, ring wrap-around, several strips", "[conv]") {
  // taps_rows unrolls 1 x 2..9 and 2..9 x 1 (the separable passes) and 3 x 3, 5 x 5 (direct);
  // the separable ring of kh filtered rows wraps many times per band; the 1600-column images
  // are cut into strips where there are two threads or more (ring_units: four units a thread)
  options o;
  o.border = boundary::reflect101;
  for (int k = 2; k <= 9; ++k) {
    check_method<float>(cpu_method::separable, 70, 150, 1, 1, k, k, o);
    check_method<std::uint8_t>(cpu_method::separable, 70, 150, 1, 1, k, 10 - k, o);
    check_method<std::uint16_t>(cpu_method::separable, 70, 150, 1, 1, 11 - k, k, o);
  }
  o.border = boundary::constant;
  o.constant_value = 3.f;
  for (int k : {3, 5}) {
    check_method<float>(cpu_method::direct, 70, 150, 1, 2, k, k, o);
    check_method<std::uint8_t>(cpu_method::direct, 70, 150, 1, 1, k, k, o);
  }
  check_method<float>(cpu_method::separable, 50, 1600, 1, 1, 40, 3, o);
  check_method<std::uint8_t>(cpu_method::separable, 50, 1600, 1, 1, 40, 3, o);
}

TEST_CASE("CPU separable: several output rows per column call, band tails, odd widths", "[conv]") {
  // the column pass sums column_block (8) output rows per call, a band's last 1..7 rows four
  // at a time and then one at a time; strips of 1..200 columns take the wide blocks, 16-column
  // blocks and the scalar loop, the last block moved back over computed columns
  options o;
  o.border = boundary::reflect101;
  for (int k : {2, 5, 9, 10, 31}) {
    for (long long h : {1LL, 3LL, 5LL, 65LL, 66LL, 67LL, 69LL, 71LL}) {
      INFO("kh " << k << " h " << h);
      check_method<float>(cpu_method::separable, h, 81, 1, 1, k, 3, o);
      check_method<std::uint8_t>(cpu_method::separable, h, 17, 1, 1, k, 5, o);
    }
    check_method<std::uint16_t>(cpu_method::separable, 67, 200, 2, 2, k, 11, o);
    check_method<float>(cpu_method::separable, 70, 7, 1, 1, k, 12, o);
  }
}

// column_rows gives, for each of its rows, taps_rows's result on that row to the bit; narrow
// outputs rounded and saturated alike (values far outside the range, NaN, past 2^31); on an
// AVX-512 machine the full blocks of narrow rows take column_rows_avx512's stores
template <typename T>
void check_column_rows() {
  for (int kh : {1, 2, 3, 4, 7, 9, 10, 31}) {
    for (long long n : {1LL, 15LL, 16LL, 17LL, 63LL, 64LL, 65LL, 100LL, 129LL, 200LL}) {
      const int count_max = column_block, rows_n = kh + count_max - 1;
      auto values = test::random_reals<float>(std::size_t(rows_n * n), 7 + kh);
      const float scale = std::is_same_v<T, float> ? 1.f : std::is_same_v<T, std::uint8_t> ? 400.f : 1e5f;
      for (auto& v : values) v *= scale;
      values[std::size_t(n / 2)] = std::nanf("");
      // sums far outside the range on both sides (past 2^31: the narrow stores saturate them)
      values[std::size_t(n + n / 3)] = 1e12f;
      values[std::size_t(2 * n + (2 * n) / 3)] = -1e12f;
      const auto k = test::random_reals<float>(std::size_t(kh), 3 + kh);
      std::vector<const float*> rows((std::size_t)rows_n);
      for (int m = 0; m < rows_n; ++m) rows[std::size_t(m)] = values.data() + m * n;
      for (int count = 1; count <= count_max; ++count) {
        INFO("kh " << kh << " n " << n << " count " << count);
        std::vector<T> got(std::size_t(count * n)), want(got.size());
        column_rows(rows.data(), k.data(), kh, count, n, got.data(), n);
        for (int j = 0; j < count; ++j) taps_rows(rows.data() + count - 1 - j, k.data(), kh, 1, n, want.data() + j * n);
        bool same = true;
        for (std::size_t i = 0; i < got.size(); ++i)
          same = same && (got[i] == want[i] || (got[i] != got[i] && want[i] != want[i]));
        CHECK(same);
      }
    }
  }
}

TEST_CASE("CPU column_rows: each row as taps_rows gives it", "[conv]") {
  check_column_rows<float>();
  check_column_rows<std::uint8_t>();
  check_column_rows<std::uint16_t>();
}

// The narrow stores of every vector width (AVX-512, AVX2, SSE2: whichever GPUCONV_CPU_ISA
// selects; CTest runs the "CPU *" cases under avx2 too) against the rule written out here:
// NaN and negatives to 0, above the top to the top, else rounded half to even. The sums are
// the values themselves (one tap of 1), through taps_rows and column_rows (8 rows), over
// lengths that leave full blocks and tails of every width.
template <typename T>
void check_narrow_stores() {
  const float top = sizeof(T) == 1 ? 255.f : 65535.f;
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> special = {std::nanf(""), -inf, inf, -1.f, -0.5f, -0.f, 0.f, 0.5f, 1.5f, 2.5f, 3.49f,
                                      3.5f, 126.5f, 127.5f, 254.5f, 254.51f, 255.f, 255.5f, 256.f, 1000.5f,
                                      32767.5f, 65534.5f, 65535.f, 65535.5f, 65536.f, 3e9f, 5e9f, 1e30f, -3e9f};
  const auto expected = [&](float v) -> T {
    if (!(v > 0.f)) return T(0);
    if (v >= top) return T(top);
    return T(std::nearbyint(v));  // the default rounding mode: ties to even
  };
  for (long long n : {1LL, 3LL, 4LL, 7LL, 8LL, 15LL, 16LL, 17LL, 31LL, 33LL, 64LL, 100LL, 129LL}) {
    INFO("n " << n);
    std::vector<float> in((std::size_t)n);
    for (long long t = 0; t < n; ++t) in[(std::size_t)t] = special[(std::size_t)((t * 7) % (long long)special.size())];
    const float one = 1.f;
    const float* row = in.data();
    std::vector<T> got((std::size_t)n);
    taps_rows(&row, &one, 1, 1, n, got.data());
    bool same = true;
    for (long long t = 0; t < n; ++t) same = same && got[(std::size_t)t] == expected(in[(std::size_t)t]);
    CHECK(same);
    const std::vector<const float*> rows(column_block, in.data());
    std::vector<T> block((std::size_t)(n * column_block));
    column_rows(rows.data(), &one, 1, column_block, n, block.data(), n);
    same = true;
    for (std::size_t i = 0; i < block.size(); ++i) same = same && block[i] == expected(in[i % (std::size_t)n]);
    CHECK(same);
  }
}

TEST_CASE("CPU narrow stores: NaN, infinities, negatives, ties and values past the top", "[conv]") {
  check_narrow_stores<std::uint8_t>();
  check_narrow_stores<std::uint16_t>();
}

// row_taps (the separable row pass, read in place in the pixel type) gives taps_rows's result
// on the widened row to the bit, for row lengths around multiples of 16 and 128 and kw on both
// sides of multiples of 16; the row_taps_pad values before the row and those after its end
// are NaN (float) or 255/65535 (narrow), which would show in any output that read them
template <typename T>
void check_row_taps() {
  const float top = std::is_same_v<T, float> ? 0.f : std::is_same_v<T, std::uint8_t> ? 255.f : 65535.f;
  for (int kw : {1, 2, 3, 5, 9, 15, 16, 17, 31, 32, 33, 47, 63, 64, 65, 127}) {
    for (long long n : {1LL, 15LL, 16LL, 17LL, 31LL, 100LL, 127LL, 128LL, 129LL, 143LL, 144LL, 145LL, 255LL, 300LL}) {
      INFO("kw " << kw << " n " << n);
      const long long len = n + kw - 1, after = 16;
      const auto values = test::random_reals<float>(std::size_t(len), 5 + kw);
      std::vector<T> buf((std::size_t)(row_taps_pad + len + after));
      std::vector<float> wide((std::size_t)len);
      for (std::size_t i = 0; i < buf.size(); ++i) {
        const long long t = (long long)i - row_taps_pad;
        if (t < 0 || t >= len) {
          buf[i] = std::is_same_v<T, float> ? T(std::nanf("")) : T(top);
          continue;
        }
        // float: values near 1 and one NaN; narrow: the whole range, its ends included
        const float v = values[std::size_t(t)];
        if constexpr (std::is_same_v<T, float>) buf[i] = t == len / 2 && len > 1 ? std::nanf("") : 1.f + v;
        else buf[i] = t % 7 == 0 ? T(top) : t % 11 == 0 ? T(0) : T(std::abs(v) * top);
        wide[std::size_t(t)] = float(buf[i]);
      }
      const auto k = test::random_reals<float>(std::size_t(kw), 9 + kw);
      std::vector<float> got((std::size_t)n), want(got.size());
      row_taps(buf.data() + row_taps_pad, k.data(), kw, n, got.data());
      const float* row = wide.data();
      taps_rows(&row, k.data(), 1, kw, n, want.data());
      // To the bit in optimised builds: row_taps's AVX-512 loop uses explicit FMAs, taps_rows the
      // FMAs GCC contracts its multiply-adds into. Under ASan/UBSan instrumentation GCC leaves some
      // of taps_rows's multiply-adds unfused (1-ulp differences, measured), so the sanitized
      // build checks agreement to 1e-6 of the taps' magnitude instead.
#if defined(__SANITIZE_ADDRESS__)
      double scale = 0;
      for (float c : k) scale += std::abs(c);
      scale *= std::is_same_v<T, float> ? 2.0 : double(top);
      const double tolerance = 1e-6 * scale;
#else
      const double tolerance = 0;
#endif
      bool same = true;
      for (std::size_t i = 0; i < got.size(); ++i)
        same = same && (got[i] == want[i] || (got[i] != got[i] && want[i] != want[i]) ||
                        std::abs(double(got[i]) - double(want[i])) <= tolerance);
      CHECK(same);
      // only the outputs whose taps read the NaN are NaN
      if constexpr (std::is_same_v<T, float>) {
        long long nan = 0;
        for (float v : got) nan += v != v;
        const long long at = len / 2;  // outputs t with t <= at <= t + kw - 1
        CHECK(nan == (len > 1 ? std::min(at, n - 1) - std::max(0LL, at - kw + 1) + 1 : 0));
      }
    }
  }
}

TEST_CASE("CPU row_taps: the row pass in place, to the bit taps_rows on the widened row", "[conv]") {
  check_row_taps<float>();
  check_row_taps<std::uint8_t>();
  check_row_taps<std::uint16_t>();
}

// row_taps16 (16 rows at once, transposed) gives row_taps's result on each row to the bit, for
// lengths around multiples of 16 and of its 512-output chunks; each row is its own allocation
// of exactly n + kw - 1 values (a read past either end shows under ASan), the rows differ,
// and one float row holds a NaN that must reach only that row's outputs over it
template <typename T>
void check_row_taps16() {
  if (!row_group_available()) {
    SUCCEED("row_taps16 needs AVX-512; this host runs row_taps per row");
    return;
  }
  const float top = std::is_same_v<T, float> ? 0.f : std::is_same_v<T, std::uint8_t> ? 255.f : 65535.f;
  for (int kw : {1, 2, 3, 9, 15, 16, 17, 31, 33, 63, 127}) {
    for (long long n : {16LL, 17LL, 31LL, 100LL, 511LL, 512LL, 513LL, 1000LL, 1040LL}) {
      INFO("kw " << kw << " n " << n);
      const long long len = n + kw - 1;
      std::vector<std::vector<T>> rows(row_group);
      std::vector<const T*> src(row_group);
      for (int r = 0; r < row_group; ++r) {
        const auto values = test::random_reals<float>(std::size_t(len), 100 * r + kw);
        rows[std::size_t(r)].resize(std::size_t(len));
        for (long long t = 0; t < len; ++t) {
          const float v = values[std::size_t(t)];
          T& x = rows[std::size_t(r)][std::size_t(t)];
          if constexpr (std::is_same_v<T, float>) x = r == 5 && t == len / 2 ? std::nanf("") : 1.f + v;
          else x = (t + r) % 7 == 0 ? T(top) : (t + r) % 11 == 0 ? T(0) : T(std::abs(v) * top);
        }
        src[std::size_t(r)] = rows[std::size_t(r)].data();
      }
      const auto k = test::random_reals<float>(std::size_t(kw), 9 + kw);
      std::vector<std::vector<float>> got(row_group, std::vector<float>(std::size_t(n)));
      std::vector<float*> out(row_group);
      for (int r = 0; r < row_group; ++r) out[std::size_t(r)] = got[std::size_t(r)].data();
      row_taps16(src.data(), k.data(), kw, n, out.data());
      bool same = true;
      for (int r = 0; r < row_group; ++r) {
        // row_taps reads row_taps_pad values before the row: give it a padded copy
        std::vector<T> padded(std::size_t(row_taps_pad + len));
        std::copy(rows[std::size_t(r)].begin(), rows[std::size_t(r)].end(), padded.begin() + row_taps_pad);
        std::vector<float> want((std::size_t)n);
        row_taps(padded.data() + row_taps_pad, k.data(), kw, n, want.data());
        for (long long t = 0; t < n; ++t) {
          const float g = got[std::size_t(r)][std::size_t(t)], w = want[std::size_t(t)];
          same = same && (g == w || (g != g && w != w));
        }
      }
      CHECK(same);
    }
  }
}

TEST_CASE("CPU row_taps16: sixteen rows at once, to the bit row_taps on each", "[conv]") {
  check_row_taps16<float>();
  check_row_taps16<std::uint8_t>();
  check_row_taps16<std::uint16_t>();
}

TEST_CASE("CPU separable: rows read in place and extended at the boundary, every mode and border", "[conv]") {
  // row_units cuts wide images into strips (ring_units: kh + kw = 73 allows strips of at most
  // 1792 columns: two or more here);
  // the row pass reads the middle of each row in place and builds extended rows for the
  // outputs near the image's left and right edges and for rows outside it
  for (auto mode : {output_mode::same, output_mode::valid, output_mode::full}) {
    for (auto border : {boundary::reflect101, boundary::constant, boundary::zero}) {
      options o;
      o.mode = mode;
      o.border = border;
      o.constant_value = 7.f;
      INFO("mode " << int(mode) << " border " << int(border));
      check_method<float>(cpu_method::separable, 40, 2000, 1, 1, 40, 33, o);
      check_method<std::uint8_t>(cpu_method::separable, 50, 1953, 1, 1, 41, 32, o);
      check_method<std::uint16_t>(cpu_method::separable, 20, 161, 1, 1, 5, 17, o);
      check_method<std::uint8_t>(cpu_method::separable, 9, 47, 1, 1, 3, 31, o);
    }
  }
}

TEST_CASE("CPU guided_units: every unit once, in runs that shrink to single units", "[conv]") {
  for (const long long total : {0LL, 1LL, 5LL, 31LL, 1764LL, 100000LL})
    for (const int threads : {1, 2, 3, 16}) {
      INFO("total " << total << ", threads " << threads);
      // one thread: the runs in order, each a 1 / (2 threads) share of what is left
      guided_units one(total, threads);
      long long at = 0, runs = 0;
      for (auto r = one.next(); r.first < r.second; r = one.next(), ++runs) {
        CHECK(r.first == at);
        CHECK(r.second - r.first == std::max<long long>(1, (total - at) / (2LL * threads)));
        at = r.second;
      }
      CHECK(at == total);
      CHECK(one.next() == std::pair<long long, long long>(total, total));
      if (total >= 4LL * threads) CHECK(runs < total);  // the first run longer than one unit
      // several threads at once: each unit handed out exactly once
      guided_units shared(total, threads);
      std::vector<int> seen(std::size_t(total), 0);
      std::vector<std::vector<std::pair<long long, long long>>> got{std::size_t(threads)};
      std::vector<std::thread> ts;
      for (int t = 0; t < threads; ++t)
        ts.emplace_back([&, t] {
          for (auto r = shared.next(); r.first < r.second; r = shared.next()) got[std::size_t(t)].push_back(r);
        });
      for (auto& t : ts) t.join();
      for (const auto& runs_of_one : got)
        for (const auto& r : runs_of_one)
          for (long long u = r.first; u < r.second; ++u) ++seen[std::size_t(u)];
      CHECK(std::all_of(seen.begin(), seen.end(), [](int n) { return n == 1; }));
    }
}

#ifdef __linux__
TEST_CASE("CPU thread pool: every thread of a call may run on all of the caller's CPUs", "[conv]") {
  // the pool narrows each worker to one CPU for its wake-up and widens it again as it starts:
  // inside the body (and after calls that a worker skipped) no thread is left on one CPU
  cpu_set_t mine;
  REQUIRE(sched_getaffinity(0, sizeof mine, &mine) == 0);
  const int allowed = CPU_COUNT(&mine);
  for (int threads : {2, 3, 8, 2, 16, 1, 5}) {
    INFO("threads " << threads);
    for (int call = 0; call < 20; ++call) {
      std::atomic<int> arrived{0}, narrower{0};
      auto body = [&] {
        cpu_set_t now;
        if (sched_getaffinity(0, sizeof now, &now) != 0 || CPU_COUNT(&now) != allowed) ++narrower;
        ++arrived;
        // wait (a little) for the others, so that the call has `threads` threads in it
        for (int spin = 0; arrived.load() < threads && spin < 2000000; ++spin) std::this_thread::yield();
      };
      run_on_threads(threads, body);
      CHECK(narrower.load() == 0);
      CHECK(arrived.load() >= 1);
    }
  }
}
#endif

TEST_CASE("CPU thread pool: calls whose workers poll for the next one, mixed with calls that park them", "[conv]") {
  // run_on_threads(..., spin_us): the workers of a call that asked for it poll before they park;
  // the next call (polling or not, back to back or after the polls ran out, with more or fewer
  // threads) still runs each unit once and returns only when every unit is done
  struct step {
    int threads, spin_us, pause_us;
  };
  const step steps[] = {{4, 200, 0},   {4, 200, 0}, {4, 0, 0},     {3, 200, 0},  {8, 200, 500}, {2, 0, 0},
                        {8, 1000, 0}, {5, 0, 300}, {4, 200, 1000}, {1, 200, 0}, {6, 200, 0},   {6, 0, 0}};
  for (int round = 0; round < 30; ++round)
    for (const step& s : steps) {
      INFO("round " << round << " threads " << s.threads << " spin_us " << s.spin_us);
      if (s.pause_us) std::this_thread::sleep_for(std::chrono::microseconds(s.pause_us));
      const long long units = 97;
      std::vector<std::atomic<int>> ran(units);
      for (auto& r : ran) r.store(0);
      std::atomic<long long> next{0};
      auto body = [&] {
        for (long long u = next++; u < units; u = next++) ++ran[std::size_t(u)];
      };
      run_on_threads(s.threads, body, s.spin_us);
      int wrong = 0;
      for (const auto& r : ran) wrong += r.load() != 1;
      CHECK(wrong == 0);
    }
}

TEST_CASE("CPU thread pool: any thread count, plans executed from several threads at once", "[conv]") {
  // one pool serves one call at a time; calls that find it busy start their own threads.
  // Units are summed in the same order whichever thread takes them: results are identical.
  const long long h = 130, w = 300;
  const auto img = test::random_reals<float>(std::size_t(h * w), 11);
  const auto dense = make_kernels(1, 5, 5, false, 12), sep = make_kernels(1, 9, 9, true, 13),
             big = make_kernels(1, 33, 33, false, 14);
  struct one {
    const std::vector<float>* k;
    int K;
    cpu_method m;
  };
  for (const one& c : {one{&dense, 5, cpu_method::direct}, one{&sep, 9, cpu_method::separable},
                       one{&big, 33, cpu_method::fft}}) {
    INFO("method " << to_string(c.m));
    plan_options po;
    po.device = backend::cpu;
    po.cpu = c.m;
    po.threads = 1;
    std::vector<float> want(std::size_t(h * w));
    plan(h, w, 1, c.k->data(), c.K, c.K, po).execute(img.data(), want.data());
    for (int threads : {0, 2, 3, 7}) {
      po.threads = threads;
      std::vector<float> got(want.size());
      plan(h, w, 1, c.k->data(), c.K, c.K, po).execute(img.data(), got.data());
      CHECK(got == want);
    }
    po.threads = 2;
    std::vector<int> mismatches(4, 0);
    std::vector<std::thread> callers;
    for (int t = 0; t < 4; ++t)
      callers.emplace_back([&, t] {
        plan mine(h, w, 1, c.k->data(), c.K, c.K, po);
        std::vector<float> got(want.size());
        for (int r = 0; r < 25; ++r) {
          std::fill(got.begin(), got.end(), -1.f);
          mine.execute(img.data(), got.data());
          mismatches[t] += got != want;
        }
      });
    for (auto& t : callers) t.join();
    CHECK(mismatches == std::vector<int>(4, 0));
  }
}

TEST_CASE("CPU method chooser: rank-1 detection and the cost model's choices", "[conv]") {
  const auto sep = make_kernels(1, 7, 7, true, 42), dense = make_kernels(1, 7, 7, false, 42);
  CHECK(factor_rank1(sep.data(), 7, 7).found());
  CHECK_FALSE(factor_rank1(dense.data(), 7, 7).found());
  const std::vector<float> zero(9, 0.f);
  CHECK_FALSE(factor_rank1(zero.data(), 3, 3).found());
  const float k3[9] = {1, 2, 1, 2, 4, 2, 1, 2, 1};
  plan_options po;
  po.device = backend::cpu;
  CHECK(plan(64, 64, 1, k3, 3, 3, po).method() == cpu_method::separable);
  CHECK(plan(64, 64, 1, sep.data(), 7, 7, po).method() == cpu_method::separable);
  CHECK(plan(64, 64, 1, dense.data(), 7, 7, po).method() == cpu_method::direct);
  // long float sums are left to the FFT however small the output (accuracy, method.cpp)
  const auto wide = make_kernels(1, 20, 30, false, 5);
  po.semantics.mode = output_mode::valid;
  CHECK(plan(20, 30, 1, wide.data(), 20, 30, po).method() == cpu_method::fft);
  po.semantics.mode = output_mode::same;
  const auto big = make_kernels(1, 63, 63, false, 7);
  const plan p63(2048, 2048, 1, big.data(), 63, 63, po);
  CHECK(p63.method() == cpu_method::fft);
  CHECK(p63.tiles().tile_h == 256);  // 512^2 tiles pad less but miss the L2
  CHECK(choose_cpu_tiling(4096, 4096, 31, 31).tile_h == 128);
  po.cpu = cpu_method::separable;
  CHECK_THROWS_AS(plan(64, 64, 1, dense.data(), 7, 7, po), std::invalid_argument);
}

// tests/CMakeLists.txt runs the "CPU *" cases again with GPUCONV_CPU_ISA=avx2 (cpu_rows_avx2):
// the row and column passes' AVX2 version on a machine that would pick AVX-512.
TEST_CASE("CPU ISA: GPUCONV_CPU_ISA lowers the level the vector code runs at, never above the CPU's", "[conv]") {
  using fft::host::host_isa;
  host_isa cpu = host_isa::baseline;
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) cpu = host_isa::avx2;
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512vl"))
    cpu = host_isa::avx512;
#endif
  const char* e = std::getenv("GPUCONV_CPU_ISA");
  host_isa asked = cpu;
  if (e != nullptr && std::strcmp(e, "avx2") == 0) asked = host_isa::avx2;
  if (e != nullptr && std::strcmp(e, "baseline") == 0) asked = host_isa::baseline;
  const host_isa expected = asked < cpu ? asked : cpu;
  CAPTURE(e ? e : "(unset)", fft::host::host_isa_name(cpu), fft::host::host_isa_name(expected));
  CHECK(fft::host::selected_host_isa() == expected);
  // the row pass groups 16 rows only with AVX-512's registers
  CHECK(row_group_available() == (expected == host_isa::avx512));
}

TEST_CASE("CPU ring units: every output once, long bands for wide kernels, enough units for the threads", "[conv]") {
  struct shape {
    long long h, w;
    int kh, kw, planes;
  };
  for (const shape s : {shape{4096, 4096, 31, 31, 1}, shape{3000, 4000, 31, 31, 3}, shape{4096, 4096, 3, 3, 1},
                        shape{4096, 4096, 127, 127, 1}, shape{50, 1600, 40, 3, 1}, shape{9, 47, 3, 31, 1},
                        shape{1000, 100, 7, 7, 2}, shape{1, 1, 1, 1, 1}}) {
    for (int threads : {1, 2, 16, 64}) {
      for (bool direct : {false, true}) {
        problem p{};
        p.map.out_h = s.h, p.map.out_w = s.w, p.kh = s.kh, p.kw = s.kw, p.planes = s.planes;
        p.options.threads = threads;
        const long long longest = direct ? std::max(64, 4 * s.kh) : s.h;
        const int per_thread = direct ? 4 : 8;
        const row_units u = direct ? ring_units(p, 1.0, double(s.kh) * s.kw, longest, per_thread)
                                   : ring_units(p, s.kw, s.kh, longest, per_thread);
        INFO(s.h << " x " << s.w << " x " << s.planes << ", K " << s.kh << " x " << s.kw << ", " << threads
                 << " threads, " << (direct ? "direct" : "separable") << ": bands " << u.band << ", strips " << u.strip);
        const long long least = std::min<long long>(s.h, std::max(8, s.kh));
        CHECK(u.band >= least);
        CHECK(u.band <= std::max(longest, least));
        CHECK(u.strip >= std::min<long long>(s.w, 256));
        CHECK(u.strip <= std::max<long long>(512, (512 << 10) / (4 * (s.kh + s.kw))));
        // per_thread units a thread where bands of `least` rows or more and strips of 256 columns or more
        // (and no wider than the ring allows) would give them
        const long long bands = std::max<long long>(1, s.h / least), band = (s.h + bands - 1) / bands;
        const long long widest = std::min<long long>(s.w, std::max<long long>(512, (512 << 10) / (4 * (s.kh + s.kw)) / 64 * 64));
        const long long most = s.planes * ((s.h + band - 1) / band) * std::max((s.w + widest - 1) / widest, s.w / 256);
        CHECK(s.planes * u.per_plane() >= std::min<long long>(per_thread * threads, most));
        std::vector<int> seen(std::size_t(s.planes * s.h * s.w), 0);
        for (long long k = 0; k < s.planes * u.per_plane(); ++k) {
          const auto sp = u.at(k);
          for (long long y = sp.y0; y < sp.y1; ++y)
            for (long long x = sp.x0; x < sp.x0 + sp.n; ++x) ++seen[std::size_t((sp.plane * s.h + y) * s.w + x)];
        }
        CHECK(std::all_of(seen.begin(), seen.end(), [](int c) { return c == 1; }));
      }
    }
  }
  // 4096^2 separable K = 31 on 16 threads: bands long enough that under 12% of the row pass is
  // built twice (the kh - 1 rows that start each band; 124-row bands before: 24%)
  problem p{};
  p.map.out_h = p.map.out_w = 4096, p.kh = p.kw = 31, p.planes = 1, p.options.threads = 16;
  const row_units u = ring_units(p, 31, 31, 4096, 8);
  CHECK(double(u.band + 30) / u.band < 1.25);
  CHECK(u.per_plane() >= 128);
}

// ---- The separable method's uint8 fixed point (conv/separable_vnni.hpp) ----

namespace {

std::int64_t low_half(std::int32_t v) { return std::int16_t(std::uint16_t(std::uint32_t(v) & 0xFFFFu)); }
std::int64_t high_half(std::int32_t v) { return std::int16_t(std::uint16_t(std::uint32_t(v) >> 16)); }
std::int64_t shift_half_up(std::int64_t v, int s) { return s > 0 ? (v + (std::int64_t(1) << (s - 1))) >> s : v; }
std::int64_t shift_half_even(std::int64_t v, int s) {
  if (s == 0) return v;
  std::int64_t q = v >> s;
  const std::int64_t r = v - q * (std::int64_t(1) << s), half = std::int64_t(1) << (s - 1);
  if (r > half || (r == half && (q & 1))) ++q;
  return q;
}

// The plan's uint8 output by the fixed point's integer arithmetic, term by term from the image
// extended by the boundary rule: each filtered row t = round_half_up(sum rq_i x_i / 2^row_shift),
// each output sat8(round_half_even(sum cq_a t_a / 2^out_shift)), taps in reading order.
std::vector<std::uint8_t> fixed_emulation(const std::vector<std::uint8_t>& img, long long h, long long w, int planes,
                                          const std::vector<fixed_rank1>& bank, int kh, int kw, const options& o) {
  const geometry g = make_geometry(h, w, kh, kw, o.mode);
  const std::int64_t outside = o.border == boundary::constant ? saturate_round<std::uint8_t>(o.constant_value) : 0;
  const int count = (int)bank.size();
  std::vector<std::uint8_t> out(std::size_t(planes * count * g.out_h * g.out_w));
  for (int k = 0; k < count; ++k) {
    const fixed_rank1& f = bank[std::size_t(k)];
    std::vector<std::int64_t> rq, cq;
    for (auto v : f.row_even) rq.insert(rq.end(), {low_half(v), high_half(v)});
    for (auto v : f.column) cq.insert(cq.end(), {low_half(v), high_half(v)});
    rq.resize(std::size_t(kw));
    cq.resize(std::size_t(kh));
    for (int pl = 0; pl < planes; ++pl) {
      // the filtered rows the outputs read: source rows oy - (kh - 1) .. out_h - 1 + oy
      const long long rows_n = g.out_h + kh - 1;
      std::vector<std::int64_t> t(std::size_t(rows_n * g.out_w));
      for (long long q = 0; q < rows_n; ++q) {
        const int r = border_index(q + g.oy - (kh - 1), (int)h, o.border);
        for (long long x = 0; x < g.out_w; ++x) {
          std::int64_t a = 0;
          for (int i = 0; i < kw; ++i) {
            const int c = border_index(x + g.ox - (kw - 1) + i, (int)w, o.border);
            a += rq[std::size_t(i)] * (r < 0 || c < 0 ? outside : std::int64_t(img[std::size_t((pl * h + r) * w + c)]));
          }
          t[std::size_t(q * g.out_w + x)] = shift_half_up(a, f.row_shift);
        }
      }
      for (long long y = 0; y < g.out_h; ++y)
        for (long long x = 0; x < g.out_w; ++x) {
          std::int64_t b = 0;
          for (int a = 0; a < kh; ++a) b += cq[std::size_t(a)] * t[std::size_t((y + a) * g.out_w + x)];
          out[std::size_t(((pl * count + k) * g.out_h + y) * g.out_w + x)] =
              std::uint8_t(std::clamp<std::int64_t>(shift_half_even(b, f.out_shift), 0, 255));
        }
    }
  }
  return out;
}

// 1D kernels a user would take: gaussians, boxes, smoothing and derivative taps, random positive
// taps summing to 1
std::vector<float> taps_1d(int n, int kind, std::uint64_t seed) {
  std::vector<float> v((std::size_t)n);
  double sum = 0;
  for (int i = 0; i < n; ++i) {
    const double c = i - (n - 1) / 2.0;
    switch (kind) {
      case 0: v[std::size_t(i)] = float(std::exp(-c * c / (2 * std::max(1.0, n / 6.0) * std::max(1.0, n / 6.0)))); break;
      case 1: v[std::size_t(i)] = 1.f; break;
      case 2: v[std::size_t(i)] = float(c); break;  // a derivative (odd, sums to 0)
      default: v[std::size_t(i)] = float(test::random_reals<float>(1, seed + i)[0] * 0.5 + 0.6); break;
    }
    sum += std::abs(v[std::size_t(i)]);
  }
  for (auto& x : v) x = float(x / sum);
  return v;
}

}  // namespace

TEST_CASE("CPU separable uint8 fixed point: the plan to the bit its integer arithmetic, within its bound of the reference",
          "[conv]") {
  if (!fft::host::selected_host_vnni()) SKIP("the host has no AVX-512 VNNI (or GPUCONV_CPU_ISA lowers the level): the float path runs");
  struct shape {
    int kh, kw, row_kind, column_kind;
    long long h, w;
  };
  // odd and even taps (the pairs' last tap alone), rows past a band's last tap, strips and the
  // 32-pixel blocks' tails (widths 1, 13, 150, 1100), 1-tap sides; kh + kw >= fixed_min_taps
  const shape shapes[] = {{1, 96, 0, 0, 9, 13},   {2, 94, 1, 0, 9, 130},   {3, 93, 2, 0, 20, 150}, {95, 1, 0, 1, 100, 40},
                          {48, 48, 0, 0, 20, 150}, {8, 88, 3, 3, 12, 1100}, {5, 96, 0, 2, 1, 1},   {63, 33, 3, 0, 70, 70}};
  for (const shape& sh : shapes) {
    test::for_each_semantics(sh.kh, sh.kw, sh.h, sh.w, [&](const options& o0) {
      options o = o0;
      o.constant_value = 76.4f;  // rounded to the type, as OpenCV does
      const int planes = 2, count = 2;
      const auto seed = test::fresh_seed();
      INFO("kernel " << sh.kh << "x" << sh.kw << " kinds " << sh.row_kind << "/" << sh.column_kind << ", image " << sh.h << "x"
                     << sh.w << ", mode " << int(o.mode) << ", op " << int(o.op) << ", border " << int(o.border) << ", seed "
                     << seed);
      std::vector<float> ks;
      for (int k = 0; k < count; ++k) {
        const auto c = taps_1d(sh.kh, k == 0 ? sh.column_kind : 0, seed + 3), r = taps_1d(sh.kw, sh.row_kind, seed + 7);
        for (int i = 0; i < sh.kh; ++i)
          for (int j = 0; j < sh.kw; ++j) ks.push_back(c[std::size_t(i)] * r[std::size_t(j)]);
      }
      const auto noise = test::random_reals<float>(std::size_t(planes * sh.h * sh.w), seed);
      std::vector<std::uint8_t> img(noise.size());
      std::vector<float> img_f(noise.size());
      for (std::size_t i = 0; i < img.size(); ++i) img_f[i] = img[i] = std::uint8_t(std::lround((noise[i] * 0.5 + 0.5) * 255));
      plan_options po;
      po.semantics = o;
      po.device = backend::cpu;
      po.cpu = cpu_method::separable;
      po.threads = 2;
      plan p(sh.h, sh.w, planes, ks.data(), count, sh.kh, sh.kw, po);
      const auto bank = test::fixed_bank_of(ks, count, sh.kh, sh.kw, o.op, p.output_height(), p.output_width());
      REQUIRE(bank.size() == std::size_t(count));  // these kernels take the fixed point
      std::vector<std::uint8_t> out(std::size_t(planes * count * p.output_height() * p.output_width()), 77);
      p.execute(img.data(), out.data());
      const auto want = fixed_emulation(img, sh.h, sh.w, planes, bank, sh.kh, sh.kw, o);
      REQUIRE(out.size() == want.size());
      std::size_t first_diff = out.size();
      for (std::size_t i = 0; i < out.size() && first_diff == out.size(); ++i)
        if (out[i] != want[i]) first_diff = i;
      INFO("first difference at " << first_diff << " of " << out.size());
      REQUIRE(first_diff == out.size());
      // the bound, against the double reference ('same' convolution, every border): exact rounding
      // but where the exact value lies within the bound of a half level
      if (o.mode != output_mode::same || o.op != operation::convolution) return;
      options ro = o;
      ro.constant_value = std::nearbyint(o.constant_value);
      const long long per = p.output_height() * p.output_width();
      std::vector<double> ref(std::size_t(per * planes));
      for (int k = 0; k < count; ++k) {
        direct_convolve(img_f.data(), sh.h, sh.w, planes, ks.data() + std::size_t(k) * sh.kh * sh.kw, sh.kh, sh.kw, ro,
                        ref.data());
        const double bound = bank[std::size_t(k)].error_bound;
        CHECK(bound <= fixed_max_error);
        for (int pl = 0; pl < planes; ++pl)
          for (long long i = 0; i < per; ++i) {
            const double r = ref[std::size_t(pl * per + i)], got = out[std::size_t((pl * count + k) * per + i)];
            const double expect = std::clamp(std::nearbyint(r), 0.0, 255.0);
            if (got != expect) {
              INFO("kernel " << k << " plane " << pl << " pixel " << i << ": got " << got << ", reference " << r);
              REQUIRE(std::abs(r - std::floor(r) - 0.5) <= bound + 1e-9);
              REQUIRE(std::abs(got - std::clamp(r, 0.0, 255.0)) <= 0.5 + bound + 1e-9);
            }
          }
      }
    });
  }
}

TEST_CASE("CPU separable uint8 fixed point: the scales, the bound and the kernels left to the float path", "[conv]") {
  auto factors = [](const std::vector<float>& c, const std::vector<float>& r) {
    return fixed_factors(c.data(), (int)c.size(), r.data(), (int)r.size());
  };
  // a 31-tap gaussian: rows scaled by 2^7 (255 * 128 fits int16), a bound of a tenth of a level
  const auto g31 = taps_1d(31, 0, 1);
  const auto f = factors(g31, g31);
  REQUIRE(f);
  CHECK(f->error_bound > 0);
  CHECK(f->error_bound < 0.15);
  CHECK(f->row_even.size() == 16);
  CHECK(f->row_odd.size() == 16);
  CHECK(f->column.size() == 16);
  CHECK(f->out_shift >= 16);
  // even kw: the odd outputs take one pair more (the tap before the row shifted in); the even
  // outputs' pairs are padded with a zero pair to as many
  const auto g8 = taps_1d(8, 0, 1);
  const auto f8 = factors(g8, g8);
  REQUIRE(f8);
  CHECK(f8->row_odd.size() == 5);
  CHECK(f8->row_even.size() == 5);
  CHECK(f8->row_even.back() == 0);
  CHECK(f8->row_odd.front() != 0);
  // short kernels keep the float path (fixed_min_taps)
  rank1_factors short_bank{g8, taps_1d(fixed_min_taps - 9, 0, 1)}, long_bank{g8, taps_1d(fixed_min_taps - 8, 0, 1)};
  CHECK(fixed_bank(short_bank, 1, 8, fixed_min_taps - 9).empty());
  CHECK(fixed_bank(long_bank, 1, 8, fixed_min_taps - 8).size() == 1);
  // integer taps (a Sobel pair) scale exactly: only t's rounding is left
  const auto sobel = factors({0.25f, 0.5f, 0.25f}, {-0.5f, 0.f, 0.5f});
  REQUIRE(sobel);
  CHECK(sobel->error_bound < 0.01);
  // left to the float path: a gain the int16 rows cannot hold, a NaN, a zero factor, and taps of
  // mixed signs and a large gain whose bound passes a quarter level
  CHECK_FALSE(factors({1.f}, std::vector<float>(200, 1.f)));
  CHECK_FALSE(factors({std::nanf("")}, {1.f}));
  CHECK_FALSE(factors({0.f, 0.f}, {1.f}));
  std::vector<float> wild(15);
  for (int i = 0; i < 15; ++i) wild[std::size_t(i)] = (i % 2 ? -1.f : 1.f) * (0.3f + 0.05f * float(i)) + 0.013f * float(i * i % 7);
  const auto w = fixed_factors(wild.data(), 15, wild.data(), 15, 1e9);
  REQUIRE(w);
  CHECK(w->error_bound > fixed_max_error);
  CHECK_FALSE(factors(wild, wild));
}
