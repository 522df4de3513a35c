// The 3D tiles' slice path (CUDA): the overlap-save tiles of plan3d convolved in three passes,
// two real tiles at a time as the real and imaginary parts of one complex tile (as the 2D
// fused and three-pass paths do), when a tile's slices are squares of 32, 64, 128 or 160 (5 x 32:
// the slice held in shared memory, each line's transform exchanging through its own elements;
// slices3d.cu's mixed-side kernels):
//   A  slice_forward_kernel: one block a slice of a tile pair: the slice's voxels loaded from
//      the volume (the boundary rule on every axis in the loader, narrow voxels widened), its
//      2D FFT in shared memory (columns, then rows), stored to work[pair][u][kx][ky];
//   B  along D (fft/kernels/strided_c2c.cuh): FFT, multiply by the kernel's 3D spectrum
//      (scaled by 1 / tile voxels), inverse FFT, and only the slices from kd - 1 on stored
//      (the others would wrap); tile depths also 3 or 5 times a power of two (48 .. 320);
//   C  slice_inverse_kernel: one block a valid slice of a pair: the inverse 2D FFT in shared
//      memory, the valid outputs of both tiles written (narrow types rounded and saturated).
// Each pass reads and writes the pairs' complex tiles once (C and B's stores only the valid
// slices), against seven passes of the real-to-complex route (fft::real_3d_plan plus a gather
// and a scatter), whose slices of up to 1024 it leaves for larger tiles.
#pragma once
#include <cstdint>
#include <vector>

#include <cuda_runtime.h>

#include "../fft/device/buffer.hpp"
#include "../fft/thread/complex.hpp"
#include "tile_map3d.hpp"

namespace gpuconv::conv {

class slice_tiles3d {
 public:
  // Tiles whose slices this path takes: square slices of 32, 64, 128 or 160 and a depth of 16..256
  // or a mixed length (slice_path_depth).
  static bool supports(const tiling3d& t) { return slice_path_tiles(t); }
  // Device bytes of one pair's complex tile (the work buffer holds a chunk of pairs).
  static long long pair_bytes(const tiling3d& t) { return t.tile_voxels() * 8; }

  // kernel: the effective kernel (flipped for correlation), kd x kh x kw. Throws
  // std::invalid_argument when the tiles are not supported.
  slice_tiles3d(const tiling3d& t, const std::vector<float>& kernel, int kd, int kh, int kw);

  // Tiles [2 first_pair, 2 (first_pair + pairs)) of the `total` tiles of map m (numbered as
  // tile_map3d::locate numbers them, volume after volume), through work (pairs complex tiles).
  // Asynchronous on stream. (Richardson-Lucy's steps are not folded into pass C's store as the
  // separable method's are: measured 3% slower on the H100, docs/notes-3d.md.)
  template <typename T>
  void run(const T* in, T* out, const tile_map3d& m, long long total, long long first_pair, long long pairs,
           fft::complex_t<float>* work, cudaStream_t stream) const;

  // The kernel's spectrum on the tile, [kz][kx][ky], computed on the host in double and
  // scaled by 1 / (tile_d tile_h tile_w): K = sum k(l, i, j) W_D^(kz l) W_T^(ky i + kx j).
  static std::vector<fft::complex_t<float>> spectrum(const tiling3d& t, const std::vector<float>& kernel, int kd,
                                                     int kh, int kw);

 private:
  tiling3d tiles_;
  int kd_;
  unsigned along_d_grid_ = 0;  // the pass along D's grid cap (blocks resident x SMs x 8)
  device_buffer<fft::complex_t<float>> spectrum_, slice_table_, depth_table_;
};

}  // namespace gpuconv::conv
