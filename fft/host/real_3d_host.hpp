// Batched 3D real FFTs on the CPU: the host twin of fft::real_3d_plan (tests compare the GPU
// against it in double) and the CPU backend's per-tile transform (in float).
//
// Layout as cuFFT's 3D R2C: [batch][depth][height][width] reals <-> [batch][depth][height]
// [width/2+1] complex; C2R unnormalised (inverse(forward(x)) = depth*height*width*x), the
// imaginary parts that a Hermitian spectrum must have zero ignored as real_1d_plan does.
// Built from the 1D host plans: real rows along W, then complex transforms along H and along
// D over columns gathered a group at a time ([outer][n][inner] -> rows of n -> back).
#pragma once
#include <vector>

#include "real_1d_host.hpp"

namespace gpuconv::fft::host {

template <typename real_t>
class real_3d_plan {
 public:
  // Throws std::invalid_argument unless depth and height are powers of two in [1, 65536],
  // width one in [4, 65536], and batch >= 1.
  real_3d_plan(int depth, int height, int width, long long batch = 1);

  void forward(const real_t* in, complex_t<real_t>* out) const;
  // in is left as it was (a copy is transformed).
  void inverse(const complex_t<real_t>* in, real_t* out) const;
  // The inverse that overwrites its input spectrum (no allocation of a spectrum's size).
  void inverse_destroying(complex_t<real_t>* in, real_t* out) const;

  int depth() const { return d_; }
  int height() const { return h_; }
  int width() const { return w_; }
  long long batch() const { return batch_; }
  long long complex_elements() const { return batch_ * d_ * h_ * (w_ / 2 + 1); }

 private:
  // the complex transform along the middle axis of [outer][n][inner], in place
  void columns(complex_t<real_t>* data, long long outer, long long inner, const complex_1d_plan<real_t>& plan,
               bool inverse) const;

  int d_, h_, w_;
  long long batch_;
  real_1d_plan<real_t> rows_;
  complex_1d_plan<real_t> along_h_, along_d_;
};

extern template class real_3d_plan<float>;
extern template class real_3d_plan<double>;

}  // namespace gpuconv::fft::host
