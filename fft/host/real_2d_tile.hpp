// A real 2D FFT of th x tw tiles on the CPU, vectorised across columns (the CPU backend's
// FFT method). Layouts, all split-complex (re and im planes):
//   input/output  the tile as two planes of th/2 x tw: z_re row u' = tile row 2u', z_im row
//                 u' = tile row 2u' + 1 (a real FFT down the columns, two rows packed as one
//                 complex row, then r2c_post: the 1D real_1d_plan trick applied per column)
//   spectrum      tw x lanes: row kv, lane ku < th/2 + 1 (lanes rounded up to 16, the
//                 padding kept zero), i.e. transposed so that the row transform also runs
//                 down rows of vectors.
// Forward: column transform (th/2 points, 16 columns per vector), r2c_post, transpose,
// row transform (tw points, 16 frequencies per vector). Inverse: the reverse, unnormalised
// (inverse(forward(x)) = th * tw * x). The inner loops are tile_kernels (per ISA).
#pragma once
#include <vector>

#include "line_vector.hpp"
#include "tile_kernels.hpp"

namespace gpuconv::fft::host {

// W_n^e (e < n) as split re / im planes: tile_kernels' table for n/2-point transforms.
void split_twiddle_table(int n, line_vector<float>& re, line_vector<float>& im);

class real_2d_tile_plan {
 public:
  // Throws std::invalid_argument unless th and tw are powers of two, th in [4, 65536] and
  // tw in [16, 65536]. kernels: the loops to run (tests pass each ISA's set).
  real_2d_tile_plan(int th, int tw, const tile_kernels& kernels = best_tile_kernels());

  // Per-thread buffers; spectrum planes are spectrum_floats() each, zero-initialised.
  struct workspace {
    line_vector<float> z_re, z_im, x_re, x_im, s_re, s_im, scratch_re, scratch_im;
  };
  workspace make_workspace() const;

  int tile_h() const { return th_; }
  int tile_w() const { return tw_; }
  int lanes() const { return lanes_; }
  long long spectrum_floats() const { return (long long)tw_ * lanes_; }
  const char* isa() const { return k_.isa; }

  // ws.z_re/z_im (the tile, packed as above) -> ws.s_re/s_im (the spectrum)
  void forward(workspace& ws) const;
  // ws.s_re/s_im *= spectrum (split planes of spectrum_floats())
  void multiply(workspace& ws, const float* spectrum_re, const float* spectrum_im) const;
  // ws.s_re/s_im -> ws.z_re/z_im (overwrites the spectrum)
  void inverse(workspace& ws) const;

 private:
  int th_, tw_, half_, lanes_;
  const tile_kernels& k_;
  line_vector<float> col_re_, col_im_, row_re_, row_im_;  // W_th^e (e < th), W_{2tw}^e (e < 2tw)
};

}  // namespace gpuconv::fft::host
