#include "real_2d_plan.hpp"

#include <stdexcept>
#include <string>

namespace gpuconv::fft {

namespace {

int checked_side(int side, const char* what) {
  if (!is_pow2(side) || side < real_2d_plan::min_side || side > real_2d_plan::max_side)
    throw std::invalid_argument(std::string("real_2d_plan: ") + what + " " + std::to_string(side) +
                                " is not a power of two in [16, 4096]");
  return side;
}

long long checked_batch(long long batch) {
  if (batch < 1) throw std::invalid_argument("real_2d_plan: batch " + std::to_string(batch) + " is < 1");
  return batch;
}

}  // namespace

real_2d_plan::real_2d_plan(int height, int width, long long batch)
    : height_(checked_side(height, "height")),
      width_(checked_side(width, "width")),
      batch_(checked_batch(batch)),
      rows_(width, batch * height),
      columns_(height, batch * (width / 2 + 1)),
      work_a_(std::size_t(batch) * spectrum_elements()),
      work_b_(std::size_t(batch) * spectrum_elements()) {}

void real_2d_plan::forward(const float* in, complex_t<float>* out, cudaStream_t stream) {
  const int half = width_ / 2 + 1;
  rows_.forward(in, work_a_.data(), stream);
  transpose(work_a_.data(), work_b_.data(), batch_, height_, half, stream);
  columns_.forward(work_b_.data(), work_b_.data(), stream);
  transpose(work_b_.data(), out, batch_, half, height_, stream);
}

void real_2d_plan::inverse(const complex_t<float>* in, float* out, cudaStream_t stream) {
  const int half = width_ / 2 + 1;
  transpose(in, work_b_.data(), batch_, height_, half, stream);
  columns_.inverse(work_b_.data(), work_b_.data(), stream);
  transpose(work_b_.data(), work_a_.data(), batch_, half, height_, stream);
  rows_.inverse(work_a_.data(), out, stream);
}

void real_2d_plan::convolve(const float* in, float* out, const complex_t<float>* spectrum, cudaStream_t stream) {
  const int half = width_ / 2 + 1;
  rows_.forward(in, work_a_.data(), stream);
  transpose(work_a_.data(), work_b_.data(), batch_, height_, half, stream);
  columns_.convolve(work_b_.data(), work_b_.data(), spectrum, half, stream);
  transpose(work_b_.data(), work_a_.data(), batch_, half, height_, stream);
  rows_.inverse(work_a_.data(), out, stream);
}

void real_2d_plan::spectrum_transposed(const float* tile, complex_t<float>* out, cudaStream_t stream) {
  const int half = width_ / 2 + 1;
  real_1d_plan rows(width_, height_);
  complex_1d_plan columns(height_, half);
  rows.forward(tile, work_a_.data(), stream);
  transpose(work_a_.data(), out, 1, height_, half, stream);
  columns.forward(out, out, stream);
}

}  // namespace gpuconv::fft
