// The direct path of the CUDA backend (direct.cu, direct_walks.cuh): out(y, x) = sum k(i, j)
// in_ext(y + oy - i, x + ox - j) term by term, for kernels small enough that kh * kw
// multiply-adds per output cost less than a tile transform. One read and one write of the image: a block loads its output
// tile plus the kernel's halo into shared memory, applying the boundary rule in the loader
// (border_index, as the FFT paths' gather), and each thread sums rows_per_thread x 4 outputs
// in registers. The separable path (separable.hpp) runs the same kernels as a 1 x kw row pass
// and a kh x 1 column pass.
//
// Kernels (direct_walks.cuh; a module per pixel type, direct_run_*.cu), one template, four ways
// to walk the taps:
// - unrolled: square kernels 3..11, the taps passed by value in the launch parameters
//   (constant bank: operands of the FMAs, no loads), every loop unrolled;
// - column: kw = 1, any kh (the separable column pass), taps in shared memory, held in
//   registers and shifted one a row where a shared row serves all of a thread's outputs;
// - row: kh = 1, any kw (the separable row pass), a float4 register window per output row
//   slid 4 columns at a time, 4 taps read per step for all rows;
// - generic: any kh x kw, taps in shared memory reversed along x and padded to a multiple
//   of 4, two float4 reads of a shared row per 4 taps;
// and for uint8 in and out, kernels up to 9 x 9, a fifth walk on the tensor cores
// (direct_mma.cuh: the window in fp16, each tap split into two halves, fp32 sums).
// The host-side geometry (window_shape_for) is a plain function, unit-tested on the CPU.
#pragma once
#include <cstdint>
#include <vector>

#include <cuda_runtime.h>

#include "../fft/device/buffer.hpp"
#include "semantics.hpp"
#include "tile_map.hpp"

namespace gpuconv::conv {

// One window pass over `planes` input planes of height x width: output plane
// p * out_step + out_offset receives out(y, x) = sum_{i < kh, j < kw} k(i, j) in_ext(y + oy - i,
// x + ox - j), y < out_h, x < out_w, in_ext the plane extended by `border`. oy may be negative
// (the separable row pass reads the rows above the output's first).
struct window_map {
  long long height = 0, width = 0, out_h = 0, out_w = 0;
  int oy = 0, ox = 0;
  boundary border = boundary::zero;
  float constant_value = 0.f;
  long long planes = 1;
  int out_step = 1, out_offset = 0;
};

// The window pass of kernel `kernel` of the bank over every tile of map m (the CUDA backend's
// maps: whole planes, or a band of one plane's rows).
inline window_map window_map_of(const tile_map& m, int kernel) {
  return {m.height, m.width, m.out_h, m.out_w, m.oy, m.ox, m.border, m.constant_value,
          m.tiles_per_kernel / m.tiles_per_plane, m.kernels, kernel};
}

// Work per thread: rows_per_thread consecutive output rows x 4 consecutive columns (one
// float4 of shared memory per row of the register window). The direct path's launches take
// fewer rows a thread (4 or 2: window_rows_for) where the problem is too small to fill the GPU.
struct window_policy {
  static constexpr int rows_per_thread = 8;
  static constexpr int columns_per_thread = 4;
  static constexpr int max_threads = 512;
  static constexpr int max_shared_bytes = 200 * 1024;
};

// A block of tx x ty threads computes a tile of (ty * rows) x (tx * 4) outputs; shared memory
// holds the taps (generic and column walks) and the tile's input rows.
struct window_shape {
  int rows = window_policy::rows_per_thread;  // output rows a thread (8, 4 or 2)
  int tx = 0, ty = 0;
  int tile_h = 0, tile_w = 0;  // outputs per block
  int stride = 0;              // floats per shared row: tile_w + round_up(kw, 4) + 4
  int taps_floats = 0;         // kh * round_up(kw, 4)
  long long tiles_y = 0, tiles_x = 0;
  std::size_t shared_bytes = 0;
};

// tx: 32 lanes (128 columns) for outputs wider than 64, 16 or 8 for narrower ones; ty: enough
// rows of threads for the output's height, at most 256 threads (512 when that makes one block
// hold a plane's height), fewer while the shared tile exceeds max_shared_bytes. Throws
// std::invalid_argument when even one row of threads does not fit (direct_tiles::supports).
window_shape window_shape_for(long long out_h, long long out_w, int kh, int kw,
                              int rows = window_policy::rows_per_thread);

// The direct path's rows a thread for `planes` output planes of out_h x out_w on a GPU of `sms`
// multiprocessors: 8 when that grid has at least 512 threads a multiprocessor, else 4 when 4
// does, else 2 (on the H100, 256 x 100^2 and 64 x 256^2 ran as fast at 8 as at 4; 1000 x 28^2
// 1.6x faster at 2). A grid smaller than the GPU runs as long as its slowest block, and a block's
// time is its threads' instruction chains (1000 x 28^2 at 8 rows: one-warp blocks of ~4800
// instructions at ~6 cycles each, 19 us); fewer rows a thread cut the chains and give the
// schedulers more warps.
int window_rows_for(long long out_h, long long out_w, int kh, int kw, long long planes, int sms);
// The separable method's two passes through global memory (separable_tiles: a 1 x kw row pass and
// a kh x 1 column pass, one of the sides past the shared tile's 32) take 4 rows a thread whatever
// the grid, unless force_window_rows says otherwise. H100, session 76, fp32, rank-1 K = 33..63
// (`gpuconv-bench sweep` with GPUCONV_DIRECT_ROWS 0 / 2 / 4 / 8 in one call): 4 rows ran faster
// than window_rows_for's 8 / 4 / 2 in all 37 shapes and sizes timed - 1 x 1080 x 1920 by 15-22%
// (0.0376 -> 0.0292 ms at K = 33), 3 x 1080 x 1920 by 9-12%, 1 x 2048^2, 1 x 4096^2, 3 x 3000 x 4000
// and 64 x 256^2 by 3-8%, 1 x 1024^2 and 16 x 256^2 (whose column pass the rule gives 2) by 0.4-14%,
// 1024 x 64^2 by 0.5-5.5% (the smallest within the timing's noise); tiny planes (28^2) not timed.
// A pass's thread does kw (or kh) multiply-adds an output, not kh x kw, so the grid wants more
// threads than the direct method's rule gives it before its chains, not its blocks, set the time.
// The passes between pixel types (uint8 / uint16 rows into the float intermediate, its columns
// back out) take the same 4: their row and column walks are compiled at 4 and 8 rows (8 where
// forced to 8 or 2), the generic walk between types at 8 only.
inline constexpr int separable_pass_rows = 4;
int separable_pass_rows_for();
// Tests and measurements: makes window_rows_for and separable_pass_rows_for answer `rows` (8, 4
// or 2; 0 restores their rules).
// Starts as GPUCONV_DIRECT_ROWS. Plans made after the call take it (and so do the launches of
// plans already made on the direct path: they shape each launch by it).
void force_window_rows(int rows);

// The tensor-core walk for uint8 in and out (direct_mma.cuh): kernels up to 9 x 9 whose window
// columns fit a 16-wide operand (kw + ((ox - (kw-1)) mod 4) <= 9), on GPUs of compute capability
// 8.0 or later. mma_walk_applies: where direct_tiles::run takes it - outputs at least
// mma_walk_min_width wide (one 128-column tile; narrower ones would leave most of it idle) and
// kernels of at least mma_walk_min_taps taps. H200, 4096^2 uint8 'same', back to back
// (docs/benchmarks.md, session 62): 3 x 3 a tie with the SIMT walk (0.029 ms either way); 5 x 5
// 0.034 ms against 0.037-0.038, 7 x 7 0.039 against 0.051-0.052, 9 x 9 0.044 against 0.074. After
// session 63's window loads by lane, 3 x 3 moved to the walk too: H100, session 81, 4096^2 uint8,
// two runs each, 0.024 ms back to back against the SIMT walk's 0.027-0.028 (690 against 608-616
// Gpix/s; timed alone 560-577 against 524-530); so kernels of mma_walk_min_square_taps taps or more
// with both sides >= 3 take it too (1 x 9, 9 x 1, 2 x 5 and the like were not timed on either
// walk, and keep the SIMT walk below 16 taps). Mode 0: never, 1: that rule, 2: wherever it fits
// (tests, measurements); starts as GPUCONV_DIRECT_MMA (default 1).
constexpr long long mma_walk_min_width = 128;
constexpr long long mma_walk_min_taps = 16;
constexpr long long mma_walk_min_square_taps = 9;
bool mma_walk_fits(int kh, int kw, int ox);
bool mma_walk_applies(int kh, int kw, const window_map& m);
void force_mma_walk(int mode);
// The tensor-core walk's tap scale: the power of two s that puts the largest |tap| times s in
// [2^10, 2^11), clamped to [2^-5, 2^14] (the window holds pixels times 1 / s, normal halves
// exactly); 1 for a kernel of zeros; 0 where the walk cannot take the kernel (a tap of 2^20 or
// more would pass the largest half, 65504, scaled by 2^-5; or a tap not finite). Clamped at
// 2^14, each tap's split into two halves is off by at most 2^-25 / 2^14 = 2^-39 (a subnormal
// low half) or 2^-22 of the tap: over 81 taps of pixels up to 255 that is below 2^-25 levels.
float mma_walk_scale(const float* taps, int n);
constexpr float mma_walk_min_scale = 1.f / 32, mma_walk_max_scale = 16384.f;

// A row of kw taps padded to whole float4s (the generic and row walks' padded taps).
constexpr int round4(int v) { return (v + 3) / 4 * 4; }

// The kernel sizes the unrolled walk is compiled for (square, 3..11). The even sides joined in
// session 71: on the generic walk 6 and 8 had run 1.3-1.6x their odd neighbours' time (H100, fp32,
// gpuconv-bench sweep: 4096^2 K = 6 0.094 ms against K = 7's 0.067, K = 8 0.112 against K = 9's
// 0.082), so that 4096^2 K = 6 took the fused tiles (0.105).
constexpr bool direct_unrolled(int kh, int kw) { return kh == kw && kh >= 3 && kh <= 11; }

// `count` kernels of kh x kw as the shared-memory walks read them: each kh x round_up(kw, 4),
// reversed along x (element u of row i is k(i, kw - 1 - u)), zero padded.
std::vector<float> padded_taps(const float* kernels, int count, int kh, int kw);

class direct_tiles {
 public:
  // Kernels whose shared tile fits one row of threads: any kh, kw up to 255 when the other
  // side is small, ~100 x 100 at most square.
  static bool supports(int kh, int kw);

  // kernels: `count` effective kernels (flipped for correlation), kh x kw row-major, one after
  // another. Throws std::invalid_argument when !supports(kh, kw).
  direct_tiles(const std::vector<float>& kernels, int count, int kh, int kw);
  // A separable pass's launches (separable_tiles): rows a thread by separable_pass_rows_for, not
  // window_rows_for.
  void as_separable_pass() { separable_pass_ = true; }

  // Every output plane of map m for kernel `kernel` of the bank (one launch). Asynchronous.
  template <typename in_t, typename out_t>
  void run(const in_t* in, out_t* out, const window_map& m, int kernel, cudaStream_t stream) const;
  // Every kernel of the bank over the planes of a backend map.
  template <typename in_t, typename out_t>
  void run(const in_t* in, out_t* out, const tile_map& m, cudaStream_t stream) const {
    for (int k = 0; k < count_; ++k) run(in, out, window_map_of(m, k), k, stream);
  }

  int kh() const { return kh_; }
  int kw() const { return kw_; }
  // Whether the tensor-core walk can run here (compute capability 8.0 or later, and the mma
  // kernel compiled for such a target: its ptxVersion).
  bool tensor_cores() const { return tensor_cores_; }
  // Kernel k's taps as the column, row and generic walks read them: kh x round_up(kw, 4),
  // reversed along x, zero padded (device memory).
  const float* padded(int k) const;

 private:
  int count_, kh_, kw_;
  void run_mma(const std::uint8_t* in, std::uint8_t* out, const window_map& m, int kernel, cudaStream_t stream) const;

  int sms_ = 0;                   // the device's multiprocessors (window_rows_for)
  bool separable_pass_ = false;   // as_separable_pass()
  bool tensor_cores_ = false;     // compute capability 8.0 or later, the mma walk compiled for it
  std::vector<float> scales_;     // per kernel: mma_walk_scale
  std::vector<float> host_;       // the kernels as given (the unrolled walk's launch parameters)
  device_buffer<float> padded_;   // per kernel kh x round_up(kw, 4), reversed along x, zero padded
  device_buffer<std::uint32_t> mma_tables_;  // where tensor_cores_: per kernel and shift 0..3, the
                                             // tensor-core walk's tap table (mma_tap_table)
};

}  // namespace gpuconv::conv
