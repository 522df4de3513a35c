// Kernel files and the KERNEL argument of the CLI.
//
// resolve_kernel(arg) decides, in this order:
//   1. arg names an existing file with an image extension (is_image_extension): a PSF image,
//      read as gray (IMREAD_GRAYSCALE | IMREAD_ANYDEPTH) in its stored units, as float,
//      normalised to sum 1; a TIFF of two or more pages is a 3D PSF stack (read_psf_stack);
//   2. arg names another existing file: a text kernel (parse_text_kernel);
//   3. arg is a named kernel spec (named_kernels.hpp);
//   4. otherwise: input_error "kernel 'X': no such file and not a named kernel".
#pragma once
#include <filesystem>
#include <istream>
#include <optional>
#include <string>

#include "kernel.hpp"

namespace gpuconv::app {

// Text kernel: one row per line, values separated by spaces, tabs or commas (runs of
// separators count as one); '#' starts a comment to the end of the line; blank lines are
// ignored; all rows the same length; any size. Throws input_error naming `name`, the line
// and the token for a ragged row, a token that is not a number, NaN/Inf or a value outside
// the float range, and for a kernel without any value.
kernel parse_text_kernel(std::istream& in, const std::string& name);
kernel read_text_kernel(const std::filesystem::path& file);

// PSF image: gray float in stored units, normalised to sum 1 (input_error when it sums to ~0
// or cannot be read).
kernel read_psf_image(const std::filesystem::path& file);

// PSF stack: a multi-page TIFF (stack_io.hpp's rules), as a kernel of depth = its pages,
// normalised to sum 1 (input_error when it sums to ~0, holds NaN/Inf or cannot be read).
kernel read_psf_stack(const std::filesystem::path& file);

// Extensions (case-insensitive, with the dot) that make a kernel argument an image.
bool is_image_extension(const std::filesystem::path& file);

// The 2D commands' kernel: usage_error for a 3D one (a PSF stack, gaussian3d).
kernel resolve_kernel(const std::string& arg);
// Any kernel, 2D (depth 1) or 3D: the stack commands'.
kernel resolve_volume_kernel(const std::string& arg);

// One number token, locale-independent (std::from_chars), a leading '+' accepted; nullopt
// unless the whole token is a number. Magnitudes beyond double come back as +-DBL_MAX.
std::optional<double> parse_number(const std::string& token);

std::string to_lower(std::string s);

}  // namespace gpuconv::app
