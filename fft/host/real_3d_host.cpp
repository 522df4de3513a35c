#include "real_3d_host.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace gpuconv::fft::host {

namespace {

int checked(int side, int least, const char* what) {
  if (!is_pow2(side) || side < least || side > (1 << 16))
    throw std::invalid_argument(std::string("host::real_3d_plan: ") + what + " " + std::to_string(side) +
                                " is not a power of two in [" + std::to_string(least) + ", 65536]");
  return side;
}

long long checked_batch(long long batch) {
  if (batch < 1) throw std::invalid_argument("host::real_3d_plan: batch " + std::to_string(batch) + " is < 1");
  return batch;
}

}  // namespace

template <typename real_t>
real_3d_plan<real_t>::real_3d_plan(int depth, int height, int width, long long batch)
    : d_(checked(depth, 1, "depth")),
      h_(checked(height, 1, "height")),
      w_(checked(width, 4, "width")),
      batch_(checked_batch(batch)),
      rows_(width, batch * depth * height, 1),
      along_h_(height),
      along_d_(depth) {}

template <typename real_t>
void real_3d_plan<real_t>::columns(complex_t<real_t>* data, long long outer, long long inner,
                                   const complex_1d_plan<real_t>& plan, bool inverse) const {
  const int n = plan.length();
  if (n == 1) return;
  constexpr long long group = 32;  // columns gathered at once: rows of `group` values read per step
  std::vector<complex_t<real_t>> buf(std::size_t(group) * n), scratch(n);
  for (long long o = 0; o < outer; ++o) {
    complex_t<real_t>* base = data + o * n * inner;
    for (long long c0 = 0; c0 < inner; c0 += group) {
      const long long g = std::min(group, inner - c0);
      for (int k = 0; k < n; ++k)
        for (long long j = 0; j < g; ++j) buf[j * n + k] = base[k * inner + c0 + j];
      if (inverse) plan.inverse(buf.data(), g, scratch.data());
      else plan.forward(buf.data(), g, scratch.data());
      for (int k = 0; k < n; ++k)
        for (long long j = 0; j < g; ++j) base[k * inner + c0 + j] = buf[j * n + k];
    }
  }
}

template <typename real_t>
void real_3d_plan<real_t>::forward(const real_t* in, complex_t<real_t>* out) const {
  if (!in || !out) throw std::invalid_argument("host::real_3d_plan::forward: null pointer");
  const long long half = w_ / 2 + 1;
  rows_.forward(in, out);
  columns(out, batch_ * d_, half, along_h_, false);
  columns(out, batch_, (long long)h_ * half, along_d_, false);
}

template <typename real_t>
void real_3d_plan<real_t>::inverse_destroying(complex_t<real_t>* in, real_t* out) const {
  if (!in || !out) throw std::invalid_argument("host::real_3d_plan::inverse: null pointer");
  const long long half = w_ / 2 + 1;
  columns(in, batch_, (long long)h_ * half, along_d_, true);
  columns(in, batch_ * d_, half, along_h_, true);
  rows_.inverse(in, out);
}

template <typename real_t>
void real_3d_plan<real_t>::inverse(const complex_t<real_t>* in, real_t* out) const {
  if (!in || !out) throw std::invalid_argument("host::real_3d_plan::inverse: null pointer");
  std::vector<complex_t<real_t>> work(in, in + complex_elements());
  inverse_destroying(work.data(), out);
}

template class real_3d_plan<float>;
template class real_3d_plan<double>;

}  // namespace gpuconv::fft::host
