// Plan layer: batched 3D real FFTs on power-of-two volumes (16..1024 per side) on the GPU.
//
// forward: [batch][depth][height][width] reals -> [batch][depth][height][width/2+1] complex
// (cuFFT's 3D R2C layout); inverse the reverse, unnormalised (inverse(forward(x)) =
// depth*height*width*x). Three passes, each one read and one write of the data:
//   1. the batched 1D R2C over every row (real_1d_plan),
//   2. C2C along H over the columns of each slice, strided, in place ([batch*depth][height]
//      [width/2+1], strided_c2c.cuh: coalesced across the columns, no transposes),
//   3. C2C along D the same way over [batch][depth][height*(width/2+1)].
// inverse runs them backwards; its first pass reads the input and writes the plan's
// workspace, so the input is left as it was.
//
// convolve() is the convolution's path: forward rows and H, then in one kernel along D
// FFT -> multiply by the kernel spectrum -> IFFT while the column is in registers, then H
// and rows backwards; the spectrum is one [depth][height][width/2+1] set (forward()'s layout,
// batch 1) shared by every volume of the batch.
#pragma once
#include "real_1d_plan.hpp"

namespace gpuconv::fft {

// C2C along the middle axis of [outer][n][inner] (strided_c2c.cuh), in place allowed.
class strided_c2c_plan {
 public:
  // Throws std::invalid_argument unless n is a power of two in [2, 4096] or one of the mixed
  // lengths (dispatch.hpp's mixed_lengths), and outer, inner >= 1.
  strided_c2c_plan(int n, long long outer, long long inner);
  // early: as real_1d_plan's (a programmatic dependent launch)
  void forward(const complex_t<float>* in, complex_t<float>* out, cudaStream_t stream = nullptr,
               bool early = false) const;
  void inverse(const complex_t<float>* in, complex_t<float>* out, cudaStream_t stream = nullptr,
               bool early = false) const;
  // out = IFFT(FFT(in) * spectrum) along the axis, spectrum [n][inner] shared by every outer index
  void convolve(const complex_t<float>* in, complex_t<float>* out, const complex_t<float>* spectrum,
                cudaStream_t stream = nullptr, bool early = false) const;
  int length() const { return n_; }

 private:
  int n_;
  long long outer_, inner_;
  unsigned grid_ = 0;
  device_buffer<complex_t<float>> table_;  // column_twiddle_table(n)
};

class real_3d_plan {
 public:
  static constexpr int min_side = 16;
  static constexpr int max_side = 1024;

  // Throws std::invalid_argument for sides that are not powers of two in [16, 1024] or batch < 1.
  // early_launch: the passes after the first may begin while the one before them ends
  // (programmatic dependent launch, fft/device/dependent_launch.cuh; each kernel waits for its
  // predecessor before it touches memory), so that launch latency and the last wave of a pass
  // overlap - except the C2C along H right after the forward row kernel, which ran slower so
  // (H100, 128^3: 4-7% on the whole R2C). Before compute capability 9.0: plain launches.
  real_3d_plan(int depth, int height, int width, long long batch, bool early_launch = true);

  void forward(const float* in, complex_t<float>* out, cudaStream_t stream = nullptr) const;
  void inverse(const complex_t<float>* in, float* out, cudaStream_t stream = nullptr);
  // out = C2R(R2C(in) * spectrum) per volume, unnormalised; in == out allowed.
  void convolve(const float* in, float* out, const complex_t<float>* spectrum, cudaStream_t stream = nullptr);

  int depth() const { return depth_; }
  int height() const { return height_; }
  int width() const { return width_; }
  long long batch() const { return batch_; }
  long long real_elements() const { return batch_ * depth_ * height_ * width_; }
  long long complex_elements() const { return batch_ * spectrum_elements(); }
  long long spectrum_elements() const { return (long long)depth_ * height_ * (width_ / 2 + 1); }
  // device memory the plan holds (workspace and tables), for memory caps
  std::size_t workspace_bytes() const { return work_.bytes(); }

 private:
  int depth_, height_, width_;
  long long batch_;
  bool early_;
  real_1d_plan rows_;
  strided_c2c_plan along_h_, along_d_;
  device_buffer<complex_t<float>> work_;
};

}  // namespace gpuconv::fft
