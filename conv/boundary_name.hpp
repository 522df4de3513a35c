// The boundary rules by their names (zero, constant, replicate, reflect, reflect101, wrap): the
// spelling the Python package's `boundary=` and gpuconv-bench's --boundary take.
#pragma once
#include <optional>
#include <string>

#include "semantics.hpp"

namespace gpuconv::conv {

// The rule named `name`, or none for any other text.
inline std::optional<boundary> boundary_named(const std::string& name) {
  if (name == "zero") return boundary::zero;
  if (name == "constant") return boundary::constant;
  if (name == "replicate") return boundary::replicate;
  if (name == "reflect") return boundary::reflect;
  if (name == "reflect101") return boundary::reflect101;
  if (name == "wrap") return boundary::wrap;
  return std::nullopt;
}

}  // namespace gpuconv::conv
