// Plan layer: batched 1D real FFTs on the GPU (R2C forward, C2R inverse).
//
// Built once (validates the shape, uploads the twiddle table computed in double);
// forward()/inverse() never allocate and never synchronise. Layout is cuFFT's plan-many
// default: contiguous rows, n reals <-> n/2+1 complex. C2R is unnormalised:
// inverse(forward(x)) = n * x. Device pointers must be 16-byte aligned (cudaMalloc's are).
#pragma once
#include <cuda_runtime.h>

#include <vector>

#include "../device/buffer.hpp"
#include "../thread/complex.hpp"

namespace gpuconv::fft {

class real_1d_plan {
 public:
  static constexpr int min_length = 4;
  static constexpr int max_length = 4096;

  // Throws std::invalid_argument when n is not a power of two in [4, 4096] or batch < 1.
  real_1d_plan(int n, long long batch);

  // early: the launch may begin while the previous kernel in the stream finishes (programmatic
  // dependent launch, fft/device/dependent_launch.cuh; the kernel waits for it before touching
  // memory), for passes that follow each other back to back (real_3d_plan)
  void forward(const float* in, complex_t<float>* out, cudaStream_t stream = nullptr, bool early = false) const;
  void inverse(const complex_t<float>* in, float* out, cudaStream_t stream = nullptr, bool early = false) const;

  // The twiddle table the kernels of length n read (host side, no GPU needed): W_n^k for k < n
  // (the real pre- and post-processing), then, where the rows' Stockham passes read per-pass
  // tables (real_1d_policy::pass_tables), each pass's W_{Ns R}^{j r} in the order its threads
  // read them (fft/block/stockham.cuh); `inverse`: the C2R kernel's (its passes may differ from
  // R2C's: real_1d_policy::flat). Throws as the constructor for a bad n.
  static std::vector<complex_t<float>> twiddles(int n, bool inverse = false);

  int length() const { return n_; }
  long long batch() const { return batch_; }
  long long real_elements() const { return batch_ * n_; }
  long long complex_elements() const { return batch_ * (n_ / 2 + 1); }
  // inverse() runs the persistent C2R kernel staging by cp.async (real_1d_policy's staged_): at
  // the sizes that have one, where the flat kernel's grid would fill at most one wave
  bool c2r_staged() const { return c2r_staged_; }

 private:
  int n_;
  long long batch_;
  device_buffer<complex_t<float>> table_;          // twiddles(n)
  device_buffer<complex_t<float>> inverse_table_;  // twiddles(n, true) where it differs (else empty)
  unsigned r2c_grid_ = 0, c2r_grid_ = 0;   // blocks per launch, from the policy and the occupancy
  bool c2r_staged_ = false;
};

}  // namespace gpuconv::fft
