// The fused tile path of the CUDA backend (fused_tile.cuh): one kernel launch reads the
// image once and writes the output once. Holds what the kernel needs, built once: the
// kernel's full T x T spectrum (transposed, scaled by 1/T^2) and the twiddle table.
#pragma once
#include <cstdint>
#include <vector>

#include <cuda_runtime.h>

#include "../fft/device/buffer.hpp"
#include "../fft/thread/complex.hpp"
#include "tile_map.hpp"
#include "tiling.hpp"

namespace gpuconv::conv {

// A kh x kw kernel's unscaled 2D spectrum on a T x T tile in double, [kx][ky]: K[kx][ky] =
// sum_{i,j} k(i, j) W_T^(ky*i + kx*j), by two passes of a T-point forward transform
// (O(T^2 log T), not O(T^2 K): a 511-wide kernel on a 1024-tile takes 0.02 s instead of 1.3 s):
// rows, A[i][kx] = sum_j k(i, j) W^(kx*j); then columns, K[kx][ky] = sum_i W^(ky*i) A[i][kx],
// held as B[kx][i] = A[i][kx] (zero for i >= kh) so that both passes run along rows.
// forward(p, rows): `rows` consecutive T-point rows at p, transformed in place (natural order).
// fused_tiles::spectrum_double (powers of two) and the 3D slice path's mixed sides use it.
template <typename Forward>
std::vector<fft::complex_t<double>> spectrum_rows_then_columns(int T, const float* kernel, int kh, int kw,
                                                               Forward&& forward) {
  std::vector<fft::complex_t<double>> row(T), b(std::size_t(T) * T, {0, 0});
  for (int i = 0; i < kh; ++i) {
    for (int j = 0; j < T; ++j) row[j] = {j < kw ? double(kernel[std::size_t(i) * kw + j]) : 0.0, 0.0};
    forward(row.data(), 1);
    for (int kx = 0; kx < T; ++kx) b[std::size_t(kx) * T + i] = row[kx];
  }
  forward(b.data(), T);
  return b;
}

class fused_tiles {
 public:
  static constexpr int min_tile = 32;
  static constexpr int max_tile = 128;
  // the mixed side (fused_mixed.cuh: 5 x 16), between the power-of-two ones
  static constexpr int mixed_tile = 80;
  static bool supports(int tile) {
    for (const int t : fused_tile_sides)
      if (t == tile) return true;
    return false;
  }

  // kernels: `count` effective kernels (already flipped for correlation), kh x kw row-major,
  // one after another. Throws std::invalid_argument when tile is not supported or smaller
  // than the kernel.
  fused_tiles(int tile, const std::vector<float>& kernels, int count, int kh, int kw);

  // One launch over every tile of map m (tile_h = tile_w = tile; m.kernels = count).
  // Asynchronous.
  template <typename in_t, typename out_t>
  void run(const in_t* in, out_t* out, const tile_map& m, cudaStream_t stream) const;

  // The spectrum the kernel multiplies by, computed on the host in double and rounded once:
  // K[kx][ky] = sum_{i,j} k(i, j) W_T^(ky*i + kx*j) / T^2, W_T = exp(-2 pi i / T).
  static std::vector<fft::complex_t<float>> spectrum(int tile, const float* kernel, int kh, int kw);
  // The same in double, unscaled (sum_{i,j} k(i, j) W_T^(ky*i + kx*j)), [kx][ky]
  // (spectrum_rows_then_columns with the host's double FFT; on a mixed side, one of
  // fft::mixed_lengths, with the mixed-radix steps the kernels run, in double). The 3D slice
  // path's slices use it too.
  static std::vector<fft::complex_t<double>> spectrum_double(int tile, const float* kernel, int kh, int kw);
  // Every kernel's spectrum(), one after another, on the device (the fused and three-pass
  // paths' multiplier).
  static device_buffer<fft::complex_t<float>> device_spectra(int tile, const std::vector<float>& kernels, int count,
                                                            int kh, int kw);
 private:
  int tile_, count_;
  long long max_grid_ = 0x7fffffffLL;  // one block per tile pair
  device_buffer<fft::complex_t<float>> spectrum_, table_;
};

}  // namespace gpuconv::conv
