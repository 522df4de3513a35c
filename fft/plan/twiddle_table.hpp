// The plans' run-time twiddle table: W_n^k = exp(-2*pi*i*k/n) for k < n, computed in
// double (the same unit_root the register FFTs evaluate at compile time), rounded once.
#pragma once
#include <vector>

#include "../thread/twiddle.hpp"

namespace gpuconv::fft {

template <typename real_t>
std::vector<complex_t<real_t>> twiddle_table(int n) {
  std::vector<complex_t<real_t>> table(n);
  for (int k = 0; k < n; ++k) {
    complex_t<double> w = unit_root(k, n);
    table[k] = {real_t(w.re), real_t(w.im)};
  }
  return table;
}

}  // namespace gpuconv::fft
