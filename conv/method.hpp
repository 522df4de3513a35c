// The backends' methods and the one chooser per backend that owns their cost model: the
// CPU's below, the CUDA backend's (choose_cuda_method) at the end of this file.
//
// CPU backend:
//
//   direct     out(y, x) = sum k(i, j) in_ext(...) term by term, vectorised along x
//              (direct_cpu.cpp): kh * kw multiply-adds per output, no transform.
//   separable  a rank-1 kernel k(i, j) = c(i) r(j) as a row pass and a column pass
//              (separable_cpu.cpp): kh + kw multiply-adds per output.
//   fft        overlap-save tiles through the host FFT (cpu_backend.cpp): cost per output
//              grows with log2 of the tile and with the tile's padding, not with K.
//
// The chooser prices each method in nanoseconds per output pixel, from gpuconv-bench-cpu
// --method on the 2-core AVX-512 machine (docs/benchmarks.md); only the ratios matter. A forced method (plan_options::cpu) is checked here: separable needs a rank-1 kernel.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "semantics.hpp"
#include "tiling.hpp"

namespace gpuconv::conv {

enum class cpu_method { automatic, direct, separable, fft };

// A pixel type as a value: plan_options::pixels (the type autotune times), and the element type
// of an execute call. The CUDA model's prices below are fp32's whatever the type. H100, sessions
// 77-78: on uint8 the fused tiles and three-pass saved about the 6 B a pixel their input and output
// do not move (~2 ps an output on 2 MP and larger planes, none on 1 MP and below); since session
// 78's loaders the FMA passes and the shared tile run at 0.86-1.06x their fp32 times too, so bytes
// alone move no crossover. Not priced: the FFT passes on uint8 ran 1.03-1.21x fp32's
// (docs/notes-conv.md, session 78).
enum class pixel { f32, u8, u16 };
inline std::size_t pixel_bytes(pixel p) { return p == pixel::f32 ? 4 : p == pixel::u8 ? 1 : 2; }

inline const char* to_string(cuda_path p) {
  switch (p) {
    case cuda_path::fused: return "fused";
    case cuda_path::three_pass: return "three_pass";
    case cuda_path::multipass: return "multipass";
    case cuda_path::direct: return "direct";
    case cuda_path::separable: return "separable";
    default: return "automatic";
  }
}

inline const char* to_string(cpu_method m) {
  switch (m) {
    case cpu_method::direct: return "direct";
    case cpu_method::separable: return "separable";
    case cpu_method::fft: return "fft";
    default: return "automatic";
  }
}

// A rank-1 factorisation of a kh x kw kernel: k(i, j) ~= column[i] * row[j] to within
// `tolerance` times max |k| everywhere; empty vectors when there is none.
struct rank1_factors {
  std::vector<float> column, row;
  bool found() const { return !column.empty(); }
};
rank1_factors factor_rank1(const float* k, int kh, int kw, double tolerance = 1e-6);

// A rank-1 factorisation of a kd x kh x kw kernel (a volume's PSF): k(l, i, j) ~= depth[l] *
// column[i] * row[j] to within `tolerance` times max |k| everywhere (a product of 1D kernels,
// such as gaussian3d); empty vectors when there is none. plan3d's separable method.
struct rank1_3d_factors {
  std::vector<float> depth, column, row;
  bool found() const { return !depth.empty(); }
};
rank1_3d_factors factor_rank1_3d(const float* k, int kd, int kh, int kw, double tolerance = 1e-6);

// The model's price of each method, ns per output pixel.
double direct_ns_per_pixel(int kh, int kw);
double separable_ns_per_pixel(int kh, int kw);
double fft_ns_per_pixel(const tiling& t);

// The FFT method's tiles: square powers of two priced by fft_ns_per_pixel, which charges
// tiles beyond the core's L2 (a 256^2 tile's spectrum and scratch take ~0.8 MB) for the
// misses they make; forced > 0 asks for that square tile (rounded up to cover the kernel).
tiling choose_cpu_tiling(long long out_h, long long out_w, int kh, int kw, int forced = 0);

struct cpu_choice {
  cpu_method method = cpu_method::fft;
  rank1_factors factors;  // for separable
  tiling tiles;           // for fft
  double ns_per_pixel = 0;  // the model's price of `method` (2 threads, see above)
};

// kernels: the bank's effective kernels (kh x kw each, one after another). A bank is
// separable only when every kernel is rank-1. Throws std::invalid_argument when `forced`
// is separable and a kernel is not rank-1.
cpu_choice choose_cpu_method(const std::vector<float>& kernels, int count, int kh, int kw, long long out_h,
                             long long out_w, cpu_method forced = cpu_method::automatic, int forced_tile = 0);

// CUDA backend (cuda_path in tiling.hpp): direct (direct.hpp), separable (separable.hpp) and
// the FFT paths (fused, three-pass, multi-pass) priced by choose_cuda_tiling. Prices in ps per
// output pixel on the H100. The FFT paths' constants were measured (tiling.hpp); direct's
// unrolled walk and separable's were fitted to gpuconv-bench sweep (docs/benchmarks.md,
// docs/notes-conv.md):
//   direct     on the unrolled walk (square 3..11, t = kh * kw) 3.33 + 2.22e-4 t^2
//              (fitted after session 21's interior loader and stores to 4096^2, K = 1..11:
//              3.3 ps at K = 3, 3.9 at 7, 4.8 at 9, 6.6 at 11, where the walk's registers grow); else
//              2.9 + 0.045 * taps, taps = 1.15 kh on the column walk (kw = 1), 1.1
//              round_up(kw, 4) on the row walk (kh = 1), 1.4 kh * round_up(kw, 4) on the
//              generic one (0.045: session 13's instruction-count estimate, ~75% of the FMA
//              rate, not refit); the byte floor is 2.7 ps (8 B at ~2990 GB/s);
//   separable  with t = 1.1 round_up(kw, 4) (rows + kh - 1) / rows + 1.15 kh: two passes
//              through a float intermediate (16 B a pixel, rows = out_h) 2.85 + 0.0773 t (session
//              78: 0.92x the earlier fit 3.1 + 0.084 t); up to
//              32 taps a side both passes in one tile (8 B a pixel, the row pass redone over
//              each tile's halo rows, rows = tile_h) 4.0 + 0.040 t, x 1.9 where a block's
//              tile takes more than 113 KB of shared memory (one block a multiprocessor, not two);
// both times the shape's waste (the blocks' output tiles over the output: small images leave
// threads idle), and the small planes' factors below. The chooser does not take direct beyond
// max_direct_taps (autotune: beyond max_cuda_direct_taps, float sums' error).
double cuda_direct_ps_per_pixel(int kh, int kw);
// Small planes, relative to the fused tiles' prices (H100, session 70: the sweep's forced methods
// on 1000 x 28^2, 1024 x 64^2, 64 x 256^2 and 256 x 100^2, zero and reflect101):
// - direct on planes of at most 64 columns (blocks 16 or 8 threads wide, two or four rows to a
//   warp): 1.2x (1024 x 64^2 ran 1.99x its price at K = 9, where 64 x 256^2 ran 1.54x and
//   separable 1.48-1.62x on both; rank-1 K = 9 chose direct at 0.037-0.040 ms against
//   separable's 0.032-0.033);
// - the separable method's FMA passes (tile or two passes) on planes of at most 32 x 32 (one warp
//   a plane: 8 x 4 threads of 8 x 4 outputs, latency-bound): 3.4x (1000 x 28^2 ran 4.2-6.3x its
//   price where the fused tiles ran 1.2-1.3x theirs; rank-1 K = 23..33 chose separable at
//   0.030-0.054 ms against fused 64-tiles' 0.028-0.029).
inline constexpr double direct_narrow_plane_factor = 1.2;
inline constexpr double separable_tiny_plane_factor = 3.4;
inline double direct_plane_factor(long long out_w) { return out_w <= 64 ? direct_narrow_plane_factor : 1.0; }
inline double separable_plane_factor(long long out_h, long long out_w) {
  return out_h <= 32 && out_w <= 32 ? separable_tiny_plane_factor : 1.0;
}
// Direct sums of more than this many float products lose more to rounding than the FFT's
// log-depth error (method.cpp); the CPU's chooser does not pick direct beyond it unless forced.
inline constexpr long long max_direct_taps = 128;
// Autotune's limit (and the CUDA chooser's where the boundary rule read the image, sessions 67-68,
// before the fused tiles' row tables): up to 15 x 15 (method.cpp: a float sum's relative L2 error
// grows as the square root of its taps, 2-4e-7 at 169-256 taps against the bound's 1e-6, which
// the [gpu] test "GPU direct method's float sums ..." measures; past 225 taps no shape of the
// H100's sweeps ran direct fastest).
inline constexpr long long max_cuda_direct_taps = 225;
// The shared tile where the passes share one (separable_tiles::uses_tile: its block's rows, threads
// and shared bytes from separable_tiles::tile_geometry_for, for `planes` input planes on a GPU of
// `sms` multiprocessors; 0: the shape before the short grids' rule), else the two passes through
// global memory (the row pass over out_h + kh - 1 rows; narrow outputs cost more).
double cuda_separable_ps_per_pixel(int kh, int kw, long long out_h, long long out_w, long long planes = 0, int sms = 0);
// box kernels (every factor of the column equal, and of the row: separable_tiles::is_box_size)
// run as running sums: the 16 B a pixel of the two passes, ~7.5 ps, whatever K.
double cuda_box_ps_per_pixel(int kh, long long out_h);
// Every kernel of the bank a box (constant column and row factors)?
bool box_factors(const rank1_factors& f, int count, int kh, int kw);

// The tiles a direct (or separable) plan's blocks cover: valid_h x valid_w outputs per block,
// tile_h x tile_w the extended input they read (not powers of two); `rows` output rows a thread
// (window_rows_for: 8, 4 or 2).
tiling direct_tiling(long long out_h, long long out_w, int kh, int kw, int rows = 8);

struct cuda_choice {
  cuda_path path = cuda_path::multipass;  // never automatic
  tiling tiles;
  rank1_factors factors;                  // for separable
  double cost_ps = 0;                     // the model's time for the whole problem
};

// kernels: the bank's effective kernels; planes: input planes (the FFT paths see planes x count
// output planes); forced: plan_options::path (automatic: the cheapest by the model); forced_tile:
// plan_options::tile (FFT paths only: a forced tile leaves direct and separable out of the
// automatic choice); by_rule: the boundary reads the image past its edges (choose_cuda_tiling;
// false for zero and constant). Throws std::invalid_argument when a forced method cannot run the
// kernel: separable and a kernel of the bank is not rank-1, direct or separable beyond their
// shared tile, fused or three-pass beyond their tiles.
cuda_choice choose_cuda_method(const std::vector<float>& kernels, int count, int kh, int kw, long long out_h,
                               long long out_w, long long planes, cuda_path forced = cuda_path::automatic,
                               int forced_tile = 0, int sms = 132, bool by_rule = true);
// choose_cuda_method's by_rule for a boundary: every rule but zero and constant reads the image
// past its edges.
constexpr bool boundary_reads_image(boundary b) { return b != boundary::zero && b != boundary::constant; }

}  // namespace gpuconv::conv
