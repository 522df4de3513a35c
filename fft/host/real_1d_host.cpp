#include "real_1d_host.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

#include "../plan/twiddle_table.hpp"
#include "../thread/real.hpp"

namespace gpuconv::fft::host {

namespace {

constexpr int pass_radix = 16;

template <typename real_t, int R, bool inverse>
void radix_pass(const complex_t<real_t>* src, complex_t<real_t>* dst, int N, int Ns,
                const complex_t<real_t>* table) {
  const int butterflies = N / R, table_step = 2 * N / (Ns * R);
  for (int b = 0; b < butterflies; ++b) {
    const int j = b & (Ns - 1);
    array_t<complex_t<real_t>, R> y;
    for (int r = 0; r < R; ++r) {
      y[r] = src[b + r * butterflies];
      if (r > 0) y[r] = special_mul<inverse>(y[r], table[j * r * table_step]);
    }
    y = fft_t<real_t, R, inverse>{}(y);
    for (int r = 0; r < R; ++r) dst[(b - j) * R + j + r * Ns] = y[r];
  }
}

// In-place N-point complex FFT through Stockham passes; scratch holds N values.
template <typename real_t, bool inverse>
void stockham(complex_t<real_t>* data, complex_t<real_t>* scratch, int N, const complex_t<real_t>* table) {
  complex_t<real_t>* src = data;
  complex_t<real_t>* dst = scratch;
  for (int Ns = 1; Ns < N;) {
    const int R = std::min(pass_radix, N / Ns);
    switch (R) {
      case 2: radix_pass<real_t, 2, inverse>(src, dst, N, Ns, table); break;
      case 4: radix_pass<real_t, 4, inverse>(src, dst, N, Ns, table); break;
      case 8: radix_pass<real_t, 8, inverse>(src, dst, N, Ns, table); break;
      default: radix_pass<real_t, 16, inverse>(src, dst, N, Ns, table); break;
    }
    std::swap(src, dst);
    Ns *= R;
  }
  if (src != data) std::copy(src, src + N, data);
}

template <typename real_t, int n>
void forward_small(const real_t* in, complex_t<real_t>* out) {
  array_t<real_t, n> x;
  for (int i = 0; i < n; ++i) x[i] = in[i];
  const auto X = rfft_t<real_t, n>{}(x);
  for (int k = 0; k <= n / 2; ++k) out[k] = X[k];
}

template <typename real_t, int n>
void inverse_small(const complex_t<real_t>* in, real_t* out) {
  array_t<complex_t<real_t>, n / 2 + 1> X;
  for (int k = 0; k <= n / 2; ++k) X[k] = in[k];
  const auto x = irfft_t<real_t, n>{}(X);
  for (int i = 0; i < n; ++i) out[i] = x[i];
}

}  // namespace

template <typename real_t>
real_1d_plan<real_t>::real_1d_plan(int n, long long batch, int threads)
    : n_(n), batch_(batch), threads_(threads), table_(twiddle_table<real_t>(is_pow2(n) ? n : 1)) {
  if (!is_pow2(n) || n < min_length || n > max_length)
    throw std::invalid_argument("host::real_1d_plan: length " + std::to_string(n) +
                                " is not a power of two in [4, 65536]");
  if (batch < 1) throw std::invalid_argument("host::real_1d_plan: batch " + std::to_string(batch) + " is < 1");
  if (threads_ <= 0) threads_ = std::max(1u, std::thread::hardware_concurrency());
}

template <typename real_t>
template <typename F>
void real_1d_plan<real_t>::parallel_rows(F&& f) const {
  const long long workers = std::min<long long>(threads_, batch_);
  if (workers <= 1) {
    f(0LL, batch_);
    return;
  }
  std::vector<std::thread> pool;
  const long long per = (batch_ + workers - 1) / workers;
  for (long long w = 0; w < workers; ++w) {
    const long long first = w * per, last = std::min(batch_, first + per);
    if (first < last) pool.emplace_back([&f, first, last] { f(first, last); });
  }
  for (auto& t : pool) t.join();
}

template <typename real_t>
void real_1d_plan<real_t>::forward(const real_t* in, complex_t<real_t>* out) const {
  if (!in || !out) throw std::invalid_argument("host::real_1d_plan::forward: null pointer");
  parallel_rows([&](long long first, long long last) { forward_rows(in, out, first, last); });
}

template <typename real_t>
void real_1d_plan<real_t>::inverse(const complex_t<real_t>* in, real_t* out) const {
  if (!in || !out) throw std::invalid_argument("host::real_1d_plan::inverse: null pointer");
  parallel_rows([&](long long first, long long last) { inverse_rows(in, out, first, last); });
}

template <typename real_t>
void real_1d_plan<real_t>::forward_rows(const real_t* in, complex_t<real_t>* out, long long first,
                                        long long last) const {
  const int n = n_, N = n / 2;
  std::vector<complex_t<real_t>> z(N), scratch(N);
  for (long long row = first; row < last; ++row) {
    const real_t* x = in + row * n;
    complex_t<real_t>* X = out + row * (N + 1);
    switch (n) {
      case 4: forward_small<real_t, 4>(x, X); continue;
      case 8: forward_small<real_t, 8>(x, X); continue;
      case 16: forward_small<real_t, 16>(x, X); continue;
      case 32: forward_small<real_t, 32>(x, X); continue;
      case 64: forward_small<real_t, 64>(x, X); continue;
      default: break;
    }
    for (int m = 0; m < N; ++m) z[m] = {x[2 * m], x[2 * m + 1]};
    stockham<real_t, false>(z.data(), scratch.data(), N, table_.data());
    for (int k = 0; k <= N; ++k) X[k] = r2c_post(z[k % N], z[(N - k) % N], table_[k]);
  }
}

template <typename real_t>
void real_1d_plan<real_t>::inverse_rows(const complex_t<real_t>* in, real_t* out, long long first,
                                        long long last) const {
  const int n = n_, N = n / 2;
  std::vector<complex_t<real_t>> z(N), scratch(N);
  for (long long row = first; row < last; ++row) {
    const complex_t<real_t>* X = in + row * (N + 1);
    real_t* x = out + row * n;
    switch (n) {
      case 4: inverse_small<real_t, 4>(X, x); continue;
      case 8: inverse_small<real_t, 8>(X, x); continue;
      case 16: inverse_small<real_t, 16>(X, x); continue;
      case 32: inverse_small<real_t, 32>(X, x); continue;
      case 64: inverse_small<real_t, 64>(X, x); continue;
      default: break;
    }
    for (int k = 0; k < N; ++k) {
      complex_t<real_t> xk = X[k], xnk = X[N - k];
      if (k == 0) { xk.im = 0; xnk.im = 0; }
      z[k] = c2r_pre(xk, xnk, table_[k]);
    }
    stockham<real_t, true>(z.data(), scratch.data(), N, table_.data());
    for (int m = 0; m < N; ++m) { x[2 * m] = z[m].re; x[2 * m + 1] = z[m].im; }
  }
}

template <typename real_t>
complex_1d_plan<real_t>::complex_1d_plan(int n) : n_(n), table_(twiddle_table<real_t>(is_pow2(n) ? 2 * n : 1)) {
  if (!is_pow2(n) || n > (1 << 16))
    throw std::invalid_argument("host::complex_1d_plan: length " + std::to_string(n) + " is not a power of two in [1, 65536]");
}

template <typename real_t>
void complex_1d_plan<real_t>::forward(complex_t<real_t>* data, long long rows, complex_t<real_t>* scratch) const {
  for (long long r = 0; r < rows; ++r) stockham<real_t, false>(data + r * n_, scratch, n_, table_.data());
}

template <typename real_t>
void complex_1d_plan<real_t>::inverse(complex_t<real_t>* data, long long rows, complex_t<real_t>* scratch) const {
  for (long long r = 0; r < rows; ++r) stockham<real_t, true>(data + r * n_, scratch, n_, table_.data());
}

template class complex_1d_plan<float>;
template class complex_1d_plan<double>;
template class real_1d_plan<float>;
template class real_1d_plan<double>;

}  // namespace gpuconv::fft::host
