// The separable method's passes by FFT (separable_fft.cu), for long factors: each pass
// convolves its lines - the image's rows, then the intermediate's columns - in segments by
// overlap-save FFTs of N points in one kernel (read once, transformed, multiplied by the
// factor's spectrum, transformed back, written once), two real lines as one complex line
// (a + i b: the factor is real, so the real and imaginary parts of the result are a's and b's
// convolutions). A pass's cost then grows with log N, not with its taps: gaussian:20 (161 taps
// a side) is 322 multiply-adds a pixel through the FMA passes and ~2 x 60 flops through these.
//
//   row pass     tmp(q, x) = sum_j r(j) in_ext(q + oy, x + ox - j)    (separable.hpp's maps)
//   column pass  out(y, x) = sum_i c(i) tmp(y + kh - 1 - i, x)
//
// A segment of a line: N consecutive source values from x0 + ox - (kw - 1) (rows: in_ext with
// the boundary rule; columns: the intermediate, 'valid'); the circular convolution's values
// kw - 1 .. N - 1 are the outputs x0 .. x0 + N - kw, so segments step N - kw + 1 outputs.
// Lines of N = 256, 512, 1024 points, 16 values a thread (block_fft_t<N, N / 16>; 8 for 512
// points), 256 threads a block; the column pass stages a block's N x (2 * lines) values in shared
// memory so that its loads and stores run along the rows.
#pragma once
#include <cuda_runtime.h>

#include "../fft/device/buffer.hpp"
#include "../fft/thread/complex.hpp"
#include "direct.hpp"
#include "method.hpp"

namespace gpuconv::conv {

class line_fft_passes {
 public:
  // The largest factor the passes take (segments of at least a quarter of the longest line).
  static constexpr int max_taps = 769;
  // The line length for `taps` taps along `extent` outputs: the N of 256, 512, 1024 with the
  // fewest transform flops (segments x N log N), 0 where taps > max_taps.
  static int line_for(int taps, long long extent);
  // The cost model's price of one pass, ps an output (method.cpp), by N and taps.
  static double pass_ps_per_pixel(int taps, long long extent);

  // f: the bank's factors (separable_tiles), count kernels; out_h x out_w: the plan's output,
  // whose extents pick each pass's N.
  line_fft_passes(const rank1_factors& f, int count, int kh, int kw, long long out_h, long long out_w);

  // The row pass of kernel k over the planes of m (separable.hpp's row map: out_h = the
  // intermediate's rows) into tmp; the column pass of kernel k from tmp (m: the column map).
  // Asynchronous.
  template <typename T>
  void rows(const T* in, float* tmp, const window_map& m, int k, cudaStream_t stream) const;
  template <typename T>
  void columns(const float* tmp, T* out, const window_map& m, int k, cudaStream_t stream) const;

 private:
  struct pass {
    int n = 0, taps = 0;
    device_buffer<fft::complex_t<float>> spectra;  // count x n: the factor's spectrum / n
    device_buffer<fft::complex_t<float>> table;    // block_fft_t's W_{2n}^e
  };
  static pass make_pass(const float* factors, int count, int taps, long long extent);
  pass rows_, columns_;
};

// Measurements and tests: 1 runs every separable kernel's two passes by FFT (the shared tile
// and the box sums bypassed), -1 never by FFT, 0 (default) as the cost model says. Process-wide;
// the environment variable GPUCONV_LINE_FFT sets it at start-up (measurements only).
void force_line_fft(int mode);
int forced_line_fft();

}  // namespace gpuconv::conv
