// The forward transform of one line of a mixed length n = R M (fft/thread/mixed_radix.hpp) in
// double, on the host: the same steps the kernels run (mixed_layout's R-point step, then fft_t
// on each of the R rows), for the multipliers the mixed-side kernels take (the 2D fused 80-tiles'
// spectra, the 3D slice path's mixed sides and depths).
#pragma once
#include <vector>

#include "../thread/fft.hpp"
#include "../thread/mixed_radix.hpp"

namespace gpuconv::fft::host {

// In place, natural order in and out; roots[e] = W_n^e (unit_root(e, n)), e < n.
template <int n>
void mixed_forward_double(complex_t<double>* line, const std::vector<complex_t<double>>& roots) {
  constexpr int R = odd_part(n), M = n / R;
  using layout = mixed_layout<R, M, 1>;
  using cd = complex_t<double>;
  array_t<cd, n> v;
  for (int q = 0; q < n; ++q) v[q] = line[layout::time_index(0, q)];
  layout::template forward_odd<double>(v, 0, [&](int e) { return roots[e]; });
  for (int k1 = 0; k1 < R; ++k1) {
    array_t<cd, M> row;
    for (int m = 0; m < M; ++m) row[m] = v[k1 * M + m];
    row = fft_t<double, M>{}(row);
    for (int m = 0; m < M; ++m) v[k1 * M + m] = row[m];
  }
  for (int q = 0; q < n; ++q) line[layout::freq_index(0, q)] = v[q];
}

}  // namespace gpuconv::fft::host
