#include "complex_3d_plan.hpp"

#include <stdexcept>
#include <string>

namespace gpuconv::fft {

namespace {

int checked_side(int side, const char* what) {
  if (!is_pow2(side) || side < 2 || side > 4096)
    throw std::invalid_argument(std::string("complex_3d_plan: ") + what + " " + std::to_string(side) +
                                " is not a power of two in [2, 4096]");
  return side;
}

long long checked_batch(long long batch) {
  if (batch < 1) throw std::invalid_argument("complex_3d_plan: batch " + std::to_string(batch) + " is < 1");
  return batch;
}

}  // namespace

complex_3d_plan::complex_3d_plan(int depth, int height, int width, long long batch)
    : depth_(checked_side(depth, "depth")),
      height_(checked_side(height, "height")),
      width_(checked_side(width, "width")),
      batch_(checked_batch(batch)),
      rows_(width, batch * depth * height),
      along_h_(height, batch * depth, width),
      along_d_(depth, batch, (long long)height * width) {}

void complex_3d_plan::forward(const complex_t<float>* in, complex_t<float>* out, cudaStream_t stream) const {
  rows_.forward(in, out, stream);
  along_h_.forward(out, out, stream);
  along_d_.forward(out, out, stream);
}

void complex_3d_plan::inverse(const complex_t<float>* in, complex_t<float>* out, cudaStream_t stream) const {
  rows_.inverse(in, out, stream);
  along_h_.inverse(out, out, stream);
  along_d_.inverse(out, out, stream);
}

}  // namespace gpuconv::fft
