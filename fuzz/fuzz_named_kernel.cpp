// libFuzzer target: the named-kernel parser (src/named_kernels.cpp, make_named_kernel).
// The input is a spec such as "gaussian:2,7". It must give nullopt (not one of ours), a
// well-formed kernel (square, odd side <= 4097, finite float values) or throw
// gpuconv::app::error (usage_error); anything else is a finding.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "errors.hpp"
#include "named_kernels.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace gpuconv::app;
  if (size > 256) return 0;  // specs are short; long inputs only slow the search down
  const std::string spec(reinterpret_cast<const char*>(data), size);
  try {
    const auto k = make_named_kernel(spec);
    if (!k) return 0;
    if (k->height <= 0 || k->width <= 0 || k->height > 4097 || k->width > 4097) std::abort();
    if (k->values.size() != std::size_t(k->height) * std::size_t(k->width)) std::abort();
    for (float v : k->values)
      if (!std::isfinite(v)) std::abort();
  } catch (const error& e) {
    if (e.code() != exit_usage) std::abort();
  }
  return 0;
}
