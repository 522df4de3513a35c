// The direct and separable paths' block-level device code (conv/window_tile.cuh,
// conv/window_walks.cuh, conv/separable_tile.cuh) run on the CPU, so that its index maps, the boundary rule in the loader, every walk of the taps and
// the stores are checked against the double-precision reference on a machine without a GPU.
// The CUDA builtins are emulated: threadIdx, blockIdx and blockDim are globals set for each
// emulated thread, and a block runs each phase between barriers (window_load, then window_sum;
// tile_load, tile_rows, tile_columns; box_rows_load, box_rows_total, box_rows_scan x 8,
// box_rows_prefix, box_rows_store) for every
// thread before the next, which is what __syncthreads guarantees. Shared memory starts as NaN, so a walk that reads an element the loader did not
// write shows in the output. What this cannot see: races, cp.async (host code takes the plain
// load), the launcher's block shapes beyond window_shape_for, and register-level compilation.
#include <catch2/catch_test_macros.hpp>

#include <climits>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include <vector_functions.h>
#include <vector_types.h>

namespace {
struct emulated_dim {
  unsigned x = 0, y = 0, z = 0;
};
}  // namespace
emulated_dim threadIdx, blockIdx, blockDim;  // what the device code reads (one emulated thread at a time)
inline int __float2int_rn(float v) {         // round half to even; NaN gives INT_MIN (pixel.cuh saturates it)
  if (v != v) return INT_MIN;
  const float r = std::nearbyint(v);
  return r >= 2147483647.f ? INT_MAX : r <= -2147483648.f ? INT_MIN : int(r);
}
inline float __uint2float_rn(unsigned v) { return float(v); }  // (the host's conversion rounds to nearest)
using std::max;

#include "conv/reference.hpp"
#include "conv/separable.hpp"
#include "conv/separable_tile.cuh"
#include "conv/window_tile.cuh"
#include "conv/window_walks.cuh"
#include "method_check.hpp"

using namespace gpuconv;
using namespace gpuconv::conv;

namespace {

// One launch of direct_walks.cuh's window_kernel<W, K, R>, block after block, for the effective kernel k.
template <walk W, int K, int R, typename T>
void emulate_window(const T* in, T* out, const window_map& m, int kh, int kw, const float* k) {
  const window_shape s = window_shape_for(m.out_h, m.out_w, kh, kw, R);
  const std::vector<float> padded = padded_taps(k, 1, kh, kw);
  fixed_taps<K * K> taps{};
  if constexpr (W == walk::unrolled)
    for (int i = 0; i < K * K; ++i) taps.v[i] = k[i];
  const bool vector_store = m.out_w % 4 == 0;  // std::vector's data is 16-byte aligned here
  const window_args a{m, kh, kw, padded.data(), divider(s.tiles_x), divider(s.tiles_y * s.tiles_x), s.stride, s.taps_floats,
                      vector_store};
  std::vector<float4> shared(s.shared_bytes / sizeof(float4) + 1);
  float* sm = reinterpret_cast<float*>(shared.data());
  blockDim = {unsigned(s.tx), unsigned(s.ty), 1};
  for (long long b = 0; b < m.planes * s.tiles_y * s.tiles_x; ++b) {
    std::fill(sm, sm + shared.size() * 4, NAN);
    blockIdx = {unsigned(b), 0, 0};
    for (unsigned y = 0; y < blockDim.y; ++y)
      for (unsigned x = 0; x < blockDim.x; ++x) threadIdx = {x, y, 0}, window_load<W, R>(in, a, sm);
    for (unsigned y = 0; y < blockDim.y; ++y)
      for (unsigned x = 0; x < blockDim.x; ++x) threadIdx = {x, y, 0}, window_sum<W, K, R>(out, a, taps, sm);
  }
}

// Runs phase(tx, ty) for every thread of a blockDim.x x blockDim.y block.
template <typename F>
void for_threads(F&& phase) {
  for (unsigned y = 0; y < blockDim.y; ++y)
    for (unsigned x = 0; x < blockDim.x; ++x) threadIdx = {x, y, 0}, phase();
}

// The separable path for one rank-1 kernel (factors c, r) as separable.cu launches it: the
// shared tile up to tile_max_side a side (max_blocks: its short grids' rule, tile_shape_for), else
// for a box the running sums (the two window passes are the walks checked above).
template <typename T>
void emulate_separable(const T* in, T* out, const window_map& m, int kh, int kw, const rank1_factors& f,
                       long long max_blocks) {
  const std::vector<float> row_taps = padded_taps(f.row.data(), 1, 1, kw), column_taps = padded_taps(f.column.data(), 1, kh, 1);
  if (separable_tiles::uses_tile(kh, kw)) {
    const tile_shape t = tile_shape_for(m.out_h, m.out_w, kh, kw, m.planes, max_blocks);
    if (max_blocks > 0) {
      // the rule's shapes: rows of threads halved from the plain shape's, down to 4 at most, while
      // the grid stays within max_blocks
      const int plain = tile_shape_for(m.out_h, m.out_w, kh, kw).shape.ty;
      CHECK(t.shape.ty <= plain);
      CHECK((t.shape.ty == plain || t.shape.ty >= 4));
      CHECK((t.shape.ty == plain || m.planes * t.tiles_y * t.tiles_x <= max_blocks));
    }
    const tile_args a{m, kh, kw, row_taps.data(), column_taps.data(), divider(t.tiles_x), divider(t.tiles_y * t.tiles_x),
                      m.out_w % 4 == 0};
    std::vector<float> shared(t.layout.bytes / 4);
    blockDim = {unsigned(t.shape.tx), unsigned(t.shape.ty), 1};
    for (long long b = 0; b < m.planes * t.tiles_y * t.tiles_x; ++b) {
      std::fill(shared.begin(), shared.end(), NAN);
      blockIdx = {unsigned(b), 0, 0};
      for_threads([&] { tile_load(in, a, shared.data()); });
      for_threads([&] { tile_rows(a, shared.data()); });
      for_threads([&] { tile_columns(out, a, shared.data()); });
    }
    return;
  }
  REQUIRE(box_factors(f, 1, kh, kw));
  // the maps of separable_tiles::run: rows oy - (kh - 1) .. of the image into out_h + kh - 1
  // intermediate rows, then 'valid' along y over those
  const long long tmp_h = m.out_h + kh - 1;
  const window_map rows{m.height, m.width, tmp_h, m.out_w, m.oy - (kh - 1), m.ox, m.border, m.constant_value, m.planes, 1, 0};
  const window_map columns{tmp_h, m.out_w, m.out_h, m.out_w, kh - 1, 0, boundary::zero, 0.f, m.planes, 1, 0};
  std::vector<float> tmp(std::size_t(m.planes * tmp_h * m.out_w), NAN);
  const long long tiles_x = (m.out_w + box_policy::width - 1) / box_policy::width;
  const box_args a{rows, kw, f.row[0], divider(tiles_x), divider(tmp_h * tiles_x)};
  std::vector<double> shared_storage(box_shared_bytes(kw) / 8 + 1);  // 8-byte aligned, as the device's
  float* shared = reinterpret_cast<float*>(shared_storage.data());
  blockDim = {unsigned(box_policy::threads), 1, 1};
  for (long long b = 0; b < m.planes * tmp_h * tiles_x; ++b) {
    std::fill(shared, shared + box_shared_bytes(kw) / 4, NAN);
    blockIdx = {unsigned(b), 0, 0};
    for_threads([&] { box_rows_load(in, a, shared); });
    for_threads([&] { box_rows_total(a, shared); });
    for (int k = 0; k < box_policy::scan_steps; ++k) for_threads([&] { box_rows_scan(a, shared, k); });
    for_threads([&] { box_rows_prefix(a, shared); });
    for_threads([&] { box_rows_store(tmp.data(), a, shared); });
  }
  const long long runs = (m.out_h + box_policy::column_run - 1) / box_policy::column_run;
  const long long column_blocks = (m.out_w + box_policy::column_threads - 1) / box_policy::column_threads;
  blockDim = {unsigned(box_policy::column_threads), 1, 1};
  const divider per_plane(runs * column_blocks), columns_d(column_blocks);
  for (long long b = 0; b < m.planes * runs * column_blocks; ++b) {
    blockIdx = {unsigned(b), 0, 0};
    for_threads([&] { box_column(tmp.data(), out, columns, kh, f.column[0], per_plane, columns_d); });
  }
}

// A path over every mode x operation x boundary on an h x w x 2 image, float and uint8, against
// direct_convolve (the same allowance as the GPU tests: 1e-5 of the |k| * |x| scale).
// emulate(variant, in, out, map, effective kernel) runs one path; every variant in 0..variants-1 is
// checked against the same reference. `kernel` makes the kernel from a seed.
template <typename Emulate, typename Kernel>
void check_emulated(const char* what, int kh, int kw, long long h, long long w, int variants, Emulate&& emulate,
                    Kernel&& make_kernel) {
  test::for_each_semantics(kh, kw, h, w, [&](const options& o) {
    const auto seed = test::fresh_seed();
    INFO(what << ", kernel " << kh << "x" << kw << ", image " << h << "x" << w << ", mode " << int(o.mode)
              << ", op " << int(o.op) << ", border " << int(o.border) << ", seed " << seed);
    const int planes = 2;
    const auto x = test::random_reals<float>(std::size_t(h * w * planes), seed);
    const std::vector<float> kernel = make_kernel(seed + 1);
    const geometry g = make_geometry(h, w, kh, kw, o.mode);
    const auto eff = effective_kernel(kernel.data(), kh, kw, o.op);
    const window_map m{h, w, g.out_h, g.out_w, g.oy, g.ox, o.border, o.constant_value, planes, 1, 0};
    const std::size_t n = std::size_t(g.out_h * g.out_w * planes);
    std::vector<double> ref(n), scale(n);
    direct_convolve(x.data(), h, w, planes, kernel.data(), kh, kw, o, ref.data());
    std::vector<float> x_abs(x), k_abs(kernel);
    for (auto& v : x_abs) v = std::abs(v);
    for (auto& v : k_abs) v = std::abs(v);
    options o_abs = o;
    o_abs.constant_value = std::abs(o.constant_value);
    direct_convolve(x_abs.data(), h, w, planes, k_abs.data(), kh, kw, o_abs, scale.data());
    // uint8 in and out: the float result of the same pixels, rounded half to even and saturated
    std::vector<std::uint8_t> x8(x.size());
    std::vector<float> x8f(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) x8f[i] = x8[i] = std::uint8_t(std::lround((x[i] * 0.5 + 0.5) * 255));
    window_map m8 = m;
    m8.constant_value = std::nearbyint(std::min(255.f, std::max(0.f, o.constant_value * 255)));
    std::vector<float> k8(eff);
    for (auto& v : k8) v = std::abs(v) / float(kh * kw) * 1.5f;  // outputs past 255 on some pixels: saturation
    for (int variant = 0; variant < variants; ++variant) {
      INFO("variant " << variant);
      std::vector<float> out(n, -7.f);
      emulate(variant, x.data(), out.data(), m, eff);
      double num = 0, den = 0;
      std::size_t not_finite = 0;
      for (std::size_t i = 0; i < n; ++i) {
        if (!std::isfinite(out[i])) ++not_finite;
        num += (out[i] - ref[i]) * (out[i] - ref[i]);
        den += std::max(scale[i], 1e-3) * std::max(scale[i], 1e-3);
      }
      CHECK(not_finite == 0);  // (an element no loader wrote: shared memory starts as NaN)
      CHECK(std::sqrt(num / den) <= 1e-5);
      std::vector<std::uint8_t> out8(n, 77);
      std::vector<float> out8f(n);
      emulate(variant, x8.data(), out8.data(), m8, k8);
      emulate(variant, x8f.data(), out8f.data(), m8, k8);
      std::size_t first_wrong = n;
      for (std::size_t i = n; i-- > 0;)
        if (double(out8[i]) != std::min(255.0, std::max(0.0, double(std::nearbyint(out8f[i]))))) first_wrong = i;
      INFO("first uint8 output that differs from the rounded float one: " << first_wrong);
      CHECK(first_wrong == n);
    }
  });
}

// every rows-a-thread the launcher takes (window_rows_for: 8, 4, 2 as variants 0, 1, 2), against one
// reference
template <walk W, int K = 1>
void check_walk(int kh, int kw, long long h, long long w) {
  check_emulated(
      "direct walk", kh, kw, h, w, 3,
      [&](int variant, const auto* in, auto* out, const window_map& m, const std::vector<float>& k) {
        if (variant == 0) emulate_window<W, K, 8>(in, out, m, kh, kw, k.data());
        if (variant == 1) emulate_window<W, K, 4>(in, out, m, kh, kw, k.data());
        if (variant == 2) emulate_window<W, K, 2>(in, out, m, kh, kw, k.data());
      },
      [&](std::uint64_t seed) { return test::random_reals<float>(std::size_t(kh) * kw, seed); });
}

// box: every value of the kernel equal (the running sums past tile_max_side); max_blocks: the
// shared tile's short-grid rule (tile_shape_for)
void check_separable(int kh, int kw, long long h, long long w, bool box, long long max_blocks = 0) {
  check_emulated(
      box ? "separable box" : "separable", kh, kw, h, w, 1,
      [&](int, const auto* in, auto* out, const window_map& m, const std::vector<float>& k) {
        const rank1_factors f = factor_rank1(k.data(), kh, kw);
        REQUIRE(f.found());
        INFO("max_blocks " << max_blocks);
        emulate_separable(in, out, m, kh, kw, f, max_blocks);
      },
      [&](std::uint64_t seed) {
        return box ? std::vector<float>(std::size_t(kh) * kw, 1.f / float(kh * kw)) : test::make_kernels(1, kh, kw, true, seed);
      });
}

}  // namespace

TEST_CASE("direct path's device code, emulated on the CPU: unrolled walk", "[conv]") {
  check_walk<walk::unrolled, 3>(3, 3, 70, 150);   // several blocks across, partial last block
  check_walk<walk::unrolled, 5>(5, 5, 9, 13);     // 8-lane blocks, the image smaller than one
  check_walk<walk::unrolled, 11>(11, 11, 40, 44);
  check_walk<walk::unrolled, 4>(4, 4, 37, 90);    // even sides
  check_walk<walk::unrolled, 6>(6, 6, 70, 150);
  check_walk<walk::unrolled, 10>(10, 10, 40, 44);
  // tiles inside the image (the loader's fixed-offset copies): at 4 and 2 rows a thread the second
  // row of blocks, at 8 'valid' (80 output rows, one block of 80) and across the second block along x
  check_walk<walk::unrolled, 5>(5, 5, 84, 300);
}

TEST_CASE("direct path's device code, emulated on the CPU: column, row and generic walks", "[conv]") {
  check_walk<walk::column>(7, 1, 70, 37);   // no middle rows (kh < 8)
  check_walk<walk::column>(13, 1, 70, 37);  // the register-shifted middle
  check_walk<walk::column>(1, 1, 5, 6);
  check_walk<walk::row>(1, 9, 30, 150);
  check_walk<walk::row>(1, 2, 17, 5);
  check_walk<walk::generic>(4, 6, 70, 140);
  check_walk<walk::generic>(2, 2, 1, 1);
  check_walk<walk::generic>(9, 13, 20, 11);  // kernel wider than the image
  check_walk<walk::generic>(3, 6, 90, 300);  // a tile inside the image along x
  // rows of more than 4 chunks of 32 columns (window_tile.cuh load_tile's max_full), tiles inside
  // the image and on its edges: 5 chunks (kw = 33..64) with the pad columns in a chunk of their
  // own at kw = 61..64, 6 chunks (65..96), and past them the general loader. 16 rows: one block
  // of 16 / 8, 16 / 4 or 16 / 2 rows of threads holds the plane's height inside the image at
  // every rows-a-thread; 300-320 columns: the second block along x inside it in every mode
  // (the 128-column tile plus kw - 1), the first too in 'valid'.
  check_walk<walk::row>(1, 40, 16, 300);
  check_walk<walk::row>(1, 63, 16, 320);
  check_walk<walk::row>(1, 96, 16, 320);
  check_walk<walk::row>(1, 97, 16, 320);
  check_walk<walk::generic>(3, 40, 18, 300);  // 'valid': 16 output rows, the block's 18 input rows the plane's
}

TEST_CASE("separable path's device code, emulated on the CPU: shared tile and box running sums", "[conv]") {
  check_separable(3, 3, 70, 150, false);
  check_separable(9, 5, 33, 20, false);    // the column walk's middle, 8-lane blocks
  check_separable(32, 32, 80, 140, false);  // the tile's largest: two rounds of the row pass
  // tiles inside the image (32-row blocks on the short grid: the second row and column of blocks,
  // the first in 'valid'), the pad columns' own chunk (156 columns, stride 164)
  check_separable(29, 29, 80, 280, false, 1 << 20);
  check_separable(1, 1, 4, 4, false);
  // short grids (tile_shape_for's rule): 16 rows of threads a 128^2 plane down to 4 (tile_h 32
  // against a 31-row halo: the row pass in two rounds), 13 a 100-row plane down to 7 (two blocks
  // down, the last one short) and to 4, and a 64-wide plane's 16-lane blocks
  check_separable(31, 31, 128, 128, false, 1 << 20);
  check_separable(13, 13, 128, 128, false, 1 << 20);
  check_separable(5, 9, 100, 130, false, 2 * 2 * 2);  // 2 planes x 2 columns of blocks x 2 rows of them (same: ty 7)
  check_separable(32, 32, 100, 130, false, 1 << 20);
  check_separable(7, 3, 64, 64, false, 1 << 20);
  check_separable(33, 40, 50, 290, true);   // several row blocks and column blocks
  check_separable(41, 1, 300, 30, true);    // two runs down a column
  check_separable(1, 45, 9, 13, true);      // the kernel wider than the image
  check_separable(2, 45, 5, 2100, true);    // two row segments (box_policy::width), the last short
}
