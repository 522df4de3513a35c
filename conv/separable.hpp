// The separable path of the CUDA backend (separable.cu): a rank-1 kernel k(i, j) = c(i) r(j)
// (method.hpp: factor_rank1) as a row pass and a column pass, kh + kw multiply-adds per output
// instead of kh * kw. Both passes are window passes of direct.hpp:
//   row pass     tmp(q, x) = sum_j r(j) in_ext(q + oy - (kh-1), x + ox - j),  q < out_h + kh - 1
//                (1 x kw taps; the boundary rule applies along y through the rows it reads)
//   column pass  out(y, x) = sum_i c(i) tmp(y + kh - 1 - i, x)               ('valid' along y)
// so that out(y, x) = sum_{i,j} c(i) r(j) in_ext(y + oy - i, x + ox - j). The float
// intermediate goes through global memory (it stays mostly in L2 for a chunk of a few planes):
// 4 bytes written and read per pixel beside the image's read and the output's write; kernels
// up to 32 a side run both passes in one kernel instead, the intermediate in shared memory
// (one read, one write). Larger box kernels (constant factors) run both passes as running sums
// in double (separable.cu), and long factors by FFT where the cost model prices that lower
// (separable_fft.hpp: overlap-save line transforms, the same maps).
#pragma once
#include <array>
#include <memory>
#include <vector>

#include "direct.hpp"
#include "method.hpp"
#include "separable_fft.hpp"

namespace gpuconv::conv {

// The shared tile's short grids (tile_shape_for): blocks take fewer rows of threads while the grid
// then has at most this many blocks a multiprocessor: 1 unless GPUCONV_SEPARABLE_FILL (0..64) says
// otherwise at start-up; 0 turns the rule off. Tests and measurements: force_separable_tile_fill(n)
// sets it (plans made after the call take it), -1 restores the start-up value.
int separable_tile_fill();
void force_separable_tile_fill(int fill);

class separable_tiles {
 public:
  static bool supports(int kh, int kw) { return direct_tiles::supports(1, kw) && direct_tiles::supports(kh, 1); }
  // The sizes the running-sum passes take a box kernel of (larger boxes go through the FMA walks).
  static bool is_box_size(int kh, int kw);
  // The sizes whose passes run in one kernel, the intermediate in shared memory (boxes too:
  // up to 32 taps the tile's 8 B a pixel beat the running sums' 16).
  static bool uses_tile(int kh, int kw);
  // The shared tile's blocks for `planes` planes of out_h x out_w outputs on a GPU of `sms`
  // multiprocessors, as run launches them (tile_shape_for): output rows a block, threads a block
  // and its shared memory (the cost model: past ~113 KB two blocks no longer fit a multiprocessor).
  // planes or sms 0: the shape before the short grids' rule.
  struct tile_geometry {
    int tile_h, threads;
    std::size_t shared_bytes;
  };
  static tile_geometry tile_geometry_for(long long out_h, long long out_w, int kh, int kw, long long planes = 0,
                                         int sms = 0);

  // Whether the two passes run by FFT (line_fft_passes) for a kh x kw factor pair on out_h x
  // out_w outputs, box: every kernel of the bank a box (box_factors): where the cost model
  // prices them below the FMA passes (cuda_separable_ps_per_pixel) or the running sums
  // (cuda_box_ps_per_pixel), or as force_line_fft says. Never for the shared tile's sizes
  // unless forced.
  static bool fft_passes(int kh, int kw, long long out_h, long long out_w, bool box);
  // The two passes by FFT, ps an output (the row pass runs over out_h + kh - 1 rows).
  static double fft_passes_ps_per_pixel(int kh, int kw, long long out_h, long long out_w);
  // Both passes in one kernel (the shared tile, no intermediate) for the bank f on out_h x out_w?
  static bool in_one_kernel(const rank1_factors& f, int count, int kh, int kw, long long out_h, long long out_w);

  // f: the bank's factors, `count` columns of kh and rows of kw one after another; out_h x
  // out_w: the plan's output (the FFT passes' line lengths); sms: the device's multiprocessors (the
  // shared tile's short grids, as the chooser priced them). Throws std::invalid_argument when
  // !supports(kh, kw) or the factors do not match the sizes.
  separable_tiles(const rank1_factors& f, int count, int kh, int kw, long long out_h, long long out_w, int sms);

  // Floats of intermediate one input plane of map m needs.
  static long long intermediate_per_plane(const tile_map& m) { return (m.out_h + m.kh - 1) * m.out_w; }

  // Every kernel of the bank over the planes of map m, `chunk` planes at a time through
  // `intermediate` (chunk * intermediate_per_plane(m) floats). Asynchronous.
  template <typename T>
  void run(const T* in, T* out, const tile_map& m, float* intermediate, long long chunk, cudaStream_t stream) const;

 private:
  bool in_tile() const;
  template <typename T>
  void run_tile(const T* in, T* out, const window_map& m, int k, cudaStream_t stream) const;

  int count_, kh_, kw_;
  long long max_blocks_ = 0;  // the shared tile's short grids: separable_tile_fill() x the device's multiprocessors
  direct_tiles rows_, columns_;
  std::vector<std::array<float, 2>> box_;  // per kernel: the column and row factors of a box, {0, 0} if not
  std::unique_ptr<line_fft_passes> fft_;   // the passes by FFT, where fft_passes() says so
};

}  // namespace gpuconv::conv
