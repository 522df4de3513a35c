// Kernel files: text kernels, PSF images and the resolution of the KERNEL argument.
#include "kernel_io.hpp"

#include <algorithm>
#include <cctype>
#include <cfloat>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <optional>

#include <opencv2/imgcodecs.hpp>

#include "errors.hpp"
#include "named_kernels.hpp"
#include "stack_io.hpp"

namespace gpuconv::app {

namespace fs = std::filesystem;

double kernel::sum() const {
  double s = 0;
  for (float v : values) s += v;
  return s;
}

double kernel::abs_sum() const {
  double s = 0;
  for (float v : values) s += std::abs(v);
  return s;
}

void normalize(kernel& k) {
  const double s = k.sum();
  if (!(std::abs(s) >= 1e-12 * k.abs_sum()) || s == 0)
    throw usage_error(k.source + ": kernel sums to ~0 (" + std::to_string(s) + "), cannot --normalize");
  for (float& v : k.values) v = static_cast<float>(v / s);
}

std::string to_lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return s;
}

std::optional<double> parse_number(const std::string& token) {
  const char* first = token.data();
  const char* last = first + token.size();
  if (first != last && *first == '+') {
    ++first;
    if (first != last && *first == '-') return std::nullopt;  // "+-1"
  }
  double v = 0;
  const auto [end, ec] = std::from_chars(first, last, v);
  if (ec == std::errc::result_out_of_range && end == last) {
    // overflow: a finite value beyond the float range (reported as such); underflow: strtod's
    // tiny or zero value (the token is a well-formed number)
    const double strtod_value = std::strtod(token.c_str(), nullptr);
    if (std::isinf(strtod_value)) return std::copysign(DBL_MAX, strtod_value);
    return strtod_value;
  }
  if (ec != std::errc() || end != last) return std::nullopt;
  return v;
}

kernel parse_text_kernel(std::istream& in, const std::string& name) {
  kernel k;
  k.source = "kernel file '" + name + "'";
  std::string line;
  int line_no = 0, width_line = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (const auto hash = line.find('#'); hash != std::string::npos) line.erase(hash);
    std::vector<float> row;
    std::size_t pos = 0;
    const char* separators = " \t,\r\f\v";
    while ((pos = line.find_first_not_of(separators, pos)) != std::string::npos) {
      const std::size_t end = std::min(line.find_first_of(separators, pos), line.size());
      const std::string token = line.substr(pos, end - pos);
      pos = end;
      const auto where = k.source + ", line " + std::to_string(line_no) + ": '" + token + "'";
      const auto v = parse_number(token);
      if (!v) throw input_error(where + " is not a number");
      if (std::isnan(*v) || std::isinf(*v)) throw input_error(where + " is not a finite number");
      if (std::abs(*v) > FLT_MAX) throw input_error(where + " is outside the float range");
      row.push_back(static_cast<float>(*v));
    }
    if (row.empty()) continue;  // blank or comment-only line
    if (k.height == 0) {
      k.width = static_cast<int>(row.size());
      width_line = line_no;
    } else if (static_cast<int>(row.size()) != k.width) {
      throw input_error(k.source + ", line " + std::to_string(line_no) + ": " + std::to_string(row.size()) +
                        " values, expected " + std::to_string(k.width) + " (as on line " +
                        std::to_string(width_line) + ")");
    }
    k.values.insert(k.values.end(), row.begin(), row.end());
    ++k.height;
  }
  if (in.bad()) throw input_error(k.source + ": read error");
  if (k.height == 0) throw input_error(k.source + ": no kernel values (empty, or only comments)");
  return k;
}

kernel read_text_kernel(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw input_error("kernel file '" + file.string() + "': cannot be opened");
  return parse_text_kernel(in, file.string());
}

bool is_image_extension(const fs::path& file) {
  static const char* const known[] = {".png", ".jpg", ".jpeg", ".jpe", ".tif", ".tiff", ".bmp", ".dib", ".pgm",
                                      ".ppm", ".pbm", ".pnm", ".pfm", ".exr", ".hdr", ".pic", ".webp", ".jp2",
                                      ".sr",  ".ras"};
  const std::string ext = to_lower(file.extension().string());
  return std::any_of(std::begin(known), std::end(known), [&](const char* e) { return ext == e; });
}

namespace {

// A PSF conserves flux: scaled to sum 1 (input_error when it sums to ~0).
kernel normalised_psf(kernel k) {
  const double s = k.sum();
  if (!(std::abs(s) >= 1e-12 * k.abs_sum()) || s == 0)
    throw input_error(k.source + ": sums to ~0, cannot be normalised to sum 1");
  for (float& v : k.values) v = static_cast<float>(v / s);
  return k;
}

}  // namespace

kernel read_psf_image(const fs::path& file) {
  kernel k;
  k.source = "PSF image '" + file.string() + "'";
  cv::Mat img;
  try {
    img = cv::imread(file.string(), cv::IMREAD_GRAYSCALE | cv::IMREAD_ANYDEPTH);
  } catch (const cv::Exception& e) {
    throw input_error(k.source + ": cannot be decoded (" + e.err + ")");
  }
  if (img.empty()) throw input_error(k.source + ": cannot be read or decoded");
  cv::Mat f;
  img.convertTo(f, CV_32F);  // stored units, no scaling
  k.height = f.rows;
  k.width = f.cols;
  k.values.reserve(std::size_t(f.rows) * f.cols);
  for (int y = 0; y < f.rows; ++y) {
    const float* row = f.ptr<float>(y);
    for (int x = 0; x < f.cols; ++x) {
      if (!std::isfinite(row[x]))
        throw input_error(k.source + ": pixel (row " + std::to_string(y) + ", col " + std::to_string(x) +
                          ") is not finite");
      k.values.push_back(row[x]);
    }
  }
  return normalised_psf(std::move(k));
}

kernel read_psf_stack(const fs::path& file) {
  const std::string source = "PSF stack '" + file.string() + "'";
  volume v = read_stack(file, source);
  kernel k;
  k.source = source;
  k.depth = int(v.depth);
  k.height = int(v.height);
  k.width = int(v.width);
  for (std::size_t i = 0; i < v.values.size(); ++i)
    if (!std::isfinite(v.values[i])) {
      const std::size_t plane = std::size_t(v.height * v.width);
      throw input_error(source + ": voxel (page " + std::to_string(i / plane + 1) + ", row " +
                        std::to_string(i % plane / v.width) + ", col " + std::to_string(i % v.width) +
                        ") is not finite");
    }
  k.values.assign(v.values.begin(), v.values.end());
  return normalised_psf(std::move(k));
}

kernel resolve_kernel(const std::string& arg) {
  kernel k = resolve_volume_kernel(arg);
  if (k.depth > 1)
    throw usage_error(k.source + " is 3D (" + std::to_string(k.width) + " x " + std::to_string(k.height) + " x " +
                      std::to_string(k.depth) + "); 3D kernels apply to stacks (multi-page TIFF inputs)");
  return k;
}

kernel resolve_volume_kernel(const std::string& arg) {
  std::error_code ec;
  const fs::path file(arg);
  if (!arg.empty() && fs::is_directory(file, ec))
    throw input_error("kernel '" + arg + "': is a directory, not a kernel file");
  if (!arg.empty() && fs::is_regular_file(file, ec)) {
    if (!is_image_extension(file)) return read_text_kernel(file);
    return is_stack_file(file) ? read_psf_stack(file) : read_psf_image(file);
  }
  if (auto named = make_named_kernel(arg)) return std::move(*named);
  throw input_error("kernel '" + arg + "': no such file and not a named kernel (see `gpuconv kernels`)");
}

}  // namespace gpuconv::app
