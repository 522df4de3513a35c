// libFuzzer target: the text-kernel parser (src/kernel_io.cpp, parse_text_kernel).
// Any input must either give a well-formed kernel (height x width finite floats) or throw
// gpuconv::app::error (input_error); anything else (a crash, a sanitizer report, another
// exception, a malformed kernel) is a finding. normalize() is exercised on every kernel
// (it may throw usage_error for a zero-sum kernel, never anything else).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string>

#include "errors.hpp"
#include "kernel_io.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace gpuconv::app;
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  kernel k;
  try {
    k = parse_text_kernel(in, "fuzz.txt");
  } catch (const error& e) {
    if (e.code() != exit_input) std::abort();
    return 0;
  }
  if (k.height <= 0 || k.width <= 0) std::abort();
  if (k.values.size() != std::size_t(k.height) * std::size_t(k.width)) std::abort();
  for (float v : k.values)
    if (!std::isfinite(v)) std::abort();
  try {
    normalize(k);
    for (float v : k.values)
      if (!std::isfinite(v)) std::abort();
  } catch (const error& e) {
    if (e.code() != exit_usage) std::abort();
  }
  return 0;
}
