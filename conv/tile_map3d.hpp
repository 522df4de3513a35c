// 3D overlap-save tiles and the index maps between volumes and tiles, shared by the CUDA
// kernels and the CPU backend (tile_map.hpp's rules with a third axis).
//
// A tile of td x th x tw extended-input voxels whose first output is (z0, y0, x0) holds
//   tile(u, v, w) = in_ext(z0 + u + oz - (kd-1), y0 + v + oy - (kh-1), x0 + w + ox - (kw-1));
// its circular convolution with the kernel zero-padded to the tile equals the linear one
// where no index wraps (u >= kd-1, v >= kh-1, w >= kw-1), so a tile yields
// (td-kd+1) x (th-kh+1) x (tw-kw+1) outputs, out(z0 + a, y0 + b, x0 + c) at tile element
// (a + kd-1, b + kh-1, c + kw-1).
//
// Bands (the CUDA backend's execute on host buffers when a volume exceeds the memory cap):
// a unit of work covers output slices [z_first, z_end) of one volume with whole tile layers;
// its input is a slab of the extended volume's slices (the boundary rule along D applied on
// the host, backend3d.hpp's make_band), and its output buffer starts at slice z_first.
#pragma once
#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "../fft/plan/dispatch.hpp"
#include "semantics.hpp"
#include "tiling.hpp"

namespace gpuconv::conv {

struct tiling3d {
  int tile_d = 0, tile_h = 0, tile_w = 0;     // powers of two (the slice path's depth: or a mixed length)
  int valid_d = 0, valid_h = 0, valid_w = 0;  // tile - kernel + 1
  long long tiles_z = 0, tiles_y = 0, tiles_x = 0;
  long long tiles_per_volume() const { return tiles_z * tiles_y * tiles_x; }
  long long tile_voxels() const { return (long long)tile_d * tile_h * tile_w; }
};

constexpr int min_tile_side_3d = 16;   // fft::real_3d_plan's smallest side
constexpr int max_tile_side_3d = 256;  // the cost model's largest (the FFT takes 1024)
// The CPU backend's largest: a 64 x 128 x 128 tile's stacked spectra and scratch take ~10 MB a
// thread (conv/cpu3d.cpp); on the 2-core Zen 5 VM 128 took K = 31 on 64 x 256^2, 128 x 256^2 and
// 32 x 512^2 from 64^3 tiles to 64 x 128^2, 1.4-1.7x faster, and K = 15 no slower (session 33).
constexpr int cpu_max_tile_side_3d = 128;

// Tile depths the CUDA backend's slice path takes: powers of two 16..256, and 3 or 5 times a
// power of two (fft::mixed_lengths: 48, 80, 96, 160, 192, 320), which hug a volume's depth
// closer (128 slices and a 31-deep PSF: one 160-deep tile layer instead of four of 64).
inline bool slice_path_depth(int d) {
  return (fft::is_pow2(d) && d >= 16 && d <= 256) || fft::is_compiled_mixed_length(d);
}
// Slice sides the slice path takes: 32, 64 and 128, and 160 (5 x 32; slices3d.cu's mixed-side
// kernels: 128 x 512^2 with a 31-deep PSF takes 4 x 4 slices of 160 a tile layer instead of 6 x 6
// of 128, 30% fewer tile voxels).
constexpr int slice_mixed_side = 160;
inline bool slice_path_side(int s) { return s == 32 || s == 64 || s == 128 || s == slice_mixed_side; }
// Tiles the slice path takes (slices3d.hpp): square slices of those sides, a depth above.
inline bool slice_path_tiles(const tiling3d& t) {
  return t.tile_h == t.tile_w && slice_path_side(t.tile_h) && slice_path_depth(t.tile_d);
}
// The slice path's cost against the multipass route's per unit of the model below: measured
// 5.7-9.4 ps a tile voxel against 22-24 (H100, 128 x 512 x 512, K = 15..63; docs/notes-3d.md).
constexpr double slice_path_weight = 0.375;
// Slices of slice_mixed_side against the power-of-two ones, per unit of the model (the line
// transforms exchange through shared memory in more passes; 640 threads at 96 registers a
// multiprocessor): measured 1.14x (K = 63) and 1.17x (K = 31) on 128 x 512 x 512 (H200,
// session 55), so that K = 63 keeps 192 x 128^2 (1.59 ms against 1.63 on 192 x 160^2) and
// K = 31 takes 160^3 (0.71 ms against 0.85 on 160 x 128^2). GPUCONV_SLICE_MIXED=0 at plan time
// leaves these slices out (a measurement switch: plan3d.cpp).
constexpr double slice_mixed_side_weight = 1.16;

// Tile sides per axis for an out_d x out_h x out_w output and a kd x kh x kw kernel: the
// powers of two in [16, 256] (none larger than the axis needs) that minimise the padded
// voxels times (log2 of the tile's voxels + 8), a pass count proxy (multi-pass pipeline:
// every pass moves the whole tile; the FFT's work grows with the log). forced > 0: a cube of
// that side (each axis rounded up to cover its kernel and to 16; with slice_path,
// slice_mixed_side gives that cube where the kernel fits). max_side: the largest side
// the model considers (cpu_max_tile_side_3d for the CPU backend).
// slice_path: the CUDA backend's slice path takes the tiles it can (slice_path_tiles), at
// slice_path_weight of the cost, and with them the mixed depths (slice_path_depth) from the
// kernel's depth up to the first that covers the whole output depth, and square slices of
// slice_mixed_side where both sides' ranges reach it (priced slice_mixed_side_weight higher;
// not for kernels 129..160 wide, whose power-of-two lower bound is 256: such a slice would
// yield 1..32 valid rows a side against 97..128 on 256).
inline tiling3d choose_tiling3d(long long out_d, long long out_h, long long out_w, int kd, int kh, int kw,
                                int forced = 0, int max_side = max_tile_side_3d, bool slice_path = false,
                                bool slice_mixed_sides = true) {
  auto make = [&](int td, int th, int tw) {
    tiling3d t{td, th, tw, td - kd + 1, th - kh + 1, tw - kw + 1, 0, 0, 0};
    t.tiles_z = (out_d + t.valid_d - 1) / t.valid_d;
    t.tiles_y = (out_h + t.valid_h - 1) / t.valid_h;
    t.tiles_x = (out_w + t.valid_w - 1) / t.valid_w;
    return t;
  };
  auto least = [](int k) { return (int)std::max<long long>(min_tile_side_3d, next_pow2(k)); };
  if (forced > 0) {
    // the slice path's mixed side: a cube of it where the kernel fits (tests, measurements)
    if (slice_path && slice_mixed_sides && forced == slice_mixed_side && std::max({kd, kh, kw}) <= forced)
      return make(forced, forced, forced);
    const int f = (int)next_pow2(forced);
    return make(std::max(f, least(kd)), std::max(f, least(kh)), std::max(f, least(kw)));
  }
  auto most = [max_side](long long out, int k) {
    return (int)std::max<long long>(std::min<long long>(max_side, next_pow2(out + k - 1)), min_tile_side_3d);
  };
  const int ld = least(kd), lh = least(kh), lw = least(kw);
  const int md = std::max(ld, most(out_d, kd)), mh = std::max(lh, most(out_h, kh)), mw = std::max(lw, most(out_w, kw));
  std::vector<int> depths;
  for (int td = ld; td <= md; td *= 2) depths.push_back(td);
  if (slice_path)
    for (int td : fft::mixed_lengths) {
      if (td < kd) continue;
      depths.push_back(td);
      if (td - kd + 1 >= out_d) break;  // mixed_lengths ascend: this one covers the depth
    }
  std::vector<std::pair<int, int>> slices_hw;
  for (int th = lh; th <= mh; th *= 2)
    for (int tw = lw; tw <= mw; tw *= 2) slices_hw.push_back({th, tw});
  const int ms = slice_mixed_side;
  if (slice_path && slice_mixed_sides && std::max(lh, lw) <= ms && ms <= std::min(mh, mw)) slices_hw.push_back({ms, ms});
  tiling3d best{};
  double best_cost = 0;
  for (int td : depths)
    for (const auto& [th, tw] : slices_hw) {
      const tiling3d t = make(td, th, tw);
      if (t.tile_voxels() > (1LL << 24)) continue;  // 256^3: the workspace of one tile stays < 200 MB
      const bool slices = slice_path && slice_path_tiles(t);
      if (!fft::is_pow2(td) && !slices) continue;  // mixed depths: the slice path's alone
      const double weight = !slices ? 1.0 : th == ms ? slice_path_weight * slice_mixed_side_weight : slice_path_weight;
      const double cost = double(t.tiles_per_volume()) * double(t.tile_voxels()) * (std::log2(double(t.tile_voxels())) + 8) * weight;
      if (best.tile_d == 0 || cost < best_cost) {
        best = t;
        best_cost = cost;
      }
    }
  if (best.tile_d == 0) best = make(ld, lh, lw);  // a kernel over 256 on every axis: the smallest cover
  return best;
}

struct tile_map3d {
  long long depth, height, width;  // the input volume
  long long out_d, out_h, out_w;   // the output volume
  int kd, kh, kw, oz, oy, ox;
  int tile_d, tile_h, tile_w, valid_d, valid_h, valid_w;
  long long tiles_y, tiles_x;      // tiles per tile layer
  long long tiles_z;               // tile layers of one unit (the band's, or the whole output's)
  boundary border;
  float constant_value;
  long long z_first = 0, z_end = 0;  // the unit's output slices (z_end <= out_d)
  // The unit's input, per volume: slab_depth slices of height x width. Whole volumes:
  // slab_first 0, slab_depth = depth, the boundary rule applied along D here. Bands
  // (slab_extended): slab slice j is already in_ext's slice slab_first + j (mapped by the
  // boundary rule, or filled with the outside value, on the host); slices past the slab only
  // reach outputs past z_end and read as 0.
  long long slab_first = 0, slab_depth = 0;
  bool slab_extended = false;

  long long tiles_per_volume() const { return tiles_z * tiles_y * tiles_x; }

  struct tile_at {
    long long volume, z0, y0, x0;  // the volume and the tile's first output (relative to z_first)
  };
  HOST_DEVICE GPUCONV_INLINE tile_at locate(long long g) const {
    const long long per_layer = tiles_y * tiles_x, per_volume = tiles_z * per_layer;
    const long long vol = g / per_volume, r = g - vol * per_volume;
    const long long tz = r / per_layer, r2 = r - tz * per_layer;
    const long long ty = r2 / tiles_x;
    return {vol, tz * valid_d, ty * valid_h, (r2 - ty * tiles_x) * valid_w};
  }

  // Value of tile element (u, v, w) of the tile at `at` from the unit's input.
  template <typename in_t>
  HOST_DEVICE GPUCONV_INLINE float gather_at(const in_t* in, const tile_at& at, int u, int v, int w) const {
    const float outside = border == boundary::zero ? 0.f : constant_value;
    const long long p = z_first + at.z0 + u + oz - (kd - 1);
    long long s;
    if (slab_extended) {
      s = p - slab_first;
      if (s >= slab_depth) return 0.f;
    } else {
      s = border_index(p, (int)depth, border);
      if (s < 0) return outside;
    }
    const int r = border_index(at.y0 + v + oy - (kh - 1), (int)height, border);
    const int c = border_index(at.x0 + w + ox - (kw - 1), (int)width, border);
    if (r < 0 || c < 0) return outside;
    return static_cast<float>(in[((at.volume * slab_depth + s) * height + r) * width + c]);
  }
  template <typename in_t>
  HOST_DEVICE GPUCONV_INLINE float gather(const in_t* in, long long g, int u, int v, int w) const {
    return gather_at(in, locate(g), u, v, w);
  }

  // Index in the unit's output (volumes of z_end - z_first slices) written by valid element
  // (a, b, c) of the tile at `at`, or -1 past the edge; the value sits at tile element
  // (a + kd-1, b + kh-1, c + kw-1).
  HOST_DEVICE GPUCONV_INLINE long long output_index_at(const tile_at& at, int a, int b, int c) const {
    const long long z = at.z0 + a, y = at.y0 + b, x = at.x0 + c;
    if (z_first + z >= z_end || y >= out_h || x >= out_w) return -1;
    return ((at.volume * (z_end - z_first) + z) * out_h + y) * out_w + x;
  }
};

}  // namespace gpuconv::conv
