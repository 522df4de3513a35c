// The per-thread arithmetic of plan3d's CUDA separable passes (conv/separable3d_walk.cuh: the
// column and slice passes' window_sums, the row pass's row_window_sums over its staged window)
// run on the CPU against a double reference, for every boundary, kernel sizes around the chunk
// size (1 .. 63), windows inside and across the array's ends, and short arrays. What the
// [gpu] tests see only on a GPU, checked here on every CI run: the index arithmetic of the
// register carry between chunks and of the values read as zero (a NaN anywhere outside a
// window must not reach a sum). Races and the compiled code are the [gpu] tests' (the kernels
// inline the same functions).
#include <catch2/catch_test_macros.hpp>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include <vector_functions.h>
#include <vector_types.h>

#include "conv/semantics.hpp"
#include "conv/separable3d_walk.cuh"

using namespace gpuconv;
using namespace gpuconv::conv;

namespace {

constexpr boundary all_boundaries[] = {boundary::zero,    boundary::constant,   boundary::replicate,
                                       boundary::reflect, boundary::reflect101, boundary::wrap};

// The taps as the kernels read them: 16-byte aligned, zero-padded to a multiple of 16.
struct taps_table {
  std::vector<float4> storage;
  explicit taps_table(const std::vector<float>& taps) : storage((taps.size() + 15) / 16 * 4 + 4, make_float4(0, 0, 0, 0)) {
    std::memcpy(storage.data(), taps.data(), taps.size() * sizeof(float));
  }
  const float* data() const { return reinterpret_cast<const float*>(storage.data()); }
};

std::vector<float> random_taps(int K, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> t(static_cast<std::size_t>(K));
  for (float& v : t) v = u(rng);
  return t;
}

// sum_l taps[l] ext(y + off - l), ext(r) = v(border_index(r)) or `outside`; and the sum of the
// terms' magnitudes (the float sum's error scale).
template <typename F>
void reference(const std::vector<float>& taps, long long y, int off, int n, boundary b, float outside, F value,
               double& sum, double& magnitude) {
  sum = magnitude = 0;
  for (std::size_t l = 0; l < taps.size(); ++l) {
    const int r = border_index(y + off - (long long)l, n, b);
    const double v = r < 0 ? outside : value(r);
    sum += double(taps[l]) * v;
    magnitude += std::fabs(double(taps[l]) * v);
  }
}

}  // namespace

TEST_CASE("3D separable column/slice pass arithmetic (window_sums), emulated on the CPU", "[conv][3d]") {
  constexpr int rows = 16;  // separable3d.cu: axis_rows_per_thread
  constexpr long long inner = 3, column = 1;  // a column of an interleaved array
  std::mt19937 rng(20261125);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  long long checked = 0;
  for (int K : {1, 2, 3, 4, 7, 8, 9, 15, 16, 17, 31, 32, 33, 47, 48, 63})
    for (int n_src : {1, 3, 20, 70})
      for (boundary b : all_boundaries) {
        const float outside = b == boundary::constant ? 2.5f : 0.f;
        const std::vector<float> taps = random_taps(K, rng);
        const taps_table table(taps);
        std::vector<float> data(std::size_t(n_src * inner));
        for (float& v : data) v = u(rng);
        auto value = [&](int r) { return double(data[std::size_t(r * inner + column)]); };
        for (int off : {0, (K - 1) / 2, K - 1})
          for (long long y0 = -rows; y0 < n_src + K; y0 += rows) {  // outputs y0 .. y0 + 15 read rows top + r - l
            const long long top = y0 + off;
            const bool edge = !(top - (K - 1) >= 0 && top + rows - 1 < n_src);
            float acc[rows] = {};
            window_sums<rows, int>(data.data() + column, int(inner), top, K, n_src, b, outside, edge, table.data(), acc);
            for (int r = 0; r < rows; ++r) {
              double sum, magnitude;
              reference(taps, y0 + r, off, n_src, b, outside, value, sum, magnitude);
              CAPTURE(K, n_src, int(b), off, y0, r, edge, acc[r], sum);
              REQUIRE(std::fabs(double(acc[r]) - sum) <= 1e-6 * magnitude + 1e-30);
              ++checked;
            }
            if (!edge) {
              // the boundary path takes the same sums in the same order: the same bits
              float via_edge[rows] = {};
              window_sums<rows, int>(data.data() + column, int(inner), top, K, n_src, b, outside, true, table.data(),
                                     via_edge);
              REQUIRE(std::memcmp(acc, via_edge, sizeof(acc)) == 0);
              // rows outside the window are not read: NaN everywhere else changes nothing
              std::vector<float> poisoned(data.size(), NAN);
              for (long long row = top - (K - 1); row <= top + rows - 1; ++row)
                poisoned[std::size_t(row * inner + column)] = data[std::size_t(row * inner + column)];
              float again[rows] = {};
              window_sums<rows, int>(poisoned.data() + column, int(inner), top, K, n_src, b, outside, false,
                                     table.data(), again);
              REQUIRE(std::memcmp(acc, again, sizeof(acc)) == 0);
            }
          }
      }
  CHECK(checked > 50000);
}

TEST_CASE("3D separable row pass arithmetic (row_window_sums over a staged window), emulated on the CPU",
          "[conv][3d]") {
  constexpr int rows = 8;  // separable3d.cu: taps_rows_per_thread
  std::mt19937 rng(20261126);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  long long checked = 0;
  for (int K : {1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 33, 63})
    for (int n_src : {5, 300, 600})
      for (boundary b : all_boundaries)
        for (int lanes : {32, 64}) {
          const float outside = b == boundary::reflect ? 0.f : 1.5f;  // (used by zero/constant only)
          const float o = b == boundary::zero ? 0.f : outside;
          const std::vector<float> taps = random_taps(K, rng);
          const taps_table table(taps);
          std::vector<float> src(static_cast<std::size_t>(n_src));
          for (float& v : src) v = u(rng);
          auto value = [&](int r) { return double(src[std::size_t(r)]); };
          const int off = (K - 1) / 2, n_dst = n_src, seg = lanes * rows;
          const int lead = 8 + ((4 - ((K - rows) & 3)) & 3);  // as row_taps_kernel
          for (int x0 = 0; x0 < n_dst; x0 += seg) {
            // the segment's window as the kernel stages it; every other slot NaN (stale)
            const int span = std::min(seg, n_dst - x0) + K - 1, from = x0 + off - (K - 1);
            std::vector<float4> storage(std::size_t(window_floats(seg, K)) / 4 + 1);
            float* w = reinterpret_cast<float*>(storage.data());
            std::fill(w, w + storage.size() * 4, NAN);
            for (int v = 0; v < span; ++v) {
              const int r = border_index(from + v, n_src, b);
              w[window_slot(v + lead)] = r < 0 ? o : src[std::size_t(r)];
            }
            for (int lane = 0; lane < lanes && x0 + lane * rows < n_dst; ++lane) {
              const int base = lane * rows;
              float acc[rows];
              row_window_sums<rows>(w, base, K, lead, table.data(), acc);
              for (int r = 0; r < rows && x0 + base + r < n_dst; ++r) {
                double sum, magnitude;
                reference(taps, x0 + base + r, off, n_src, b, o, value, sum, magnitude);
                CAPTURE(K, n_src, int(b), lanes, x0, base, r, acc[r], sum);
                REQUIRE(std::fabs(double(acc[r]) - sum) <= 1e-6 * magnitude + 1e-30);
                ++checked;
              }
            }
          }
        }
  CHECK(checked > 100000);
}
