// The CPU backend's methods and the one chooser that owns their cost model.
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
#include <string>
#include <vector>

#include "tiling.hpp"

namespace gpuconv::conv {

enum class cpu_method { automatic, direct, separable, fft };

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
};

// kernels: the bank's effective kernels (kh x kw each, one after another). A bank is
// separable only when every kernel is rank-1. Throws std::invalid_argument when `forced`
// is separable and a kernel is not rank-1.
cpu_choice choose_cpu_method(const std::vector<float>& kernels, int count, int kh, int kw, long long out_h,
                             long long out_w, cpu_method forced = cpu_method::automatic, int forced_tile = 0);

}  // namespace gpuconv::conv
