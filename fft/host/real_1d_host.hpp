// Batched 1D real FFTs on the CPU, built from the same thread-layer fft_t as the kernels.
//
// Rows up to 64 points run rfft_t/irfft_t directly; longer rows run the same Stockham
// passes as block_fft_t (radix 16, then what is left), with the twiddle table computed in
// double and rounded to real_t. Same layout and conventions as real_1d_plan: rows of n
// reals <-> rows of n/2+1 complex, C2R unnormalised, Im X[0] and Im X[n/2] ignored.
// real_t is float or double. `threads` rows are processed concurrently (0 = hardware).
#pragma once
#include <vector>

#include "../thread/complex.hpp"

namespace gpuconv::fft::host {

template <typename real_t>
class real_1d_plan {
 public:
  static constexpr int min_length = 4;
  static constexpr int max_length = 1 << 16;

  // Throws std::invalid_argument when n is not a power of two in [4, 65536] or batch < 1.
  real_1d_plan(int n, long long batch, int threads = 1);

  void forward(const real_t* in, complex_t<real_t>* out) const;
  void inverse(const complex_t<real_t>* in, real_t* out) const;

  int length() const { return n_; }
  long long batch() const { return batch_; }

 private:
  void forward_rows(const real_t* in, complex_t<real_t>* out, long long first, long long last) const;
  void inverse_rows(const complex_t<real_t>* in, real_t* out, long long first, long long last) const;
  template <typename F>
  void parallel_rows(F&& f) const;

  int n_;
  long long batch_;
  int threads_;
  std::vector<complex_t<real_t>> table_;  // W_n^k, k < n
};

// Batched 1D complex FFTs on the CPU over contiguous rows (the column passes of the CPU
// convolution backend): the same Stockham passes as above; inverse unnormalised.
template <typename real_t>
class complex_1d_plan {
 public:
  // Throws std::invalid_argument when n is not a power of two in [1, 65536].
  explicit complex_1d_plan(int n);
  // In place over `rows` contiguous rows of n values; `scratch` holds n values.
  void forward(complex_t<real_t>* data, long long rows, complex_t<real_t>* scratch) const;
  void inverse(complex_t<real_t>* data, long long rows, complex_t<real_t>* scratch) const;
  int length() const { return n_; }

 private:
  int n_;
  std::vector<complex_t<real_t>> table_;  // W_{2n}^e, e < 2n (the table_n of the passes)
};

extern template class complex_1d_plan<float>;
extern template class complex_1d_plan<double>;
extern template class real_1d_plan<float>;
extern template class real_1d_plan<double>;

}  // namespace gpuconv::fft::host
