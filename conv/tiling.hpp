// Overlap-save tiling of a convolution onto power-of-two FFT tiles.
//
// With (oy, ox) the geometry offsets, out(y,x) = sum_{i,j} k(i,j) in_ext(y+oy-i, x+ox-j).
// A tile of th x tw extended-input pixels starting at output (y0, x0) holds
//   tile(u, v) = in_ext(y0 + u + oy - (kh-1), x0 + v + ox - (kw-1)).
// Its circular convolution with the kernel zero-padded to th x tw equals the linear one
// wherever no index wraps, i.e. for u >= kh-1 and v >= kw-1:
//   out(y0 + u - (kh-1), x0 + v - (kw-1)) = (tile (*) k)(u, v),
// so each tile yields (th-kh+1) x (tw-kw+1) outputs. Tiles are chosen per kernel size by a
// cost model: the padded pixels processed, weighted by the log of the tile's FFT size.
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>

#include "../fft/thread/config.hpp"

namespace gpuconv::conv {

struct tiling {
  int tile_h = 0, tile_w = 0;    // FFT tile, powers of two (the fused path: also 80)
  int valid_h = 0, valid_w = 0;  // outputs per tile: tile - kernel + 1
  long long tiles_y = 0, tiles_x = 0;
  long long tiles_per_plane() const { return tiles_y * tiles_x; }
};

// Smallest power of two >= v (v >= 1).
constexpr long long next_pow2(long long v) {
  long long p = 1;
  while (p < v) p <<= 1;
  return p;
}

// Picks tile_h x tile_w in [min_tile, max_tile] for an out_h x out_w output and a kh x kw
// kernel; forced > 0 asks for that square tile (rounded up to cover the kernel).
tiling choose_tiling(long long out_h, long long out_w, int kh, int kw, int min_tile, int max_tile, int forced = 0);
// Square tiles of side `tile` (any side that holds the kernel: the fused path's 80 too).
// Throws std::invalid_argument when the kernel does not fit.
tiling square_tiling(long long out_h, long long out_w, int kh, int kw, int tile);

// The CUDA backend's methods. FFT paths: the single-pass fused tile kernel (tiles of 32, 64, 80
// or 128, one read and one write of the image), the three-pass tile path (tiles of 256, 512 or
// 1024: rows, columns with the spectrum multiply, rows; the tile spectra go through global
// memory between the passes) or the multi-pass pipeline (any tile up to 4096, seven passes).
// No transform: direct (direct.hpp: kh * kw multiply-adds per output from a shared tile, one
// read and one write) and separable (separable.hpp: rank-1 kernels as a row pass and a column
// pass). automatic: the chooser in method.hpp (choose_cuda_method) decides; the FFT paths'
// tiles and prices are the model below.
enum class cuda_path { automatic, fused, three_pass, multipass, direct, separable };

// The CUDA backend's choice, by the time per padded pixel each path was measured at on the
// H100 (gpuconv-bench conv, docs/notes-conv.md):
// - fused 32/64/128-tiles: 3.9/4.5/6.5 ps (3.7-4.3, 3.9-5.3, 4.8-6.8 measured), scaled up
//   by the busiest SM's share of the tile pairs over the average (ceil(pairs / SMs) over
//   pairs / SMs), which matters for small batches;
// - three-pass 256/512/1024-tiles: 9.1/11.7/17 ps times the valid fraction of a tile's rows
//   (8.6 and 7.4 ps measured at K = 31 and 63 on 256-tiles, 10.1 and 9.6 at K = 63 and 127
//   on 512-tiles, 15.7 at K = 127 on 1024-tiles);
// - the multi-pass pipeline: ~1.4 ps x (8 + log2 of the tile's pixels).
// Choices within ~10% of each other can go either way; plan_options::autotune measures
// instead.
struct cuda_tiling {
  tiling tiles;
  cuda_path path = cuda_path::multipass;  // never automatic
  double cost_ps = 0;                     // the model's time for the whole problem, ps
};
// Along one axis: the share of the pixels that `tiles` tiles of `side` (each `valid` further on)
// cover which lie within `extent` (1 when the tiles end inside it). Small images on large tiles
// have most of theirs outside: the three-pass and fused prices.
inline double covered_share(long long tiles, long long valid, long long side, long long extent) {
  const double covered = double(tiles - 1) * double(valid) + double(side);
  return extent < covered ? double(extent) / covered : 1.0;
}
// The share of a tiling's input that lies past an out_h x out_w output (both axes).
inline double outside_share(const tiling& c, long long out_h, long long out_w) {
  return 1.0 - covered_share(c.tiles_y, c.valid_h, c.tile_h, out_h) *
                   covered_share(c.tiles_x, c.valid_w, c.tile_w, out_w);
}
// The fused path's tile sides, ascending: powers of two and the mixed side 80 = 5 x 16
// (fused_mixed.cuh), whose one tile holds a 64^2 image's outputs with kernels up to 17 x 17.
constexpr int fused_tile_sides[] = {32, 64, 80, 128};
// Whether the chooser and plan_options::tile may take the mixed side: on unless switched off
// (GPUCONV_FUSED_80=0 at start-up, or allow_mixed_fused_tiles(false)); off, a forced tile of 65..80
// is rounded up to 128 and the chooser keeps to the powers of two. fused_tiles takes 80 whatever
// this says.
void allow_mixed_fused_tiles(bool allowed);
bool mixed_fused_tiles_allowed();
// A fused tile side the chooser may take now.
inline bool fused_side_in_use(int side) { return fft::is_pow2(side) || mixed_fused_tiles_allowed(); }
// A fused tile side's price (choose_cuda_tiling): per_pixel ps a padded pixel, times 1 + outside
// x the share of the tiles' input past the image (outside_by_rule where a boundary rule reads the
// image for it, outside_zero for zero and constant boundaries), plus per_output ps for every
// output (its 8 B through DRAM at ~2.7 TB/s, less where the tiles' work hides it).
// The outside term is at most outside_cap (1 + outside x share <= 1 + outside_cap).
struct fused_price {
  double per_pixel, outside_by_rule, outside_zero, per_output;
  double outside_cap = std::numeric_limits<double>::infinity();
  constexpr double outside(bool by_rule) const { return by_rule ? outside_by_rule : outside_zero; }
  constexpr double outside_term(bool by_rule, double share) const {
    const double term = outside(by_rule) * share;
    return term < outside_cap ? term : outside_cap;
  }
};
// 32: 3.9 ps; 80: 5.6-7.5 ps measured on the H100 in session 69 (1024 x 64^2, 64 x 256^2, 256 x
// 100^2 and 1000 x 28^2 at K = 9..23, zero and reflect101 boundaries; 32 and 64 in the same run 3.8
// and 4.3 on 1024 x 64^2), both fitted without the output term and with the input past the image
// priced only where the rule reads it; 64: session 72's refit, 128: session 70's fit (below).
constexpr fused_price fused_tile_price(int tile) {
  return tile <= 32   ? fused_price{3.9, 0.25, 0.0, 0.0}
         : tile <= 64 ? fused_price{3.5, 0.5, 0.5, 1.0}
         : tile <= 80 ? fused_price{7.0, 0.25, 0.0, 0.0}
                      : fused_price{3.75, 1.5, 1.5, 3.0, 0.25};
}
// The 64-tiles' terms (H100, session 72, replayed over sessions 70-71's measured sweeps: 436
// cases on 4096^2, 3 x 3000 x 4000, 64 x 256^2, 1024 x 64^2, 256 x 100^2 and 1000 x 28^2, K = 1..255,
// zero and reflect101, with forced 64 / 80 / 128 tiles): 4.5 ps a padded pixel alone grew 58% from
// K = 15 to 25 on 4096^2 where the time grew 39% (0.123 -> 0.171 ms), so the chooser took the
// 128-tiles one size early (4096^2 K = 21: 0.155-0.157 ms against the 64-tiles' 0.148; 3 x 3000 x
// 4000 K = 19: 0.290-0.293 against 0.277). With 3.5 + 1.0 an output, 4096^2's 64-tiles run 1.00-1.06x
// their price at K = 15..21 and 3 x 3000 x 4000's 0.95-1.01x; the outside factor (0.5, both
// boundaries) keeps the small images' choices: four of the 436 change, each to the faster method.
// The 128-tiles' terms (H100, session 70, fitted to the sweep's fused times on 4096^2 and 3 x 3000
// x 4000 at K = 23..101, then on 64 x 256^2, 1024 x 64^2 and 1000 x 28^2 at K = 17..101, both
// boundaries): a price a padded pixel alone (6.5) followed the tiles' count, 2.6x from K = 23 to 63
// on 4096^2, where the time grew 1.9x: 4096^2 and 3 x 3000 x 4000 ran 0.56-0.94x it and chose
// three-pass at K = 23..32 (1.13-1.26x the fused time). Now within 0.92-1.10 there, 0.83-1.11 on
// the small shapes, where 256 x 100^2 (one 128-tile an image, one pair a multiprocessor) runs
// 1.3-1.6x. The fit's 3.65 ps a padded pixel is taken as 3.75: at 3.65, 4096^2 K = 19 moved to the
// 128-tiles, 0.154-0.156 ms against the 64-tiles' 0.140 (3 x 3000 x 4000 K = 19 keeps the
// 128-tiles: 0.287-0.289 against 0.277).
// The 128-tiles' outside term is capped at 0.25 (session 83): priced at 1.5 x the share, small
// images on them (most of the input past the image) ran 0.44-0.95x their price, large ones
// 0.92-1.24x (medians by shape; H200 forced-tile sweeps of session 74: 64 x 256^2, 1024 x 64^2,
// 256 x 100^2, 1000 x 28^2, 32 x 128^2, 16 x 256^2 at K = 13..64 against 1024^2 .. 3 x 1080 x
// 1920); capped, the small ones run 0.85-1.23x (all rows: 1.02 reflect101, 0.91 zero) and the large
// ones 1.00-1.24x (8 x 512^2 0.92-0.95 -> 1.00-1.02, the others' shares under 1/6: unchanged).
// Replayed over every H100 sweep of sessions 75-82 (4436 rows): 4194 within 10% of the fastest
// against 4182, no sweep worse (session 81's default sweep 236 of 236: 1024 x 64^2
// rank-1 K = 63 / 64 go to the fused 128-tiles, 1.24x -> within 10%); over the H200 forced-tile
// sweeps with each row's fused time at the tile the model picks (scripts/replay-tiles.py): 922 of
// 1035 either way, the rows whose tile moves from 64 or 80 to 128 (64 x 256^2 K = 29, 256 x 100^2
// K = 41 / 45, 8 x 512^2 K = 37) 1.06-1.14x -> 1.00x, and 1000 x 28^2 rank-1 K = 57..64 moving from
// the separable passes to the 128-tiles at 1.10-1.21x (the separable price's error there). Caps of
// 0.2-0.25 replay alike; 0.18-0.19 send 1080 x 1920 K = 63 (share 0.14) to the fused path at 1.15x.
// A grid of `pairs` blocks over `sms` multiprocessors: the busiest one's pairs over the average
// (>= 1), what the fused and three-pass prices charge for a short grid's uneven end.
inline double pair_share(long long pairs, int sms) {
  const double per_sm = double(pairs) / double(sms > 1 ? sms : 1);
  return std::ceil(per_sm) / per_sm;
}
// three-pass: pass C transforms only the rows that hold outputs and pass B stores only those,
// but their share is small: on the H100 a padded pixel costs about the same whatever the tile's
// valid fraction (tile - kh + 1) / tile (1024 x 64^2 on 256-tiles: 8.5-9.3 ps from K = 15 to
// 191; 64 x 256^2 on 512-tiles 12.0-12.2 at 0.50-0.63; 4096^2 7.6 / 9.5 / 14.1 at ~0.75), so the
// fraction only tips the price by a tenth. (Pricing it in full sent small images with long
// kernels to the three-pass tiles at 1.2-2.1x the separable passes' time.)
constexpr double three_pass_ps_per_pixel(int tile, int kh) {
  return (tile <= 256 ? 7.8 : tile <= 512 ? 9.7 : 14.5) * (0.9 + 0.1 * double(tile - kh + 1) / tile);
}
double multipass_ps_per_pixel(const tiling& t);
// path: automatic, or the one path to use (plan_options::path); forced > 0 asks for that
// square tile (rounded up to cover the kernel). Throws std::invalid_argument when a forced
// fused or three-pass path cannot hold the kernel.
// planes: output planes (input planes x kernels of a bank); sms: the device's multiprocessors
// (for the wave count).
// by_rule: the boundary rule reads the image for pixels past its edges (replicate, reflect,
// reflect101, wrap), as against a constant (zero, constant): the fused tiles' price is higher there.
cuda_tiling choose_cuda_tiling(long long out_h, long long out_w, long long planes, int kh, int kw, cuda_path path,
                               int forced = 0, int sms = 132, bool by_rule = true);

}  // namespace gpuconv::conv
