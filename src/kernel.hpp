// A convolution kernel as the application layer holds it: Kh x Kw row-major floats, the
// layout conv::plan takes, plus where it came from (for messages). A 3D kernel (a PSF stack,
// gaussian3d) has depth > 1: Kd slices of Kh x Kw, the layout conv::plan3d takes; the 2D
// paths refuse it.
#pragma once
#include <string>
#include <vector>

namespace gpuconv::app {

struct kernel {
  int height = 0, width = 0;
  int depth = 1;              // z slices: 1 for every 2D kernel
  std::vector<float> values;  // depth * height * width, slice after slice, each row-major
  std::string source;         // "file 'k.txt'", "named kernel 'gaussian:2'", ...

  double sum() const;
  double abs_sum() const;
};

// Scales the kernel to sum 1. Throws usage_error when |sum| < 1e-12 * sum|k| (a kernel that
// sums to ~0, such as a derivative, has no such scaling).
void normalize(kernel& k);

}  // namespace gpuconv::app
