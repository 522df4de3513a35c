// A convolution kernel as the application layer holds it: Kh x Kw row-major floats, the
// layout conv::plan takes, plus where it came from (for messages).
#pragma once
#include <string>
#include <vector>

namespace gpuconv::app {

struct kernel {
  int height = 0, width = 0;
  std::vector<float> values;  // height * width, row-major
  std::string source;         // "file 'k.txt'", "named kernel 'gaussian:2'", ...

  double sum() const;
  double abs_sum() const;
};

// Scales the kernel to sum 1. Throws usage_error when |sum| < 1e-12 * sum|k| (a kernel that
// sums to ~0, such as a derivative, has no such scaling).
void normalize(kernel& k);

}  // namespace gpuconv::app
