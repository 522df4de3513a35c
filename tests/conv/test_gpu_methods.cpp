// The CUDA backend's direct and separable methods (conv/direct.hpp, conv/separable.hpp) forced
// one by one against the direct double-precision reference (method_check.hpp: modes x
// operations x boundaries x pixel types, banks, batches, odd sizes, images smaller than the
// kernel, 'valid' down to one output), and the CUDA method chooser (conv/method.hpp:
// choose_cuda_method) on the CPU: which method for which kernel and shape, forced methods
// that cannot run the kernel, the block shapes' geometry.
// Tolerances: those of the CPU's direct and separable methods (1e-5 of the |k| * |x| scale:
// sums of kh * kw or kh + kw float products).
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <algorithm>

#include <cmath>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "conv/direct.hpp"
#include "conv/divider.hpp"
#include "conv/direct_mma.cuh"
#include "conv/fused.hpp"
#include "conv/separable.hpp"
#include "fft/device/cuda_check.hpp"
#include "method_check.hpp"

using namespace gpuconv;
using namespace gpuconv::conv;
using test::check_method;
using test::cuda_forced;
using test::make_kernels;

namespace {

void sweep_cuda(cuda_path path) {
  // 3 x 3 and 11 x 11: the unrolled walk; 7 x 1: the column walk; 1 x 1, 2 x 3, 7 x 4, 15 x 15:
  // the generic walk (and the separable passes: row 1 x kw generic, column kh x 1)
  const auto k = GENERATE(std::array<int, 2>{1, 1}, std::array<int, 2>{2, 3}, std::array<int, 2>{3, 3},
                          std::array<int, 2>{7, 4}, std::array<int, 2>{7, 1}, std::array<int, 2>{11, 11},
                          std::array<int, 2>{15, 15});
  // 1 x 1, smaller than the kernels, narrower than one block (8 lanes), several blocks each way
  const auto img = GENERATE(std::array<int, 2>{1, 1}, std::array<int, 2>{9, 13}, std::array<int, 2>{70, 150},
                            std::array<int, 2>{131, 301});
  test::sweep_method(cuda_forced(path), k, img);
}

// The direct method's sweep at each rows-a-thread of the launches (window_rows_for picks 2 for
// most of these small images), one test case each: under compute-sanitizer's racecheck the
// three together ran past a device call's 600 s, one process per case runs them side by side.
void sweep_direct(int rows) {
  if (!cuda_device_available()) SKIP("no CUDA device present");
  INFO(rows << " rows a thread");
  struct restore {
    ~restore() { force_window_rows(0); }
  } guard;
  force_window_rows(rows);
  sweep_cuda(cuda_path::direct);
}

// The fused path on 128-tiles: every mode x operation x boundary x pixel type on kernels from
// 1 x 1 to 31 x 31 and images from 1 x 1 to several tiles a side, then banks and batches (tiles of
// several kernels and planes in one launch). FFT tolerance: 2e-5 of the scale (4 x the bound of a
// 128^2 tile's transforms is 1.6e-5). In two parts a kernel (part 0: kernels of 1 x 1 and 3 x 3;
// part 1: 4 x 7 and 31 x 31, the banks and batches), one test case each: under compute-sanitizer's
// racecheck the whole sweep ran past 530 s (H200).
void fused_128(int part) {
  if (!cuda_device_available()) SKIP("no CUDA device present");
  test::forced_method m = cuda_forced(cuda_path::fused);
  m.tile = 128;
  m.tolerance = 2e-5;
  constexpr std::array<int, 2> kernels[2][2] = {{{1, 1}, {3, 3}}, {{4, 7}, {31, 31}}};
  const auto k = kernels[part][GENERATE(0, 1)];
  const auto img = GENERATE(std::array<int, 2>{1, 1}, std::array<int, 2>{9, 13}, std::array<int, 2>{130, 301});
  test::sweep_method(m, k, img);
  if (part == 0) return;
  options o;
  check_method<float>(m, 200, 150, 3, 2, 17, 30, o);       // a bank of 2 on 3 planes: 2 x 3 x 4 tiles
  check_method<std::uint8_t>(m, 64, 64, 5, 3, 63, 63, o);  // one 128-tile an image, a bank of 3
  o.border = boundary::wrap;
  o.mode = output_mode::full;
  check_method<std::uint16_t>(m, 100, 97, 2, 1, 128, 5, o);  // a kernel as tall as the tile
}

// The fused path on 80-tiles (conv/fused_mixed.cuh, mixed radix 5 x 16), as fused_128 above: every
// mode x operation x boundary x pixel type on kernels from 1 x 1 to 31 x 31 and 80 x 3 (as tall as
// the tile) and images from 1 x 1 to several tiles a side, then banks and batches. In two parts
// (part 0: 1 x 1, 3 x 3 and 15 x 15; part 1: 4 x 7, 31 x 31 and 80 x 3, the banks and batches).
void fused_80(int part) {
  if (!cuda_device_available()) SKIP("no CUDA device present");
  struct restore {
    bool was = mixed_fused_tiles_allowed();
    ~restore() { allow_mixed_fused_tiles(was); }
  } guard;
  allow_mixed_fused_tiles(true);
  test::forced_method m = cuda_forced(cuda_path::fused);
  m.tile = 80;
  m.tolerance = 2e-5;
  constexpr std::array<int, 2> kernels[2][3] = {{{1, 1}, {3, 3}, {15, 15}}, {{4, 7}, {31, 31}, {80, 3}}};
  const auto k = kernels[part][GENERATE(0, 1, 2)];
  const auto img = GENERATE(std::array<int, 2>{1, 1}, std::array<int, 2>{9, 13}, std::array<int, 2>{64, 64},
                            std::array<int, 2>{130, 301});
  test::sweep_method(m, k, img);
  if (part == 0) return;
  options o;
  check_method<float>(m, 200, 150, 3, 2, 17, 30, o);       // a bank of 2 on 3 planes: 3 x 3 tiles
  check_method<std::uint8_t>(m, 64, 64, 5, 3, 15, 15, o);  // one 80-tile an image, a bank of 3
  check_method<float>(m, 64, 64, 33, 1, 17, 17, o);        // a batch of small images, an odd tile count
  o.border = boundary::wrap;
  o.mode = output_mode::full;
  check_method<std::uint16_t>(m, 100, 97, 2, 1, 5, 80, o);  // a kernel as wide as the tile
}

}  // namespace

TEST_CASE("GPU fused 80-tiles (mixed radix): modes x operations x boundaries x types, 1 x 1, 3 x 3 and 15 x 15",
          "[conv][gpu]") {
  fused_80(0);
}

TEST_CASE("GPU fused 80-tiles (mixed radix): modes x operations x boundaries x types, 4 x 7, 31 x 31 and 80 x 3, "
          "banks and batches",
          "[conv][gpu]") {
  fused_80(1);
}

TEST_CASE("CUDA fused 80-tiles: offered unless switched off, forced by plan_options::tile", "[conv]") {
  struct restore {
    bool was = mixed_fused_tiles_allowed();
    ~restore() { allow_mixed_fused_tiles(was); }
  } guard;
  const auto dense15 = make_kernels(1, 15, 15, false, 31);
  allow_mixed_fused_tiles(false);
  // off: a forced 80 rounds up to 128, and the chooser keeps to the powers of two
  CHECK(choose_cuda_tiling(64, 64, 1024, 15, 15, cuda_path::fused, 80).tiles.tile_h == 128);
  CHECK(choose_cuda_tiling(64, 64, 1024, 15, 15, cuda_path::automatic, 0, 132, false).tiles.tile_h != 80);
  allow_mixed_fused_tiles(true);
  const cuda_tiling forced = choose_cuda_tiling(64, 64, 1024, 15, 15, cuda_path::fused, 80);
  CHECK(forced.tiles.tile_h == 80);
  CHECK(forced.tiles.valid_h == 66);
  CHECK(forced.tiles.tiles_per_plane() == 1);
  CHECK(choose_cuda_tiling(64, 64, 1024, 15, 15, cuda_path::fused, 70).tiles.tile_h == 80);  // the next side up
  CHECK(choose_cuda_tiling(64, 64, 1024, 81, 3, cuda_path::fused, 80).tiles.tile_h == 128);  // 81 rows need 128
  CHECK_THROWS_AS(square_tiling(64, 64, 81, 3, 80), std::invalid_argument);
  // by the model's price (7.0 ps a padded pixel, 3.9 on 32-tiles): one 80-tile an image (6,400
  // pixels) against 16 32-tiles (16,384); measured on the H100 (session 69, zero boundary) 0.045
  // ms against 0.064
  CHECK(choose_cuda_tiling(64, 64, 1024, 15, 15, cuda_path::automatic, 0, 132, false).tiles.tile_h == 80);
  CHECK(choose_cuda_method(dense15, 1, 15, 15, 64, 64, 1024, cuda_path::automatic, 0, 132, false).tiles.tile_h == 80);
  // 64 x 256^2 K = 15: 6 x 6 64-tiles an image (9.4 M pixels) against 4 x 4 80-tiles (6.6 M):
  // 42 us against 46 by the model, 0.046 ms against 0.049 measured
  CHECK(choose_cuda_tiling(256, 256, 64, 15, 15, cuda_path::automatic, 0, 132, false).tiles.tile_h == 64);
}

TEST_CASE("CUDA fused 128-tiles: the input past a small image priced at most 0.25 more", "[conv]") {
  // tiling.hpp (session 83): the 128-tiles' outside term, 1.5 x the share of their input past the
  // image, capped at 0.25; the other sides uncapped
  const fused_price p128 = fused_tile_price(128), p64 = fused_tile_price(64);
  CHECK(std::abs(p128.outside_term(true, 0.1) - 0.15) < 1e-12);  // a large image's thin edge: as before
  CHECK(p128.outside_term(true, 0.75) == 0.25);                   // 64^2 images: capped
  CHECK(p128.outside_term(false, 0.95) == 0.25);
  CHECK(p64.outside_term(true, 0.75) == 0.375);
  // session 81's default sweep (H100, reflect101): 1024 x 64^2 rank-1 K = 63 took the separable
  // passes at 1.24x the fused 128-tiles' time (one tile an image, 3/4 of its input past the image)
  const auto sep63 = make_kernels(1, 63, 63, true, 163);
  const cuda_choice c63 = choose_cuda_method(sep63, 1, 63, 63, 64, 64, 1024);
  CHECK(c63.path == cuda_path::fused);
  CHECK(c63.tiles.tile_h == 128);
  // 1080 x 1920 K = 63 (share 0.14, priced as before): three-pass (session 76's sweep, H100: fused
  // 1.15x its time; a cap of 0.19 or less took fused there)
  const auto dense63 = make_kernels(1, 63, 63, false, 263);
  CHECK(choose_cuda_method(dense63, 1, 63, 63, 1080, 1920, 1).path == cuda_path::three_pass);
}

TEST_CASE("CUDA fused 80-tiles: the kernel's spectrum against a direct DFT in double", "[conv]") {
  constexpr int T = fused_tiles::mixed_tile;
  for (const auto& shape : {std::array<int, 2>{7, 5}, std::array<int, 2>{1, 80}, std::array<int, 2>{31, 31}}) {
    const int kh = shape[0], kw = shape[1];
    const auto k = test::random_reals<float>(std::size_t(kh) * kw, test::fresh_seed());
    const auto got = fused_tiles::spectrum(T, k.data(), kh, kw);  // [kx][ky], scaled by 1 / T^2
    REQUIRE(got.size() == std::size_t(T) * T);
    double sum = 0, worst = 0;
    for (float v : k) sum += std::abs(double(v));
    const double pi = std::acos(-1.0);
    for (int kx = 0; kx < T; ++kx)
      for (int ky = 0; ky < T; ++ky) {
        double re = 0, im = 0;
        for (int i = 0; i < kh; ++i)
          for (int j = 0; j < kw; ++j) {
            const double a = -2 * pi * double((ky * i + kx * j) % T) / T, v = k[std::size_t(i) * kw + j];
            re += v * std::cos(a);
            im += v * std::sin(a);
          }
        const auto g = got[std::size_t(kx) * T + ky];
        worst = std::max(worst, std::hypot(g.re * double(T) * T - re, g.im * double(T) * T - im));
      }
    INFO(kh << " x " << kw << ": largest difference " << worst << " of a kernel whose |k| sums to " << sum);
    CHECK(worst <= 1e-6 * sum);
  }
}

TEST_CASE("GPU fused 128-tiles: modes x operations x boundaries x types, 1 x 1 and 3 x 3", "[conv][gpu]") {
  fused_128(0);
}

TEST_CASE("GPU fused 128-tiles: modes x operations x boundaries x types, 4 x 7 and 31 x 31, banks", "[conv][gpu]") {
  fused_128(1);
}

TEST_CASE("GPU direct method matches the reference: modes x operations x boundaries x types, 8 rows a thread",
          "[conv][gpu]") {
  sweep_direct(8);
}

TEST_CASE("GPU direct method matches the reference: modes x operations x boundaries x types, 4 rows a thread",
          "[conv][gpu]") {
  sweep_direct(4);
}

TEST_CASE("GPU direct method matches the reference: modes x operations x boundaries x types, 2 rows a thread",
          "[conv][gpu]") {
  sweep_direct(2);
}

TEST_CASE("GPU separable method matches the reference: modes x operations x boundaries x types", "[conv][gpu]") {
  if (!cuda_device_available()) SKIP("no CUDA device present");
  sweep_cuda(cuda_path::separable);
}

// The separable method's passes by FFT (separable_fft.hpp), forced for every kernel: the sweep's
// kernels and images (a segment a line, images smaller than the kernel and than a line).
TEST_CASE("GPU separable method by FFT passes matches the reference: modes x operations x boundaries x types",
          "[conv][gpu]") {
  if (!cuda_device_available()) SKIP("no CUDA device present");
  struct restore {
    ~restore() { force_line_fft(0); }
  } guard;
  force_line_fft(1);
  sweep_cuda(cuda_path::separable);
}

TEST_CASE("GPU separable FFT passes: each line length, segments, banks, batches, narrow pixels", "[conv][gpu]") {
  if (!cuda_device_available()) SKIP("no CUDA device present");
  struct restore {
    ~restore() { force_line_fft(0); }
  } guard;
  force_line_fft(1);
  const auto separable = cuda_forced(cuda_path::separable);
  options o;
  o.border = boundary::reflect101;
  // (line_fft_passes::line_for: 65 and 97 taps on these extents take 256-point lines, 161 and
  // 255 taps 512, 300 and 700 taps 1024; the reference is O(H W kh kw))
  check_method<float>(separable, 230, 610, 2, 1, 65, 97, o);         // 4 segments a row, 2 a column
  check_method<std::uint8_t>(separable, 231, 609, 1, 2, 97, 65, o);  // odd rows: a line without a pair
  check_method<float>(separable, 300, 410, 1, 1, 161, 161, o);       // gaussian:20's size
  check_method<std::uint16_t>(separable, 140, 300, 1, 1, 31, 255, o);
  check_method<float>(separable, 300, 140, 1, 1, 255, 31, o);
  check_method<float>(separable, 37, 1500, 1, 1, 3, 700, o);         // 1024-point rows, 2 segments
  check_method<std::uint8_t>(separable, 1500, 29, 1, 1, 300, 5, o);  // 1024-point columns, 3 segments
  check_method<float>(separable, 64, 64, 40, 3, 65, 65, o);          // a batch of small images, a bank
  // widths of 4 pixels: the column pass's loads and narrow stores 4 pixels at a time
  check_method<std::uint8_t>(separable, 200, 260, 2, 1, 161, 31, o);  // 512-point columns (8-column strips)
  check_method<std::uint16_t>(separable, 64, 64, 20, 3, 65, 65, o);   // 256-point, a bank: out_step / out_offset
  o.mode = output_mode::full;
  o.border = boundary::constant;
  o.constant_value = 0.25f;
  check_method<float>(separable, 100, 120, 2, 1, 129, 101, o);
  o.mode = output_mode::valid;
  o.border = boundary::wrap;
  check_method<float>(separable, 300, 280, 1, 1, 255, 255, o);
  o.mode = output_mode::same;
  o.op = operation::correlation;
  check_method<std::uint16_t>(separable, 200, 150, 2, 1, 80, 66, o);  // even sizes
}

TEST_CASE("GPU separable method on box kernels (running sums) matches the reference", "[conv][gpu]") {
  if (!cuda_device_available()) SKIP("no CUDA device present");
  test::forced_method box = cuda_forced(cuda_path::separable);
  box.box = true;
  // (up to 32 a side the passes share a tile: the running sums take larger boxes)
  const auto k = GENERATE(std::array<int, 2>{33, 40}, std::array<int, 2>{1, 41}, std::array<int, 2>{45, 1},
                          std::array<int, 2>{63, 63});
  const auto img = GENERATE(std::array<int, 2>{1, 1}, std::array<int, 2>{9, 13}, std::array<int, 2>{70, 150},
                            std::array<int, 2>{40, 290});  // several blocks of rows and of columns
  test::sweep_method(box, k, img);
}

TEST_CASE("GPU separable box kernels: box:255, banks, batches, narrow pixels", "[conv][gpu]") {
  if (!cuda_device_available()) SKIP("no CUDA device present");
  test::forced_method box = cuda_forced(cuda_path::separable);
  box.box = true;
  options o;
  o.border = boundary::wrap;
  // (the reference is O(H W K^2): box:255 on small images only)
  check_method<float>(box, 270, 260, 1, 1, 255, 255, o);          // box:255 on an image about its size
  check_method<std::uint8_t>(box, 256, 100, 1, 1, 255, 255, o);
  check_method<std::uint8_t>(box, 600, 200, 2, 1, 33, 33, o);       // three runs down each column
  o.border = boundary::reflect101;
  check_method<float>(box, 64, 64, 30, 3, 41, 41, o);              // a batch, a bank of three boxes
  check_method<std::uint16_t>(box, 100, 130, 2, 2, 41, 1, o);      // a column of taps, a row of taps
  check_method<std::uint16_t>(box, 100, 130, 2, 2, 1, 41, o);
  check_method<float>(box, 100, 130, 2, 2, 9, 9, o);                // a small box: the shared tile
  o.mode = output_mode::valid;
  check_method<float>(box, 300, 300, 1, 1, 255, 255, o);
  // a bank of a box and a kernel that is not one: each kernel takes its own passes
  constexpr int K = 37, taps = K * K;
  const std::vector<float> bank = [] {
    std::vector<float> b(2 * taps, 1.f / taps);
    for (int i = 0; i < K; ++i)
      for (int j = 0; j < K; ++j) b[taps + i * K + j] = float((i + 1) * (K - j)) / float(taps * K);
    return b;
  }();
  const auto img = test::random_reals<float>(2 * 90 * 110, test::fresh_seed());
  plan_options po;
  po.device = backend::cuda;
  po.path = cuda_path::separable;
  plan p(90, 110, 2, bank.data(), 2, K, K, po);
  std::vector<float> out(std::size_t(4) * 90 * 110);
  p.execute(img.data(), out.data());
  for (int k = 0; k < 2; ++k) {
    std::vector<double> ref(std::size_t(2) * 90 * 110);
    direct_convolve(img.data(), 90, 110, 2, bank.data() + taps * k, K, K, po.semantics, ref.data());
    for (int q = 0; q < 2; ++q) {
      std::vector<float> got(out.begin() + (q * 2 + k) * 9900, out.begin() + (q * 2 + k + 1) * 9900);
      std::vector<double> want(ref.begin() + q * 9900, ref.begin() + (q + 1) * 9900);
      INFO("kernel " << k << ", plane " << q);
      CHECK(test::relative_l2(got, want) <= 1e-5);
    }
  }
}

// The tensor-core walk for uint8 (conv/direct_mma.cuh) wherever it fits (force_mma_walk(2): images
// narrower than its rule's 128 columns, and 3 x 3): kernels up to 9 x 9 of both parities and shapes,
// images from 1 x 1 to several 64 x 128 tiles a side, widths that take the 4-byte word loads and
// the 16-byte stores (1024) and widths that do not, banks and batches. Where a kernel does not fit
// (kw + the window's shift > 9: some 'valid' and 'full' cases) the SIMT walks run instead.
TEST_CASE("GPU direct method's tensor-core walk (uint8): modes x operations x boundaries, banks, batches",
          "[conv][gpu]") {
  if (!cuda_device_available()) SKIP("no CUDA device present");
  struct restore {
    ~restore() { force_mma_walk(1); }
  } guard;
  force_mma_walk(2);
  {  // the walk runs wherever the GPU has the instructions (a wrong guard would test the SIMT walks)
    int device = 0, major = 0;
    GPUCONV_CUDA(cudaGetDevice(&device));
    GPUCONV_CUDA(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
    CHECK(direct_tiles(std::vector<float>(25, 0.04f), 1, 5, 5).tensor_cores() == (major >= 8));
  }
  const auto direct = cuda_forced(cuda_path::direct);
  const auto k = GENERATE(std::array<int, 2>{1, 1}, std::array<int, 2>{2, 3}, std::array<int, 2>{3, 3},
                          std::array<int, 2>{5, 5}, std::array<int, 2>{7, 7}, std::array<int, 2>{9, 9},
                          std::array<int, 2>{9, 1}, std::array<int, 2>{1, 9}, std::array<int, 2>{4, 7},
                          std::array<int, 2>{6, 2});
  const auto img = GENERATE(std::array<int, 2>{1, 1}, std::array<int, 2>{9, 13}, std::array<int, 2>{70, 150},
                            std::array<int, 2>{131, 301}, std::array<int, 2>{130, 1024});
  test::for_each_semantics(k[0], k[1], img[0], img[1], [&](const options& o) {
    check_method<std::uint8_t>(direct, img[0], img[1], 1, 1, k[0], k[1], o);
  });
  if (k[0] != 5) return;
  options o;
  o.border = boundary::reflect101;
  check_method<std::uint8_t>(direct, 200, 300, 3, 2, 5, 5, o);   // a batch and a bank of two
  check_method<std::uint8_t>(direct, 129, 1030, 2, 1, 5, 3, o);  // rows not on 4-byte words
  // more 64 x 128 tiles (19 x 11 a plane, 1254 in all) than blocks resident at once on an H100 or
  // an H200 (4 an SM): a grid that takes several tiles a block takes them here (once)
  if (img[0] != 1) return;
  check_method<std::uint8_t>(direct, 1200, 1300, 6, 1, 5, 5, o);
  // taps of every size (mma_walk_scale): boxes of 1 / 25 and 1 / 81 and taps up to 1e-2 and 1e-4
  // (the scale clamped at 2^14, the window's pixels times 2^-14), 5e5 (clamped at 2^-5, pixels
  // times 32), 1e7 (past 2^20: the SIMT walk); the outputs of the last two saturate beyond any
  // rounding (checked exactly), so a scaled tap past the largest half (an infinite product, NaN
  // at a pixel of 0) would show
  auto box = direct;
  box.box = true;
  check_method<std::uint8_t>(box, 130, 1024, 1, 2, 5, 5, o);
  check_method<std::uint8_t>(box, 131, 301, 2, 1, 9, 9, o);
  for (const float magnitude : {1e-2f, 1e-4f, 5e5f, 1e7f}) {
    auto scaled = direct;
    scaled.magnitude = magnitude;
    check_method<std::uint8_t>(scaled, 130, 1024, 1, 2, 9, 9, o);
    check_method<std::uint8_t>(scaled, 70, 150, 2, 1, 5, 5, o);
  }
}

// A plan's first launch reads what its constructor uploaded (fft/device/buffer.hpp, upload): the
// tensor-core walk's tap table is 18 KB a 9 x 9 kernel, and a plan of a large bank launches right
// after its upload. Session 63 saw the walk read a 36 KB table as zeros once in four runs of the
// case below (a bank of two 9 x 3 kernels) while `cudaMemcpy` alone did the upload; this repeats
// plan after plan with banks of 2 to 8 (36 to 147 KB of tables).
TEST_CASE("GPU plans' first launch reads their uploads: uint8 banks on the tensor-core walk, plan after plan",
          "[conv][gpu]") {
  if (!cuda_device_available()) SKIP("no CUDA device present");
  const auto direct = cuda_forced(cuda_path::direct);
  options o;
  o.border = boundary::reflect;
  for (int round = 0; round < 8; ++round) {
    INFO("round " << round);
    check_method<std::uint8_t>(direct, 90, 700, 1, 2, 9, 3, o);
    check_method<std::uint8_t>(direct, 130, 512, 1, 8, 9, 9, o);
  }
}

TEST_CASE("GPU direct and separable: every unrolled size, banks, batches, odd sizes, long kernels", "[conv][gpu]") {
  if (!cuda_device_available()) SKIP("no CUDA device present");
  options o;
  o.border = boundary::reflect;
  const auto direct = cuda_forced(cuda_path::direct), separable = cuda_forced(cuda_path::separable);
  for (int k = 3; k <= 12; ++k) {  // the unrolled walk, every size (odd and even), then 12 (generic)
    check_method<float>(direct, 77, 203, 2, 1, k, k, o);
    check_method<std::uint8_t>(direct, 77, 203, 1, 1, k, k, o);
    check_method<std::uint16_t>(direct, 77, 203, 1, 1, k, k, o);
  }
  for (const auto& m : {direct, separable}) {
    check_method<float>(m, 300, 1100, 2, 3, 5, 7, o);       // several blocks each way, a bank
    check_method<std::uint8_t>(m, 90, 700, 1, 2, 9, 3, o);
    check_method<float>(m, 28, 28, 40, 1, 5, 5, o);          // a batch of small images: 8-lane blocks
    check_method<float>(m, 64, 64, 9, 1, 7, 7, o);           // 16-lane blocks, one block a plane
    check_method<std::uint16_t>(m, 100, 100, 5, 1, 11, 11, o);  // 512-thread blocks
    check_method<float>(m, 4, 5, 3, 1, 13, 9, o);            // images smaller than the kernel
    o.mode = output_mode::full;
    check_method<float>(m, 80, 75, 1, 1, 41, 33, o);          // kernel wider than a block's rows
    o.mode = output_mode::valid;
    check_method<float>(m, 41, 33, 2, 1, 41, 33, o);          // 'valid' to one output
    check_method<std::uint8_t>(m, 50, 37, 1, 1, 49, 3, o);
    o.mode = output_mode::same;
  }
  o.border = boundary::wrap;
  check_method<float>(separable, 200, 260, 1, 1, 161, 161, o);  // gaussian:20's size: the two passes
  check_method<float>(separable, 200, 260, 2, 1, 32, 32, o);    // the shared tile's largest
  check_method<std::uint8_t>(separable, 200, 260, 1, 1, 33, 32, o);  // past it: the two passes
  check_method<float>(separable, 270, 260, 1, 1, 255, 255, o);  // box:255's size
  check_method<float>(direct, 130, 150, 1, 1, 1, 255, o);        // one row, the generic walk's widest
  check_method<float>(direct, 300, 150, 1, 1, 255, 1, o);        // one column, the column walk's tallest
}

// The separable method's two passes through global memory (a side past the shared tile's 32) on
// narrow pixels: uint8 / uint16 rows into the float intermediate and its columns back out, whose
// walks come at 4 rows a thread (the default) and 8 (forced; a forced 2 runs at 8 between types),
// each against the reference: images of one block and of several each way, widths off the 4-pixel
// stores, planes, a bank, every output mode (the passes forced to FMA walks, not FFT lines).
TEST_CASE("GPU separable passes between pixel types: 4 and 8 rows a thread", "[conv][gpu]") {
  if (!cuda_device_available()) SKIP("no CUDA device present");
  struct restore {
    ~restore() { force_window_rows(0), force_line_fft(0); }
  } guard;
  force_line_fft(-1);
  const auto separable = cuda_forced(cuda_path::separable);
  for (const int rows : {0, 8, 2}) {
    INFO("force_window_rows " << rows);
    force_window_rows(rows);
    options o;
    o.border = boundary::reflect101;
    check_method<std::uint8_t>(separable, 200, 260, 1, 1, 33, 33, o);
    check_method<std::uint16_t>(separable, 131, 301, 2, 1, 7, 45, o);   // planes; width off the 4-pixel stores
    check_method<std::uint8_t>(separable, 97, 70, 3, 2, 41, 5, o);      // a bank on 3 planes
    check_method<std::uint16_t>(separable, 1, 1, 1, 1, 35, 35, o);      // one pixel
    o.border = boundary::wrap;
    o.mode = output_mode::full;
    check_method<std::uint8_t>(separable, 50, 37, 1, 1, 64, 3, o);
    o.mode = output_mode::valid;
    check_method<std::uint16_t>(separable, 90, 700, 1, 1, 33, 9, o);
  }
}

// The window loaders' chunks (window_tile.cuh load_tile): tiles of 128 output columns whose
// extended rows span 4 to 7 chunks of 32 columns, with the pad columns reaching into the chunk
// past the last (the separable tile at kw = 29..32: 156..159 columns, stride 164; the row pass at
// kw = 61..64 and 93..96), on images wide and tall enough for interior tiles (every column and row
// inside the image: load_interior), edge tiles (load_edge for narrow pixels, the float loader's
// resolved columns) and, past 6 chunks or for a constant other than 0, the general loader; every
// pixel type, against the reference (the passes as FMA walks, not FFT lines).
TEST_CASE("GPU window loaders: tiles of 4 to 7 chunks and a pad chunk, interior and edge, every pixel type",
          "[conv][gpu]") {
  if (!cuda_device_available()) SKIP("no CUDA device present");
  struct restore {
    ~restore() { force_line_fft(0); }
  } guard;
  force_line_fft(-1);
  const auto separable = cuda_forced(cuda_path::separable), direct = cuda_forced(cuda_path::direct);
  const std::array<std::array<int, 2>, 9> kernels{{{29, 29},    // the shared tile: 4 chunks and a pad chunk
                                                   {31, 32},
                                                   {33, 33},    // the passes: rows of 5 chunks
                                                   {45, 63},    // 5 chunks and a pad chunk
                                                   {3, 64},
                                                   {7, 65},     // 6 chunks
                                                   {5, 96},     // 6 chunks and a pad chunk
                                                   {5, 97},     // 7 chunks: the general loader
                                                   {64, 5}}};   // the column pass at 64 taps
  for (const boundary b : {boundary::reflect101, boundary::zero, boundary::constant}) {
    options o;
    o.border = b;
    o.constant_value = 0.25f;
    for (const auto& k : kernels) {
      check_method<float>(separable, 150, 700, 1, 1, k[0], k[1], o);
      check_method<std::uint8_t>(separable, 150, 700, 1, 1, k[0], k[1], o);
      check_method<std::uint16_t>(separable, 149, 701, 1, 1, k[0], k[1], o);  // rows off the 4-pixel stores
    }
    // the direct method's row and generic walks past 4 chunks
    check_method<float>(direct, 150, 700, 1, 1, 1, 70, o);
    check_method<std::uint8_t>(direct, 150, 700, 1, 1, 3, 45, o);
    check_method<std::uint16_t>(direct, 150, 700, 1, 1, 2, 90, o);
  }
}

// The shared tile's short grids (tile_shape_for, separable_tile_fill): the rule off (0: the plain
// blocks of up to 16 rows of threads), grids of at most 1 (the default) and 4 blocks a
// multiprocessor, and 64 (these images' blocks all down to 4 rows of threads), each against the
// reference; plans take the value when made.
TEST_CASE("GPU separable shared tile: short grids' shorter blocks, every fill", "[conv][gpu]") {
  if (!cuda_device_available()) SKIP("no CUDA device present");
  struct restore {
    ~restore() { force_separable_tile_fill(-1); }
  } restore_fill;
  options o;
  o.border = boundary::reflect101;
  const auto separable = cuda_forced(cuda_path::separable);
  for (const int fill : {0, 1, 4, 64}) {
    INFO("separable_tile_fill " << fill);
    force_separable_tile_fill(fill);
    REQUIRE(separable_tile_fill() == fill);
    check_method<float>(separable, 128, 128, 3, 1, 31, 31, o);          // 512-thread blocks, a plane each when off
    check_method<float>(separable, 128, 128, 2, 2, 13, 13, o);          // a bank
    check_method<std::uint16_t>(separable, 100, 100, 5, 1, 11, 11, o);  // 13 rows of threads when off
    check_method<std::uint8_t>(separable, 64, 64, 9, 1, 7, 7, o);       // 16-lane blocks
    check_method<float>(separable, 300, 1100, 1, 1, 32, 32, o);         // several blocks each way
  }
  force_separable_tile_fill(-1);
  CHECK_THROWS_AS(force_separable_tile_fill(65), std::invalid_argument);
}

// The chooser takes direct up to max_cuda_direct_taps (method.hpp): its float sums of that many
// products against the double reference, relative L2 over the image (the error measure),
// beside an FFT path's (fused tiles, three-pass past 64 taps a side) on the same image and kernel.
// Images of pixel-like values (0..1) and of signed ones; kernels of random signed taps, whose
// cancelling sums are the harder case.
TEST_CASE("GPU direct method's float sums up to max_cuda_direct_taps: relative L2 error within 1e-6", "[conv][gpu]") {
  if (!cuda_device_available()) SKIP("no CUDA device present");
  const long long h = 150, w = 230;
  for (const auto kernel : {std::array<int, 2>{11, 11}, std::array<int, 2>{13, 13}, std::array<int, 2>{16, 16},
                            std::array<int, 2>{8, 32}, std::array<int, 2>{1, 255}}) {
    const int kh = kernel[0], kw = kernel[1];
    for (const bool signed_image : {false, true}) {
      const auto noise = test::random_reals<float>(std::size_t(h * w), 900 + kh * kw);
      std::vector<float> img(noise);
      if (!signed_image)
        for (auto& v : img) v = 0.5f * v + 0.5f;
      const auto ks = make_kernels(1, kh, kw, false, 910 + kh);
      options o;
      std::vector<double> ref(std::size_t(h * w));
      direct_convolve(img.data(), h, w, 1, ks.data(), kh, kw, o, ref.data());
      double ref2 = 0;
      for (double v : ref) ref2 += v * v;
      auto error_of = [&](cuda_path path) {
        plan_options po;
        po.semantics = o;
        po.device = backend::cuda;
        po.path = path;
        plan p(h, w, 1, ks.data(), 1, kh, kw, po);
        REQUIRE(p.path() == path);
        std::vector<float> out(std::size_t(h * w));
        p.execute(img.data(), out.data());
        double e2 = 0;
        for (std::size_t i = 0; i < out.size(); ++i) e2 += (double(out[i]) - ref[i]) * (double(out[i]) - ref[i]);
        return std::sqrt(e2 / ref2);
      };
      const cuda_path fft = std::max(kh, kw) <= 64 ? cuda_path::fused : cuda_path::three_pass;
      const double direct = error_of(cuda_path::direct), by_fft = error_of(fft);
      WARN(kh << " x " << kw << (signed_image ? ", signed image" : ", image in [0, 1)") << ": relative L2 direct "
              << direct << ", " << to_string(fft) << " " << by_fft);
      CHECK(direct <= 1e-6);
      CHECK(by_fft <= 1e-6);
    }
  }
}

TEST_CASE("GPU direct and separable: host buffers in bands under a memory cap, unaligned device buffers", "[conv][gpu]") {
  if (!cuda_device_available()) SKIP("no CUDA device present");
  const long long h = 301, w = 260;
  const auto img = test::random_reals<float>(std::size_t(h * w), test::fresh_seed());
  const auto k = make_kernels(1, 9, 9, true, test::fresh_seed());
  for (auto path : {cuda_path::direct, cuda_path::separable}) {
    INFO("path " << to_string(path));
    plan_options po;
    po.device = backend::cuda;
    po.path = path;
    po.semantics.border = boundary::reflect101;
    plan whole(h, w, 1, k.data(), 9, 9, po);
    po.memory_limit = std::size_t(w) * 4 * 2 * 40 + std::size_t(h + 8) * w * 4 * 2;  // bands of ~40 rows
    plan banded(h, w, 1, k.data(), 9, 9, po);
    REQUIRE(banded.path() == path);
    std::vector<float> a(img.size()), b(img.size());
    whole.execute(img.data(), a.data());
    banded.execute(img.data(), b.data());
    CHECK(test::relative_l2(b, a) <= 1e-6);
    // device buffers one float past an aligned address: the scalar stores
    device_buffer<float> d_in(img.size() + 1), d_out(img.size() + 1);
    GPUCONV_CUDA(cudaMemcpy(d_in.data() + 1, img.data(), img.size() * 4, cudaMemcpyHostToDevice));
    plan on_device(h, w, 1, k.data(), 9, 9, po);
    on_device.execute_device(d_in.data() + 1, d_out.data() + 1);
    GPUCONV_CUDA(cudaDeviceSynchronize());
    std::vector<float> c(img.size());
    GPUCONV_CUDA(cudaMemcpy(c.data(), d_out.data() + 1, c.size() * 4, cudaMemcpyDeviceToHost));
    CHECK(test::relative_l2(c, a) <= 1e-6);
  }
}

TEST_CASE("GPU separable under a memory cap: the shared tile needs no workspace, two passes fall back to FFT", "[conv][gpu]") {
  if (!cuda_device_available()) SKIP("no CUDA device present");
  options o;
  o.border = boundary::replicate;
  const std::size_t cap = 1 << 20;  // half of it staging: 0.5 MB of workspace, below 640 x 500 floats
  // (check_method's plan has no cap: the capped plans are built here)
  const auto k9 = make_kernels(1, 9, 9, true, 21), k41 = make_kernels(1, 41, 41, true, 22);
  plan_options po;
  po.device = backend::cuda;
  po.memory_limit = cap;
  po.semantics = o;
  po.path = cuda_path::separable;
  CHECK(plan(600, 500, 1, k9.data(), 9, 9, po).path() == cuda_path::separable);  // one tile, no intermediate
  CHECK_THROWS_AS(plan(600, 500, 1, k41.data(), 41, 41, po), std::invalid_argument);  // two passes: 1.28 MB
  po.path = cuda_path::automatic;
  plan fallback(600, 500, 1, k41.data(), 41, 41, po);  // whatever the model picks, it is built
  INFO("automatic under the cap: " << to_string(fallback.path()));
  const auto img = test::random_reals<float>(600 * 500, test::fresh_seed());
  std::vector<float> out(img.size());
  fallback.execute(img.data(), out.data());
  std::vector<double> ref(out.size());
  direct_convolve(img.data(), 600, 500, 1, k41.data(), 41, 41, o, ref.data());
  CHECK(test::relative_l2(out, ref) <= 1e-5);
}

TEST_CASE("GPU plans choose direct or separable for small and rank-1 kernels, and autotune includes them", "[conv][gpu]") {
  if (!cuda_device_available()) SKIP("no CUDA device present");
  const auto dense3 = make_kernels(1, 3, 3, false, 3);
  plan_options po;
  po.device = backend::cuda;
  CHECK(plan(1024, 1024, 1, dense3.data(), 3, 3, po).path() == cuda_path::direct);
  po.autotune = true;
  const plan tuned(512, 512, 1, dense3.data(), 3, 3, po);
  INFO("autotune chose " << to_string(tuned.path()));
  CHECK((tuned.path() == cuda_path::direct || tuned.path() == cuda_path::fused));
  // plan_options::pixels: autotune times the candidates on uint8 buffers; the tuned plan's uint8
  // output within a level of a forced direct plan's (each rounds its own float sums)
  po.pixels = pixel::u8;
  plan tuned8(512, 512, 1, dense3.data(), 3, 3, po);
  INFO("autotune for uint8 chose " << to_string(tuned8.path()));
  CHECK((tuned8.path() == cuda_path::direct || tuned8.path() == cuda_path::fused));
  std::vector<std::uint8_t> in8(512 * 512), got(in8.size()), want(in8.size());
  for (std::size_t i = 0; i < in8.size(); ++i) in8[i] = std::uint8_t((i * 2654435761u) >> 24);
  tuned8.execute(in8.data(), got.data());
  plan_options pd;
  pd.device = backend::cuda;
  pd.path = cuda_path::direct;
  plan(512, 512, 1, dense3.data(), 3, 3, pd).execute(in8.data(), want.data());
  int worst = 0;
  for (std::size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::abs(int(got[i]) - int(want[i])));
  CHECK(worst <= 1);
  options o;
  test::forced_method automatic = cuda_forced(cuda_path::automatic);
  check_method<float>(automatic, 200, 300, 2, 1, 3, 3, o);
}

TEST_CASE("CUDA method chooser: the cost model's choices and forced methods", "[conv]") {
  const auto dense3 = make_kernels(1, 3, 3, false, 1), dense63 = make_kernels(1, 63, 63, false, 2),
             sep31 = make_kernels(1, 31, 31, true, 3), dense31 = make_kernels(1, 31, 31, false, 3),
             sep3 = make_kernels(1, 3, 3, true, 4);
  // small kernels: direct, on large images and on batches of small ones
  CHECK(choose_cuda_method(dense3, 1, 3, 3, 4096, 4096, 1).path == cuda_path::direct);
  CHECK(choose_cuda_method(dense3, 1, 3, 3, 64, 64, 1024).path == cuda_path::direct);
  CHECK(choose_cuda_method(sep3, 1, 3, 3, 4096, 4096, 1).path == cuda_path::direct);  // one pass beats two
  // large dense kernels: an FFT path
  const cuda_path big = choose_cuda_method(dense63, 1, 63, 63, 4096, 4096, 1).path;
  CHECK((big == cuda_path::fused || big == cuda_path::three_pass || big == cuda_path::multipass));
  // box kernels: running sums, whatever the size
  const std::vector<float> box255(255 * 255, 1.f / (255 * 255)), box5(25, 0.04f);
  CHECK(choose_cuda_method(box255, 1, 255, 255, 4096, 4096, 1).path == cuda_path::separable);
  const rank1_factors bf = factor_rank1(box255.data(), 255, 255);
  CHECK(box_factors(bf, 1, 255, 255));
  CHECK_FALSE(box_factors(factor_rank1(sep31.data(), 31, 31), 1, 31, 31));
  // the crossovers gpuconv-bench sweep measured on the H100 (docs/benchmarks.md): at K = 5 one
  // direct pass (0.070 ms on 4096^2) beats the shared separable tile (0.104); at K = 21 the tile
  // (0.149) beats the transforms (0.182-0.186); at K = 31 the FFT paths beat it on a large image
  // (session 70: fused 128-tiles 0.177, three-pass 0.200, the tile 0.236), while on 64^2 images,
  // where transforms pad most, the tile wins (0.082 against 0.122)
  CHECK(choose_cuda_method(box5, 1, 5, 5, 4096, 4096, 1).path == cuda_path::direct);
  const auto sep21 = make_kernels(1, 21, 21, true, 5);
  CHECK(choose_cuda_method(sep21, 1, 21, 21, 4096, 4096, 1).path == cuda_path::separable);
  const cuda_path sep31_large = choose_cuda_method(sep31, 1, 31, 31, 4096, 4096, 1).path;
  CHECK((sep31_large == cuda_path::fused || sep31_large == cuda_path::three_pass));
  CHECK(choose_cuda_method(sep31, 1, 31, 31, 64, 64, 1024).path == cuda_path::separable);
  CHECK(choose_cuda_method(dense31, 1, 31, 31, 4096, 4096, 1).path != cuda_path::separable);
  // session 21's sweep (H100), after the interior loader: on 4096^2 direct K = 9 0.080 ms against
  // fused 0.109, K = 11 direct 0.110 against fused 0.109 (a tie: either), K = 13 direct (the
  // generic walk) 0.293 against fused 0.113
  const auto dense9 = make_kernels(1, 9, 9, false, 8), dense11 = make_kernels(1, 11, 11, false, 9);
  const auto dense13 = make_kernels(1, 13, 13, false, 10);
  CHECK(choose_cuda_method(dense9, 1, 9, 9, 4096, 4096, 1).path == cuda_path::direct);
  const cuda_path k11 = choose_cuda_method(dense11, 1, 11, 11, 4096, 4096, 1).path;
  CHECK((k11 == cuda_path::direct || k11 == cuda_path::fused));
  CHECK(choose_cuda_method(dense13, 1, 13, 13, 4096, 4096, 1).path == cuda_path::fused);
  // past 128 taps on batches of small images: session 67 (H100, reflect101) measured direct ahead
  // (1024 x 64^2 dense K = 12 / 13 direct 0.069 / 0.089 ms against fused 0.117 / 0.114; 1000 x
  // 28^2 K = 12 direct 0.027 against 0.033) and the chooser took direct up to 15 x 15 there; since
  // the fused tiles' row tables and the 80-tiles (session 69, H100: 1024 x 64^2 K = 13 fused
  // 80-tiles 0.047 against direct 0.085; 1000 x 28^2 K = 12..15 fused 32-tiles 0.024 against
  // 0.030-0.032) it keeps 128 taps for every boundary
  const auto dense12 = make_kernels(1, 12, 12, false, 17), dense15 = make_kernels(1, 15, 15, false, 18),
             dense16 = make_kernels(1, 16, 16, false, 19), dense14 = make_kernels(1, 14, 14, false, 34);
  for (bool by_rule : {true, false}) {
    INFO("boundary rule reads the image: " << by_rule);
    for (const auto* k : {&dense12, &dense13, &dense14, &dense15, &dense16}) {
      const int n = int(std::lround(std::sqrt(double(k->size()))));
      INFO("K = " << n);
      CHECK(choose_cuda_method(*k, 1, n, n, 64, 64, 1024, cuda_path::automatic, 0, 132, by_rule).path == cuda_path::fused);
      CHECK(choose_cuda_method(*k, 1, n, n, 28, 28, 1000, cuda_path::automatic, 0, 132, by_rule).path == cuda_path::fused);
    }
    CHECK(choose_cuda_method(dense11, 1, 11, 11, 28, 28, 1000, cuda_path::automatic, 0, 132, by_rule).path == cuda_path::direct);
  }
  // rank-1 K = 11..25 on the shared tile (0.086-0.116 ms) against fused / three-pass (0.111-0.180)
  const auto sep13 = make_kernels(1, 13, 13, true, 11), sep25 = make_kernels(1, 25, 25, true, 12);
  CHECK(choose_cuda_method(sep13, 1, 13, 13, 4096, 4096, 1).path == cuda_path::separable);
  CHECK(choose_cuda_method(sep25, 1, 25, 25, 3000, 4000, 3).path == cuda_path::separable);
  // long rank-1 factors: the separable method's passes by FFT (separable_fft.hpp), which the H100's
  // sweep measured at 0.305 ms for gaussian:20 on 4096^2 (three-pass 0.336, FMA passes 0.486) and
  // 0.356 ms at K = 255 (0.534, 0.690); up to 32 taps the shared tile, never the FFT passes
  const auto sep161 = make_kernels(1, 161, 161, true, 13), sep255 = make_kernels(1, 255, 255, true, 14);
  CHECK(choose_cuda_method(sep161, 1, 161, 161, 4096, 4096, 1).path == cuda_path::separable);
  CHECK(choose_cuda_method(sep255, 1, 255, 255, 4096, 4096, 1).path == cuda_path::separable);
  CHECK(separable_tiles::fft_passes(161, 161, 4096, 4096, false));
  CHECK(separable_tiles::fft_passes(255, 255, 4096, 4096, false));
  CHECK_FALSE(separable_tiles::fft_passes(21, 21, 4096, 4096, false));
  CHECK_FALSE(separable_tiles::fft_passes(801, 801, 4096, 4096, false));  // past line_fft_passes::max_taps
  CHECK(line_fft_passes::line_for(161, 4096) == 1024);
  CHECK(line_fft_passes::line_for(63, 4096) == 256);
  CHECK(line_fft_passes::line_for(161, 256) == 512);  // one segment covers the line
  CHECK(line_fft_passes::line_for(770, 4096) == 0);
  // small images with long factors (session 31's sweep, H100): the FFT passes, not the three-pass
  // tiles, whose padded pixels cost about the same whatever their valid fraction (64 x 256^2
  // rank-1 K = 127 0.106 ms against 0.145, K = 161 0.138 against 0.207-0.284; 1024 x 64^2 K = 161
  // 0.346 against 0.574, where the FMA passes take 0.838: narrow rows cost them more)
  const auto sep127 = make_kernels(1, 127, 127, true, 15), dense161 = make_kernels(1, 161, 161, false, 16);
  for (auto shape : {std::array<long long, 3>{256, 256, 64}, std::array<long long, 3>{100, 100, 256}}) {
    INFO(shape[2] << " x " << shape[0] << " x " << shape[1]);
    CHECK(choose_cuda_method(sep127, 1, 127, 127, shape[0], shape[1], shape[2]).path == cuda_path::separable);
    CHECK(separable_tiles::fft_passes(127, 127, shape[0], shape[1], false));
  }
  CHECK(choose_cuda_method(sep161, 1, 161, 161, 64, 64, 1024).path == cuda_path::separable);
  CHECK(separable_tiles::fft_passes(161, 161, 64, 64, false));
  // 256 x 100^2 rank-1 K = 11..31 (session 32's sweep, H100): the shared separable tile, one
  // 13-warp block a plane (0.030-0.053 ms), not fused (0.037-0.069)
  for (int k : {11, 15, 23, 31}) {
    INFO("K = " << k);
    const auto sep = make_kernels(1, k, k, true, 20 + k);
    CHECK(choose_cuda_method(sep, 1, k, k, 100, 100, 256).path == cuda_path::separable);
  }
  // a dense K = 161 on 256^2 images: one 512-tile a plane (0.207 ms), not nine 256-tiles (0.284)
  const cuda_choice d161 = choose_cuda_method(dense161, 1, 161, 161, 256, 256, 64);
  CHECK(d161.path == cuda_path::three_pass);
  CHECK(d161.tiles.tile_h == 512);
  CHECK(d161.tiles.tiles_per_plane() == 1);
  // session 70's sweep (H100, reflect101, ms), the prices refit to it (method.hpp, tiling.hpp):
  // large images at K = 23..31 on the fused 128-tiles (4096^2 0.155-0.172 against three-pass
  // 0.184-0.201; 3 x 3000 x 4000 0.305-0.334 against 0.369-0.392), K = 19 on 4096^2 on the
  // 64-tiles (0.140 against 128-tiles' 0.154-0.156); 1024 x 64^2 rank-1 K = 9 separable (0.032-0.033
  // against direct 0.037-0.040); 1000 x 28^2 rank-1 K = 25..33 fused (0.027-0.029 against the
  // separable passes' 0.033-0.054)
  for (int k : {23, 27, 31}) {
    INFO("K = " << k);
    const auto dense = make_kernels(1, k, k, false, 40 + k);
    for (auto shape : {std::array<long long, 3>{4096, 4096, 1}, std::array<long long, 3>{3000, 4000, 3}}) {
      const cuda_choice c = choose_cuda_method(dense, 1, k, k, shape[0], shape[1], shape[2]);
      CHECK(c.path == cuda_path::fused);
      CHECK(c.tiles.tile_h == 128);
    }
  }
  const auto dense19 = make_kernels(1, 19, 19, false, 59), sep9 = make_kernels(1, 9, 9, true, 60);
  const cuda_choice k19 = choose_cuda_method(dense19, 1, 19, 19, 4096, 4096, 1);
  CHECK(k19.path == cuda_path::fused);
  CHECK(k19.tiles.tile_h == 64);
  for (bool by_rule : {true, false}) {
    INFO("boundary rule reads the image: " << by_rule);
    CHECK(choose_cuda_method(sep9, 1, 9, 9, 64, 64, 1024, cuda_path::automatic, 0, 132, by_rule).path ==
          cuda_path::separable);
    for (int k : {25, 29, 31, 33}) {
      INFO("K = " << k);
      const auto sep = make_kernels(1, k, k, true, 60 + k);
      CHECK(choose_cuda_method(sep, 1, k, k, 28, 28, 1000, cuda_path::automatic, 0, 132, by_rule).path ==
            cuda_path::fused);
    }
  }
  // session 71: even square kernels 4..10 on the unrolled walk (direct.hpp), direct on every
  // default shape (H100 sweep, ms: 4096^2 K = 6 0.061-0.063 against fused 0.107, K = 8 0.075
  // against 0.106, K = 10 0.096-0.097 against 0.113; 3 x 3000 x 4000 K = 8 0.153 against 0.204);
  // K = 12, the generic walk, fused (0.114 against direct 0.198)
  for (int k : {4, 6, 8, 10, 12}) {
    const auto dense = make_kernels(1, k, k, false, 70 + k);
    CHECK(direct_unrolled(k, k) == (k <= 11));
    for (auto shape : {std::array<long long, 3>{4096, 4096, 1}, std::array<long long, 3>{3000, 4000, 3},
                       std::array<long long, 3>{256, 256, 64}, std::array<long long, 3>{64, 64, 1024}}) {
      INFO("K = " << k << ", " << shape[2] << " x " << shape[0] << " x " << shape[1]);
      CHECK((choose_cuda_method(dense, 1, k, k, shape[0], shape[1], shape[2]).path == cuda_path::direct) == (k <= 11));
    }
  }
  // a forced tile asks for an FFT path
  CHECK(choose_cuda_method(dense3, 1, 3, 3, 4096, 4096, 1, cuda_path::automatic, 64).path == cuda_path::fused);
  // the automatic choice costs no more than any method forced
  for (int k : {1, 2, 3, 5, 7, 9, 15, 31, 63, 127}) {
    const auto sep = make_kernels(1, k, k, true, 5);
    for (auto shape : {std::array<long long, 3>{4096, 4096, 1}, std::array<long long, 3>{256, 256, 64},
                       std::array<long long, 3>{64, 64, 1024}, std::array<long long, 3>{28, 28, 1000}}) {
      INFO("K " << k << ", " << shape[2] << " x " << shape[0] << " x " << shape[1]);
      const cuda_choice chosen = choose_cuda_method(sep, 1, k, k, shape[0], shape[1], shape[2]);
      for (auto forced : {cuda_path::direct, cuda_path::separable, cuda_path::fused, cuda_path::three_pass,
                          cuda_path::multipass}) {
        try {
          const cuda_choice c = choose_cuda_method(sep, 1, k, k, shape[0], shape[1], shape[2], forced);
          CHECK(c.path == forced);
          if (forced != cuda_path::direct || k * k <= max_direct_taps) CHECK(chosen.cost_ps <= c.cost_ps);
        } catch (const std::invalid_argument&) {
          // the method cannot hold this kernel
        }
      }
    }
  }
  // forced methods that cannot run the kernel
  CHECK_THROWS_AS(choose_cuda_method(dense31, 1, 31, 31, 500, 500, 1, cuda_path::separable), std::invalid_argument);
  const auto bank = [&] {  // a bank with one kernel that is not rank-1
    std::vector<float> b = make_kernels(2, 5, 5, true, 6);
    b[30] += 0.5f;
    return b;
  }();
  CHECK_THROWS_AS(choose_cuda_method(bank, 2, 5, 5, 500, 500, 1, cuda_path::separable), std::invalid_argument);
  CHECK(choose_cuda_method(bank, 2, 5, 5, 500, 500, 1).path != cuda_path::separable);
  const auto huge = make_kernels(1, 255, 255, false, 7);
  CHECK_THROWS_AS(choose_cuda_method(huge, 1, 255, 255, 500, 500, 1, cuda_path::direct), std::invalid_argument);
  CHECK(choose_cuda_method(huge, 1, 255, 255, 500, 500, 1, cuda_path::multipass).path == cuda_path::multipass);
  // the separable factors come with the choice, one column and row per kernel of the bank
  const cuda_choice s = choose_cuda_method(sep31, 1, 31, 31, 500, 500, 1, cuda_path::separable);
  CHECK(s.factors.column.size() == 31);
  CHECK(s.factors.row.size() == 31);
  // and the plan rejects them at the API
  if (cuda_device_available()) {
    plan_options po;
    po.device = backend::cuda;
    po.path = cuda_path::separable;
    CHECK_THROWS_AS(plan(500, 500, 1, dense31.data(), 31, 31, po), std::invalid_argument);
  }
}

// The tensor-core walk's operands (conv/direct_mma.cuh) on the CPU: for every kernel up to 9 x 9 and
// every window shift where mma_walk_fits, the sums over 16 x 16 window blocks times the tap table
// T_ky(q, n) equal the direct sum of every tap (a tap the table misses, or puts at the wrong
// column, shows); where it does not fit, some tap lies past the 16-wide operand. The kernel's
// split of each scaled tap into two halves is checked by the [gpu] sweep.
TEST_CASE("CUDA direct path: the tensor-core walk's tap table sums every tap once", "[conv]") {
  std::vector<float> window(24 * 24);
  for (std::size_t i = 0; i < window.size(); ++i) window[i] = float((i * 37 + 11) % 256);
  for (int kh = 1; kh <= 10; ++kh)
    for (int kw = 1; kw <= 10; ++kw) {
      std::vector<float> k(std::size_t(kh) * kw);
      for (std::size_t i = 0; i < k.size(); ++i) k[i] = (float(int((i * 7919) % 23) - 11) + 0.5f) / 16.f;  // none 0
      const std::vector<float> padded = padded_taps(k.data(), 1, kh, kw);
      const float scale = mma_walk_scale(k.data(), kh * kw);
      for (int ox = -2; ox <= kw + 1; ++ox) {
        const int sh = mma_shift(ox, kw);
        INFO(kh << " x " << kw << ", ox " << ox << ", shift " << sh);
        CHECK(sh == ((ox - (kw - 1)) % 4 + 4) % 4);
        const bool fits = mma_walk_fits(kh, kw, ox);
        CHECK(fits == (kh <= 9 && kw + sh <= 9));
        if (kh > 9) continue;
        bool all_equal = true;
        for (int a = 0; a < 16; ++a)
          for (int n = 0; n < 8; ++n) {
            double tiled = 0, direct = 0;
            for (int ky = 0; ky < kh; ++ky)
              for (int q = 0; q < 16; ++q)
                tiled += double(window[(a + ky) * 24 + q]) * mma_tap(padded.data(), kh, kw, round4(kw), sh, ky, q, n, scale);
            for (int i = 0; i < kh; ++i)
              for (int j = 0; j < kw; ++j)  // out(a, n) = sum k(i, j) window(a + kh-1-i, n + kw-1-j + sh)
                direct += double(k[i * kw + j]) * window[(a + kh - 1 - i) * 24 + n + kw - 1 - j + sh];
            all_equal = all_equal && std::fabs(tiled / scale - direct) <= 1e-9 * (1 + std::fabs(direct));
          }
        CHECK(all_equal == fits);
      }
    }
  CHECK(mma_walk_scale(std::vector<float>{0.3f, -0.7f}.data(), 2) == 2048.f);  // 0.7 * 2^11 in [2^10, 2^11)
  CHECK(mma_walk_scale(std::vector<float>{1024.f}.data(), 1) == 1.f);
  CHECK(mma_walk_scale(std::vector<float>{0.f, 0.f}.data(), 2) == 1.f);
  // clamped to [2^-5, 2^14] (the window's factor 1 / s keeps every pixel a normal half); 0 (not
  // on the walk) for a tap of 2^20 or more, or one not finite
  CHECK(mma_walk_scale(std::vector<float>{1e-38f}.data(), 1) == 16384.f);
  CHECK(mma_walk_scale(std::vector<float>{1.f / 81}.data(), 1) == 16384.f);     // 2^17 clamped
  CHECK(mma_walk_scale(std::vector<float>{0.07f}.data(), 1) == 16384.f);        // [2^-4, 2^-3): 2^14
  CHECK(mma_walk_scale(std::vector<float>{0.05f}.data(), 1) == 16384.f);        // 2^15 clamped
  CHECK(mma_walk_scale(std::vector<float>{40000.f}.data(), 1) == 1.f / 32);     // 2^-5
  CHECK(mma_walk_scale(std::vector<float>{1048575.f}.data(), 1) == 1.f / 32);   // 2^-9 clamped
  CHECK(mma_walk_scale(std::vector<float>{1048576.f}.data(), 1) == 0.f);
  CHECK(mma_walk_scale(std::vector<float>{1.f, -INFINITY}.data(), 2) == 0.f);
  CHECK(mma_walk_scale(std::vector<float>{NAN, 1.f}.data(), 2) == 0.f);
}

// Where plans take the tensor-core walk by rule (mode 1, the default): 'same' windows at least
// 128 outputs wide, kernels of 16 taps or more, and from 9 taps with both sides >= 3 (3 x 3 measured
// faster on the walk, session 81); mode 0 never, mode 2 wherever the window fits.
TEST_CASE("CUDA direct path: the tensor-core walk's rule by kernel shape and output width", "[conv]") {
  struct restore {
    ~restore() { force_mma_walk(1); }
  } guard;
  force_mma_walk(1);
  auto same = [](int kh, int kw, long long width) {
    window_map m;
    m.height = m.out_h = 512;
    m.width = m.out_w = width;
    m.oy = (kh - 1) / 2;
    m.ox = (kw - 1) / 2;
    return mma_walk_applies(kh, kw, m);
  };
  CHECK(same(3, 3, 4096));
  CHECK(same(3, 4, 4096));
  CHECK(same(4, 4, 4096));
  CHECK(same(2, 8, 4096));
  CHECK(same(9, 9, 4096));
  CHECK_FALSE(same(3, 3, 127));  // narrower than one 128-column tile
  CHECK_FALSE(same(2, 3, 4096));
  CHECK_FALSE(same(1, 9, 4096));
  CHECK_FALSE(same(9, 1, 4096));
  CHECK_FALSE(same(2, 5, 4096));
  CHECK_FALSE(same(11, 11, 4096));  // past the 9 x 9 the walk holds
  force_mma_walk(0);
  CHECK_FALSE(same(5, 5, 4096));
  force_mma_walk(2);
  CHECK(same(1, 9, 64));
  CHECK(same(2, 3, 4096));
}

// The tensor-core walk's window (bytes_to_halves): each pixel p as the half 1024 + p (0x6400 | p),
// then one fused multiply-add by f = 1 / s and -1024 f. For every scale mma_walk_scale gives,
// -1024 f is a half, and the result (the exact value rounded once to a half) is p f exactly, a
// normal half for p >= 1: so the walk's sums are the taps times the pixels, unscaled.
TEST_CASE("CUDA direct path: the tensor-core walk's window holds each pixel over the scale exactly", "[conv]") {
  for (float scale = mma_walk_min_scale; scale <= mma_walk_max_scale; scale *= 2) {
    const float f = 1.f / scale, bias = -1024.f * f;
    INFO("scale " << scale);
    CHECK(half_value(half_bits(bias)) == bias);
    CHECK(half_value(half_bits(f)) == f);
    bool exact = true, normal = true;
    for (int p = 0; p < 256; ++p) {
      const float magic = half_value(std::uint16_t(0x6400 | p));
      exact = exact && magic == 1024.f + p;
      const double fused = double(magic) * f + bias;  // exact in double
      const std::uint16_t h = half_bits(float(fused));
      exact = exact && half_value(h) == float(p) * f;
      normal = normal && (p == 0 ? h == 0 : (h & 0x7c00) != 0);
    }
    CHECK(exact);
    CHECK(normal);
  }
  // and outside the clamp it would not be: 2^15 makes pixel 1 a subnormal, 2^-6 makes -1024 f
  // (-65536) pass the largest half
  CHECK((half_bits(std::ldexp(1.f, -15)) & 0x7c00) == 0);
  CHECK(half_bits(-1024.f * 64) == 0xfc00);
}

// The tap table as the host builds it (mma_tap_table, uploaded once a kernel and shift): fp16 by
// round to nearest even (half_bits, against known values and every finite half), and each scaled
// tap as hi + lo within 2^-22 of it; the table's sums over 16 x 16 window blocks, operand b0 / b1
// of lane (g, t4) taken as rows q = 2 t4 (+ 1) / + 8 of output column g, equal every tap's.
TEST_CASE("CUDA direct path: the tensor-core walk's tap table in two fp16 halves", "[conv]") {
  CHECK(half_bits(1.f) == 0x3c00);
  CHECK(half_bits(-2.f) == 0xc000);
  CHECK(half_bits(0.1f) == 0x2e66);
  CHECK(half_bits(65504.f) == 0x7bff);
  CHECK(half_bits(65520.f) == 0x7c00);                        // the tie above the largest rounds up
  CHECK(half_bits(1.f + std::ldexp(1.f, -11)) == 0x3c00);     // a tie to the even below
  CHECK(half_bits(1.f + 3 * std::ldexp(1.f, -11)) == 0x3c02);  // a tie to the even above
  CHECK(half_bits(std::ldexp(1.f, -24)) == 0x0001);
  CHECK(half_bits(std::ldexp(1.f, -25)) == 0x0000);
  CHECK(half_bits(3 * std::ldexp(1.f, -25)) == 0x0002);
  CHECK(half_bits(std::ldexp(1023.5f, -24)) == 0x0400);       // the largest subnormal rounds up to normal
  bool round_trip = true;
  for (unsigned h = 0; h < 0x10000; ++h)
    if ((h & 0x7c00) != 0x7c00) round_trip = round_trip && half_bits(half_value(std::uint16_t(h))) == h;
  CHECK(round_trip);

  std::vector<float> window(24 * 24);
  for (std::size_t i = 0; i < window.size(); ++i) window[i] = float((i * 37 + 11) % 256);
  // taps of every size: ~0.1 (scale 2^13), below 2^-4 (scale clamped at 2^14, low halves
  // subnormal), large (2^-3), past 2^15 (clamped at 2^-5), and past 2^20 (not on the walk)
  for (const float magnitude : {1.f, 1.f / 64, 1e-5f, 65536.f, 1048576.f, 16777216.f})
  for (int kh = 1; kh <= 9; ++kh)
    for (int kw = 1; kw <= 9; ++kw)
      for (int sh = 0; sh + kw <= 9 && sh < 4; ++sh) {
        std::vector<float> k(std::size_t(kh) * kw);
        for (std::size_t i = 0; i < k.size(); ++i)
          k[i] = magnitude * (float(int((i * 7919) % 23) - 11) + 0.3f) / (kh * kw + 7.f);
        const std::vector<float> padded = padded_taps(k.data(), 1, kh, kw);
        const float scale = mma_walk_scale(k.data(), kh * kw);
        INFO(kh << " x " << kw << ", shift " << sh << ", taps times " << magnitude << ", scale " << scale);
        float largest = 0.f;
        for (const float v : k) largest = std::max(largest, std::fabs(v));
        CHECK((scale == 0.f) == (largest >= 1048576.f));
        if (scale == 0.f) continue;
        std::vector<std::uint32_t> table(std::size_t(kh) * 32 * 4, 0xdeadbeefu);
        mma_tap_table(padded.data(), kh, kw, sh, scale, table.data());
        std::vector<double> b(std::size_t(kh) * 16 * 8);  // T_ky(q, n) as hi + lo
        bool split = true;
        for (int ky = 0; ky < kh; ++ky)
          for (int l = 0; l < 32; ++l)
            for (int w = 0; w < 2; ++w)
              for (int s = 0; s < 2; ++s) {
                const int q = 2 * (l & 3) + 8 * w + s, n = l >> 2;
                const std::uint32_t* e = table.data() + 4 * (ky * 32 + l);
                const float hi = half_value(std::uint16_t(e[w] >> (16 * s))), lo = half_value(std::uint16_t(e[2 + w] >> (16 * s)));
                const float v = mma_tap(padded.data(), kh, kw, round4(kw), sh, ky, q, n, scale);
                split = split && std::fabs(double(v) - hi - lo) <= std::ldexp(std::fabs(v), -22) + std::ldexp(1.0, -25);
                b[(ky * 16 + q) * 8 + n] = double(hi) + lo;
              }
        CHECK(split);
        double worst = 0;
        for (int a = 0; a < 16; ++a)
          for (int n = 0; n < 8; ++n) {
            double tiled = 0, direct = 0, size = 0;
            for (int ky = 0; ky < kh; ++ky)
              for (int q = 0; q < 16; ++q) tiled += double(window[(a + ky) * 24 + q]) * b[(ky * 16 + q) * 8 + n];
            for (int i = 0; i < kh; ++i)
              for (int j = 0; j < kw; ++j) {
                const double t = double(k[i * kw + j]) * window[(a + kh - 1 - i) * 24 + n + kw - 1 - j + sh];
                direct += t;
                size += std::fabs(t);
              }
            // relative, or (tiny taps, scale clamped) 2^-24 of a level
            worst = std::max(worst, std::fabs(tiled / scale - direct) / (size + std::ldexp(1e6, -24)));
          }
        CHECK(worst <= 1e-6);
      }
}

// A kernel's block or tile index into plane, row and column (conv/divider.hpp): the
// multiply-and-shift quotient equals integer division for every divisor 1 .. 4096 over
// numerators near each multiple of it, the smallest and the largest 31-bit ones, and for large
// and power-of-two divisors.
TEST_CASE("conv: divider's quotient equals integer division for 31-bit numbers", "[conv]") {
  const std::uint32_t top = (1u << 31) - 1;
  auto agrees = [](const divider& div, std::uint32_t n) {
    const std::uint32_t q = div.quotient(n);
    return q == n / div.d && div.remainder(n, q) == n % div.d;
  };
  long long wrong = 0, tried = 0;
  for (long long dv = 1; dv <= 4096; ++dv) {
    const divider div(dv);
    for (std::uint32_t n = 0; n < 3000; ++n, ++tried) wrong += !agrees(div, n);
    for (std::uint32_t k = top / div.d; k > top / div.d - 3; --k)  // the largest multiples, and one below each
      for (std::uint32_t e : {0u, 1u}) wrong += !agrees(div, k * div.d - e), ++tried;
    wrong += !agrees(div, top), ++tried;
  }
  std::uint64_t x = 88172645463325252ull;  // xorshift: divisors across the range, numerators at random
  for (int i = 0; i < 200000; ++i, ++tried) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    const divider div(1 + static_cast<long long>(x % top));
    wrong += !agrees(div, std::uint32_t((x >> 32) % (std::uint64_t(top) + 1)));
  }
  for (int l = 0; l <= 30; ++l)
    wrong += !agrees(divider(1LL << l), top) + !agrees(divider((1LL << l) + 1), top) + !agrees(divider(top), 1u << l);
  // split_block: a block index into plane, tile row and tile column, as the kernels take it
  for (long long columns : {1LL, 3LL, 32LL, 1000LL})
    for (long long rows : {1LL, 7LL, 64LL}) {
      const divider per_plane(rows * columns), across(columns);
      for (std::uint32_t b : {0u, 1u, 63u, 64u, 12345u, 999999u, top}) {
        const block_tile t = split_block(b, per_plane, across);
        wrong += t.plane != b / (rows * columns) || t.row != b % (rows * columns) / columns || t.column != b % columns;
        ++tried;
      }
    }
  CHECK(tried > 12000000);
  CHECK(wrong == 0);
  CHECK_THROWS_AS(divider(0), std::invalid_argument);
  CHECK_THROWS_AS(divider(1LL << 31), std::invalid_argument);
}

TEST_CASE("CUDA direct path: block shapes cover the output and fit shared memory", "[conv]") {
  for (auto shape : {std::array<long long, 2>{4096, 4096}, std::array<long long, 2>{28, 28},
                     std::array<long long, 2>{64, 64}, std::array<long long, 2>{100, 100},
                     std::array<long long, 2>{1, 1}, std::array<long long, 2>{3000, 7}}) {
    for (auto k : {std::array<int, 2>{3, 3}, std::array<int, 2>{11, 11}, std::array<int, 2>{1, 255},
                   std::array<int, 2>{255, 1}, std::array<int, 2>{31, 31}}) {
      for (int rows : {8, 4, 2}) {
        INFO("output " << shape[0] << " x " << shape[1] << ", kernel " << k[0] << " x " << k[1] << ", " << rows
                       << " rows a thread");
        const window_shape s = window_shape_for(shape[0], shape[1], k[0], k[1], rows);
        CHECK(s.rows == rows);
        CHECK(s.tile_h == s.ty * rows);
        CHECK(s.tx * s.ty <= window_policy::max_threads);
        CHECK(s.shared_bytes <= std::size_t(window_policy::max_shared_bytes));
        CHECK(s.tiles_y * s.tile_h >= shape[0]);
        CHECK(s.tiles_x * s.tile_w >= shape[1]);
        CHECK((s.tiles_y - 1) * s.tile_h < shape[0]);
        CHECK(s.stride % 4 == 0);
        CHECK(s.stride >= s.tile_w + k[1] + 3);  // the walks' float4 reads stay in the row
        CHECK(s.taps_floats % 4 == 0);
      }
    }
  }
  CHECK(window_shape_for(28, 28, 5, 5).tx == 8);   // 32 columns for a 28-wide image
  // rows a thread: 8 where the grid fills the GPU, fewer for small batches (132 SMs: an H100)
  force_window_rows(0);  // (whatever GPUCONV_DIRECT_ROWS says)
  CHECK(window_rows_for(4096, 4096, 3, 3, 1, 132) == 8);
  CHECK(window_rows_for(256, 256, 5, 5, 64, 132) == 8);
  CHECK(window_rows_for(100, 100, 5, 5, 256, 132) == 8);
  CHECK(window_rows_for(28, 28, 5, 5, 1000, 132) == 2);
  CHECK(window_rows_for(28, 28, 5, 5, 1500, 132) == 4);
  CHECK(window_rows_for(28, 28, 5, 5, 4000, 132) == 8);
  CHECK(window_rows_for(28, 28, 5, 5, 1, 132) == 2);
  // the separable method's passes through global memory: 4 rows whatever the grid, unless forced
  CHECK(separable_pass_rows_for() == 4);
  force_window_rows(4);
  CHECK(window_rows_for(4096, 4096, 3, 3, 1, 132) == 4);
  force_window_rows(8);
  CHECK(separable_pass_rows_for() == 8);
  force_window_rows(0);
  CHECK(window_rows_for(4096, 4096, 3, 3, 1, 132) == 8);
  CHECK(separable_pass_rows_for() == 4);
  CHECK_THROWS_AS(force_window_rows(3), std::invalid_argument);
  CHECK_THROWS_AS(window_shape_for(64, 64, 3, 3, 16), std::invalid_argument);
  CHECK(window_shape_for(64, 64, 5, 5).tx == 16);
  CHECK(window_shape_for(64, 64, 5, 5).tiles_y == 1);
  CHECK(window_shape_for(4096, 4096, 3, 3).tile_w == 128);
  CHECK(direct_tiles::supports(255, 1));
  CHECK(direct_tiles::supports(1, 255));
  CHECK_FALSE(direct_tiles::supports(255, 255));
}

TEST_CASE("GPU direct and separable plans of several shapes, run from several threads at once", "[conv][gpu]") {
  if (!cuda_device_available()) SKIP("no CUDA device present");
  // A 17 x 17 gaussian on images 160 wide and 64..136 high: the tile kernels' dynamic shared
  // memory differs per height (50-89 KB for the direct walk), and the limit above 48 KB is the
  // kernel's, not the launch's: each thread's launches must fit whatever the others ask for
  // (fft/device/shared_limit.hpp; a batch of photos of several sizes on three GPU workers failed
  // with cudaErrorInvalidValue before).
  constexpr int K = 17;
  std::vector<float> g(K), k(K * K);
  double sum = 0;
  for (int i = 0; i < K; ++i) sum += g[i] = float(std::exp(-0.5 * (i - K / 2) * (i - K / 2) / 4.0));
  for (int y = 0; y < K; ++y)
    for (int x = 0; x < K; ++x) k[y * K + x] = float(g[y] * g[x] / (sum * sum));
  const int heights[] = {64, 100, 120, 128, 136, 120};
  constexpr int width = 160, planes = 3;
  // GPUCONV_TEST_ROUNDS: fewer rounds where each launch is slow (scripts/gpu-check.sh --sanitize
  // sets 3: under racecheck the 25 rounds' separable half ran past 150-470 s in 3 of 5 tries)
  const int rounds = [] {
    const char* e = std::getenv("GPUCONV_TEST_ROUNDS");
    const int n = e ? std::atoi(e) : 0;
    return n >= 1 && n <= 1000 ? n : 25;
  }();
  for (const cuda_path path : {cuda_path::direct, cuda_path::separable}) {
    INFO("method " << to_string(path));
    plan_options o;
    o.device = backend::cuda;
    o.path = path;
    std::vector<std::vector<float>> inputs, expected;
    for (const int h : heights) {  // one thread first: the expected outputs
      inputs.push_back(test::random_reals<float>(std::size_t(h) * width * planes, test::fresh_seed()));
      expected.emplace_back(inputs.back().size());
      plan(h, width, planes, k.data(), K, K, o).execute(inputs.back().data(), expected.back().data());
    }
    std::vector<std::string> errors(std::size(heights));
    std::vector<int> mismatches(std::size(heights), 0);
    std::vector<std::thread> threads;
    for (std::size_t t = 0; t < std::size(heights); ++t)
      threads.emplace_back([&, t] {
        try {
          plan p(heights[t], width, planes, k.data(), K, K, o);
          std::vector<float> out(expected[t].size());
          for (int r = 0; r < rounds; ++r) {
            p.execute(inputs[t].data(), out.data());
            if (out != expected[t]) ++mismatches[t];
          }
        } catch (const std::exception& e) {
          errors[t] = e.what();
        }
      });
    for (auto& th : threads) th.join();
    for (std::size_t t = 0; t < std::size(heights); ++t) {
      INFO("thread " << t << ", " << heights[t] << " x " << width);
      CHECK(errors[t] == "");
      CHECK(mismatches[t] == 0);
    }
  }
}
