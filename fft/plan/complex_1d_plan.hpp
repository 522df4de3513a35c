// Plan layer: batched 1D complex FFTs (C2C) on the GPU over contiguous rows, and the batched
// complex transpose that turns column passes into row passes.
// Built once; forward/inverse/convolve never allocate or synchronise. Unnormalised inverse.
#pragma once
#include <cuda_runtime.h>

#include "../device/buffer.hpp"
#include "../thread/complex.hpp"

namespace gpuconv::fft {

class complex_1d_plan {
 public:
  static constexpr int min_length = 2;
  static constexpr int max_length = 4096;

  // Throws std::invalid_argument when n is not a power of two in [2, 4096] or rows < 1.
  complex_1d_plan(int n, long long rows);

  void forward(const complex_t<float>* in, complex_t<float>* out, cudaStream_t stream = nullptr) const;
  void inverse(const complex_t<float>* in, complex_t<float>* out, cudaStream_t stream = nullptr) const;
  // out[r] = IFFT(FFT(in[r]) * spectrum[r mod rows_per_set]), each spectrum row n values;
  // in place is allowed (in == out).
  void convolve(const complex_t<float>* in, complex_t<float>* out, const complex_t<float>* spectrum,
                long long rows_per_set, cudaStream_t stream = nullptr) const;

  int length() const { return n_; }
  long long rows() const { return rows_; }

 private:
  int n_;
  long long rows_;
  unsigned grid_ = 0;
  device_buffer<complex_t<float>> table_;  // W_{2n}^e, e < 2n (then per-pass tables: complex_1d_policy)
};

// [batch][rows][cols] -> [batch][cols][rows]; in and out must not overlap.
void transpose(const complex_t<float>* in, complex_t<float>* out, long long batch, int rows, int cols,
               cudaStream_t stream = nullptr);

}  // namespace gpuconv::fft
