// Named kernels: `gaussian:2`, `box:5`, `sobel-x`, ... Every one is defined so that the
// default operation (true convolution) gives the conventional result; where the kernel is
// not point-symmetric (sobel-x, sobel-y) the stored matrix is the flip of the usual
// correlation mask, so that convolution with it has the sign of cv::Sobel.
#pragma once
#include <optional>
#include <string>

#include "kernel.hpp"

namespace gpuconv::app {

// The kernel for `spec` ("name" or "name:p1[,p2]"); nullopt when the name is not one of ours.
// Throws usage_error naming the spec for bad parameters (missing, extra, not a number,
// NaN/Inf, out of range, an even gaussian size, ...).
std::optional<kernel> make_named_kernel(const std::string& spec);

// The table printed by `gpuconv kernels`.
std::string named_kernels_help();

}  // namespace gpuconv::app
