// Test references: a naive DFT in long double and relative-L2 error measures.
#pragma once
#include <cmath>
#include <complex>
#include <cstdint>
#include <random>
#include <limits>
#include <type_traits>
#include <vector>

#include "fft/thread/complex.hpp"

namespace gpuconv::test {

using cld = std::complex<long double>;

template <typename T>
cld to_cld(const fft::complex_t<T>& v) { return cld(v.re, v.im); }
template <typename T>
cld to_cld(const std::complex<T>& v) { return cld(v.real(), v.imag()); }
template <typename T, typename = std::enable_if_t<std::is_arithmetic_v<T>>>
cld to_cld(T v) { return cld(v, 0); }

// X[k] = sum_j x[j] exp(-+2*pi*i*j*k/n), O(n^2), exact angle reduction (j*k mod n).
inline std::vector<cld> naive_dft(const std::vector<cld>& x, bool inverse) {
  const long long n = (long long)x.size();
  const long double two_pi = 6.283185307179586476925286766559005768L;
  std::vector<cld> c(n);
  for (long long j = 0; j < n; ++j)
    c[j] = std::polar(1.0L, (inverse ? 1.0L : -1.0L) * two_pi * (long double)j / (long double)n);
  std::vector<cld> X(n);
  for (long long k = 0; k < n; ++k) {
    cld s = 0;
    for (long long j = 0; j < n; ++j) s += x[j] * c[(j * k) % n];
    X[k] = s;
  }
  return X;
}

// ||a - b|| / ||b|| over any pair of sequences of complex-like values.
template <typename A, typename B>
double relative_l2(const A& a, const B& b) {
  long double num = 0, den = 0;
  for (std::size_t i = 0; i < b.size(); ++i) {
    num += std::norm(to_cld(a[i]) - to_cld(b[i]));
    den += std::norm(to_cld(b[i]));
  }
  return den == 0 ? (num == 0 ? 0.0 : INFINITY) : (double)std::sqrt(num / den);
}

// Fresh random data every call: a seed from the clock mixed with a counter, reported on failure.
inline std::uint64_t fresh_seed() {
  static std::uint64_t counter = 0;
  std::random_device rd;
  return (std::uint64_t(rd()) << 32) ^ rd() ^ (++counter * 0x9E3779B97F4A7C15ull);
}

template <typename real_t>
std::vector<real_t> random_reals(std::size_t count, std::uint64_t seed) {
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<real_t> v(count);
  for (auto& x : v) x = real_t(u(g));
  return v;
}

// Higham's forward-error bound for a radix-2 Cooley-Tukey FFT (Accuracy and Stability of
// Numerical Algorithms, Thm 24.2): ||X^ - X|| / ||X|| <= L*eta / (1 - L*eta), L = log2 n,
// eta = mu + gamma_4 (sqrt 2 + mu), with mu the twiddle error (one rounding: u) and
// gamma_4 = 4u/(1-4u). Radix-4/8 steps are compositions of radix-2 steps, so the bound
// holds; `levels` adds the extra stages of the real wrappers (pre/post-processing).
template <typename real_t>
double fft_error_bound(int log2n, int extra_levels = 0) {
  const double u = std::numeric_limits<real_t>::epsilon() / 2;
  const double gamma4 = 4 * u / (1 - 4 * u);
  const double eta = u + gamma4 * (std::sqrt(2.0) + u);
  const double L = log2n + extra_levels;
  return L * eta / (1 - L * eta);
}

}  // namespace gpuconv::test
