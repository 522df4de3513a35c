// Plan layer: batched 2D real FFTs on power-of-two tiles (16..4096 per side) on the GPU.
//
// forward: [batch][height][width] reals -> [batch][height][width/2+1] complex (cuFFT's 2D
// R2C layout); inverse the reverse, unnormalised (inverse(forward(x)) = height*width*x).
// Row pass: the batched 1D R2C over every row; column pass: a transpose, batched C2C over
// the (now contiguous) columns, and a transpose back. The plan owns its workspace.
//
// convolve() is the convolution's path: forward rows, transpose, and in one column kernel
// FFT -> multiply by the kernel spectrum -> IFFT while the column is in registers, then
// transpose back and inverse rows. Its spectrum is in the transposed layout
// [width/2+1][height] (see spectrum_transposed()).
#pragma once
#include "complex_1d_plan.hpp"
#include "real_1d_plan.hpp"

namespace gpuconv::fft {

class real_2d_plan {
 public:
  static constexpr int min_side = 16;
  static constexpr int max_side = 4096;

  // Throws std::invalid_argument for sides that are not powers of two in [16, 4096] or batch < 1.
  real_2d_plan(int height, int width, long long batch);

  void forward(const float* in, complex_t<float>* out, cudaStream_t stream = nullptr);
  void inverse(const complex_t<float>* in, float* out, cudaStream_t stream = nullptr);
  // out = C2R( R2C(in) * spectrum ) per tile, unnormalised; `spectrum` in the transposed
  // layout, one [width/2+1][height] set shared by every tile. in == out is allowed.
  void convolve(const float* in, float* out, const complex_t<float>* spectrum, cudaStream_t stream = nullptr);

  // The spectrum of one tile in the transposed layout convolve() takes: [width/2+1][height].
  void spectrum_transposed(const float* tile, complex_t<float>* out, cudaStream_t stream = nullptr);

  int height() const { return height_; }
  int width() const { return width_; }
  long long batch() const { return batch_; }
  long long spectrum_elements() const { return (long long)height_ * (width_ / 2 + 1); }

 private:
  int height_, width_;
  long long batch_;
  real_1d_plan rows_;
  complex_1d_plan columns_;
  device_buffer<complex_t<float>> work_a_, work_b_;
};

}  // namespace gpuconv::fft
