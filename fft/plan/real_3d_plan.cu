#include "real_3d_plan.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "../device/dependent_launch.cuh"
#include "../kernels/strided_c2c.cuh"
#include "dispatch.hpp"
#include "device_table.hpp"

namespace gpuconv::fft {

namespace {

void require(const void* p, const char* what) {
  if (p == nullptr) throw std::invalid_argument(std::string("real_3d_plan: ") + what + " is a null pointer");
}

int checked_side(int side, const char* what) {
  if (!is_pow2(side) || side < real_3d_plan::min_side || side > real_3d_plan::max_side)
    throw std::invalid_argument(std::string("real_3d_plan: ") + what + " " + std::to_string(side) +
                                " is not a power of two in [16, 1024]");
  return side;
}

long long checked_batch(long long batch) {
  if (batch < 1) throw std::invalid_argument("real_3d_plan: batch " + std::to_string(batch) + " is < 1");
  return batch;
}

}  // namespace

strided_c2c_plan::strided_c2c_plan(int n, long long outer, long long inner) : n_(n), outer_(outer), inner_(inner) {
  if (!((is_pow2(n) && n >= 2 && n <= 4096) || is_compiled_mixed_length(n)))
    throw std::invalid_argument("strided_c2c_plan: length " + std::to_string(n) +
                                " is neither a power of two in [2, 4096] nor one of " + mixed_lengths_text());
  if (outer < 1 || inner < 1)
    throw std::invalid_argument("strided_c2c_plan: outer " + std::to_string(outer) + " and inner " +
                                std::to_string(inner) + " must be >= 1");
  table_ = device_column_table(n);
  const int sms = current_device_sms();
  dispatch_strided<2>(n, [&](auto len) { grid_ = strided_grid<decltype(len)::value>(outer * inner, sms); });
}

void strided_c2c_plan::forward(const complex_t<float>* in, complex_t<float>* out, cudaStream_t stream,
                               bool early) const {
  require(in, "input");
  require(out, "output");
  dispatch_strided<2>(n_, [&](auto len) {
    launch_c2c_strided<decltype(len)::value, false>(in, out, outer_ * inner_, inner_, grid_, table_.data(),
                                                strided_no_pointwise{}, stream, early);
  });
}

void strided_c2c_plan::inverse(const complex_t<float>* in, complex_t<float>* out, cudaStream_t stream,
                               bool early) const {
  require(in, "input");
  require(out, "output");
  dispatch_strided<2>(n_, [&](auto len) {
    launch_c2c_strided<decltype(len)::value, true>(in, out, outer_ * inner_, inner_, grid_, table_.data(),
                                               strided_no_pointwise{}, stream, early);
  });
}

void strided_c2c_plan::convolve(const complex_t<float>* in, complex_t<float>* out, const complex_t<float>* spectrum,
                                cudaStream_t stream, bool early) const {
  require(in, "input");
  require(out, "output");
  require(spectrum, "spectrum");
  dispatch_strided<2>(n_, [&](auto len) {
    launch_c2c_strided<decltype(len)::value, false>(in, out, outer_ * inner_, inner_, grid_, table_.data(),
                                                strided_multiply{spectrum}, stream, early);
  });
}

real_3d_plan::real_3d_plan(int depth, int height, int width, long long batch, bool early_launch)
    : depth_(checked_side(depth, "depth")),
      height_(checked_side(height, "height")),
      width_(checked_side(width, "width")),
      batch_(checked_batch(batch)),
      early_(early_launch && dependent_launch_supported()),
      rows_(width, batch * depth * height),
      along_h_(height, batch * depth, width / 2 + 1),
      along_d_(depth, batch, (long long)height * (width / 2 + 1)),
      work_(std::size_t(complex_elements())) {}

void real_3d_plan::forward(const float* in, complex_t<float>* out, cudaStream_t stream) const {
  require(in, "input");
  require(out, "output");
  rows_.forward(in, out, stream);
  along_h_.forward(out, out, stream);  // not early after the row kernel (see the header)
  along_d_.forward(out, out, stream, early_);
}

void real_3d_plan::inverse(const complex_t<float>* in, float* out, cudaStream_t stream) {
  require(in, "input");
  require(out, "output");
  along_d_.inverse(in, work_.data(), stream);
  along_h_.inverse(work_.data(), work_.data(), stream, early_);
  rows_.inverse(work_.data(), out, stream, early_);
}

void real_3d_plan::convolve(const float* in, float* out, const complex_t<float>* spectrum, cudaStream_t stream) {
  require(in, "input");
  require(out, "output");
  require(spectrum, "spectrum");
  rows_.forward(in, work_.data(), stream);
  along_h_.forward(work_.data(), work_.data(), stream);  // not early after the row kernel
  along_d_.convolve(work_.data(), work_.data(), spectrum, stream, early_);
  along_h_.inverse(work_.data(), work_.data(), stream, early_);
  rows_.inverse(work_.data(), out, stream, early_);
}

}  // namespace gpuconv::fft
