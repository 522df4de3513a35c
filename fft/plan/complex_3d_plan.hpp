// Plan layer: batched 3D complex FFTs (C2C) on power-of-two volumes on the GPU, the complex
// sibling of real_3d_plan: [batch][depth][height][width] complex in and out (cuFFT's 3D C2C
// layout), inverse unnormalised. Three passes: complex_1d_plan over the rows, then
// strided_c2c_plan along H and along D (no transposes); in place allowed (in == out).
#pragma once
#include "complex_1d_plan.hpp"
#include "real_3d_plan.hpp"

namespace gpuconv::fft {

class complex_3d_plan {
 public:
  // Throws std::invalid_argument for sides that are not powers of two in [2, 4096] or batch < 1.
  complex_3d_plan(int depth, int height, int width, long long batch);

  void forward(const complex_t<float>* in, complex_t<float>* out, cudaStream_t stream = nullptr) const;
  void inverse(const complex_t<float>* in, complex_t<float>* out, cudaStream_t stream = nullptr) const;

  int depth() const { return depth_; }
  int height() const { return height_; }
  int width() const { return width_; }
  long long batch() const { return batch_; }
  long long elements() const { return batch_ * depth_ * height_ * width_; }

 private:
  int depth_, height_, width_;
  long long batch_;
  complex_1d_plan rows_;
  strided_c2c_plan along_h_, along_d_;
};

}  // namespace gpuconv::fft
