// Built against the installed package only: the headers as <gpuconv/...>, the libraries
// through find_package(gpuconv). A 'same' 3 x 3 box convolution on the CPU backend, checked
// against the sum it must give; exit 0 when right.
#include <cmath>
#include <cstdio>
#include <vector>

#include <gpuconv/conv/plan.hpp>
#include <gpuconv/gpuconv.hpp>

int main() {
  const int h = 9, w = 11;
  std::vector<float> image(h * w), out(h * w);
  for (int i = 0; i < h * w; ++i) image[i] = float(i % 7);
  const std::vector<float> box(9, 1.f / 9);
  gpuconv::conv::plan_options o;
  o.device = gpuconv::conv::backend::cpu;
  o.semantics.border = gpuconv::conv::boundary::zero;
  gpuconv::conv::plan p(h, w, 1, box.data(), 3, 3, o);
  p.execute(image.data(), out.data());
  double expected = 0;
  for (int y = 3; y <= 5; ++y)
    for (int x = 4; x <= 6; ++x) expected += image[y * w + x] / 9.0;
  const double got = out[4 * w + 5];
  std::printf("consumer: out(4, 5) = %.6f, expected %.6f\n", got, expected);
  return std::fabs(got - expected) < 1e-4 ? 0 : 1;
}
