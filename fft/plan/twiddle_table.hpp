// The plans' run-time twiddle table: W_n^k = exp(-2*pi*i*k/n) for k < n, computed in
// double (the same unit_root the register FFTs evaluate at compile time), rounded once.
#pragma once
#include <vector>

#include "../thread/mixed_radix.hpp"
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

// The table of the strided pass's column transforms (fft/kernels/strided_c2c.cuh) of length n:
// W_{2n} for a power of two (block_fft_t's); W_{2M} then W_n for n = R M
// (block_mixed_fft_t's, fft/block/mixed.cuh).
template <typename real_t>
std::vector<complex_t<real_t>> column_twiddle_table(int n) {
  if (odd_part(n) == 1) return twiddle_table<real_t>(2 * n);
  auto table = twiddle_table<real_t>(2 * pow2_part(n));
  const auto big = twiddle_table<real_t>(n);
  table.insert(table.end(), big.begin(), big.end());
  return table;
}

}  // namespace gpuconv::fft
