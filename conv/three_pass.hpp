// The three-pass tile path of the CUDA backend (three_pass.cuh), for kernels too large for
// the fused tile kernel: square tiles of 256, 512 or 1024, two tiles a complex pair, rows ->
// columns with the spectrum multiply -> rows. Holds what it needs, built once: the kernels'
// full T x T spectra (as the fused path's, scaled by 1/T^2, stored [kx][ky]), the twiddle
// table and the work buffer of one chunk of pairs.
#pragma once
#include <cstdint>
#include <vector>

#include <cuda_runtime.h>

#include "../fft/device/buffer.hpp"
#include "../fft/thread/complex.hpp"
#include "tile_map.hpp"

namespace gpuconv::conv {

class three_pass_tiles {
 public:
  static bool supports(int tile) { return tile == 256 || tile == 512 || tile == 1024; }
  // Work memory one pair of tiles takes between the passes.
  static std::size_t pair_bytes(int tile) { return std::size_t(tile) * tile * 8; }
  // Pairs of a chunk: what fits `work_cap` bytes and, when l2_bytes > 0, half of that much
  // L2 (so the work stays in L2 between the passes), at least 1, at most `pairs`.
  static long long chunk_pairs(int tile, long long pairs, std::size_t work_cap, std::size_t l2_bytes);

  // kernels: `count` effective kernels, kh x kw row-major, one after another; chunk: pairs
  // per chunk (chunk_pairs). Throws std::invalid_argument when the tile is not supported or
  // smaller than the kernel.
  three_pass_tiles(int tile, const std::vector<float>& kernels, int count, int kh, int kw, long long chunk);

  // Every tile of map m (tile_h = tile_w = tile; m.kernels = count), kernel by kernel, in
  // chunks of pairs. Asynchronous.
  template <typename in_t, typename out_t>
  void run(const in_t* in, out_t* out, const tile_map& m, cudaStream_t stream);

 private:
  int tile_, count_;
  long long chunk_;
  device_buffer<fft::complex_t<float>> spectrum_, table_, work_;
};

}  // namespace gpuconv::conv
