// The inner loops of the host 2D tile FFT (real_2d_tile.hpp), one set per instruction set:
// tile_kernels.cpp is compiled once per ISA (x86-64-v4 = AVX-512, v3 = AVX2 + FMA, the
// baseline) and best_tile_kernels() picks one with cpuid at run time, so one portable
// binary runs the widest vectors the machine has.
//
// Data are split-complex planes (re, im) of `rows` rows of `lanes` floats (lanes a multiple
// of 16): every transform runs down the rows, the same for each lane, so the lanes are the
// vector (fft_t<v, R> with v a vector of 16 floats: 16 columns transformed at once).
#pragma once

namespace gpuconv::fft::host {

struct tile_kernels {
  const char* isa;
  // In-place complex FFT of length n (power of two) down the rows of each lane; scratch
  // planes of the same size. Twiddles: the table of W_{2n}^e (e < 2n) split into re/im.
  // Inverse unnormalised.
  void (*passes)(float* re, float* im, float* scratch_re, float* scratch_im, int n, int lanes, const float* table_re,
                 const float* table_im, bool inverse);
  // Rows k = 0..half of the R2C spectrum from the packed half-length transform z (the even
  // and odd rows as re and im), and back: real_1d_plan's r2c_post and c2r_pre, per lane.
  // table: W_{2 half}^k.
  void (*r2c_post)(const float* z_re, const float* z_im, float* x_re, float* x_im, int half, int lanes,
                   const float* table_re, const float* table_im);
  void (*c2r_pre)(const float* x_re, const float* x_im, float* z_re, float* z_im, int half, int lanes,
                  const float* table_re, const float* table_im);
  // a *= b, complex, over count values (count a multiple of 16)
  void (*multiply)(float* a_re, float* a_im, const float* b_re, const float* b_im, long long count);
};

const tile_kernels& best_tile_kernels();

// Per-ISA sets, defined by tile_kernels.cpp under each GPUCONV_HOST_ISA.
namespace isa_v4 { extern const tile_kernels kernels; }
namespace isa_v3 { extern const tile_kernels kernels; }
namespace isa_base { extern const tile_kernels kernels; }

}  // namespace gpuconv::fft::host
