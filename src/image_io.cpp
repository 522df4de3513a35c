#include "image_io.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "atomic_write.hpp"
#include "errors.hpp"
#include "kernel_io.hpp"

namespace gpuconv::app {

namespace fs = std::filesystem;

namespace {

bool ext_in(const fs::path& file, std::initializer_list<const char*> list) {
  const std::string ext = to_lower(file.extension().string());
  return std::any_of(list.begin(), list.end(), [&](const char* e) { return ext == e; });
}

}  // namespace

std::string depth_name(int cv_depth) {
  switch (cv_depth) {
    case CV_8U: return "8-bit";
    case CV_8S: return "8-bit signed";
    case CV_16U: return "16-bit";
    case CV_16S: return "16-bit signed";
    case CV_32S: return "32-bit integer";
    case CV_32F: return "32-bit float";
    case CV_64F: return "64-bit float";
    default: return "depth " + std::to_string(cv_depth);
  }
}

cv::Mat read_image(const fs::path& file) {
  const std::string name = "input '" + file.string() + "'";
  std::error_code ec;
  const auto status = fs::status(file, ec);
  if (!fs::exists(status))
    throw input_error(name + (fs::is_symlink(fs::symlink_status(file, ec)) ? ": dangling symbolic link" : ": no such file"));
  if (fs::is_directory(status)) throw input_error(name + ": is a directory");
  if (::access(file.c_str(), R_OK) != 0) throw input_error(name + ": cannot be read: " + std::strerror(errno));
  cv::Mat img;
  try {
    img = cv::imread(file.string(), cv::IMREAD_UNCHANGED);
  } catch (const cv::Exception& e) {
    throw input_error(name + ": cannot be decoded (" + e.err + ")");
  }
  if (img.empty()) throw input_error(name + ": cannot be read or decoded (unreadable, corrupt or unsupported)");
  if (img.depth() != CV_8U && img.depth() != CV_16U && img.depth() != CV_32F)
    throw input_error(name + ": " + depth_name(img.depth()) + " samples are not supported (8-bit, 16-bit, 32-bit float)");
  if (img.channels() < 1 || img.channels() > 4)
    throw input_error(name + ": " + std::to_string(img.channels()) + " channels are not supported (1 to 4)");
  return img;
}

int output_cv_depth(output_depth d, int input_depth) {
  switch (d) {
    case output_depth::same: return input_depth;
    case output_depth::u8: return CV_8U;
    case output_depth::u16: return CV_16U;
    case output_depth::f32: return CV_32F;
  }
  return input_depth;
}

double alpha_max(int cv_depth) {
  switch (cv_depth) {
    case CV_8U: return 255.0;
    case CV_16U: return 65535.0;
    default: return 1.0;
  }
}

void check_output_format(const fs::path& file, int cv_depth, int channels) {
  const std::string name = "output '" + file.string() + "'";
  if (file.extension().empty())
    throw usage_error(name + ": no extension, so no image format (use .png, .tif, .jpg, ...)");
  if (!cv::haveImageWriter(file.string()))
    throw usage_error(name + ": OpenCV has no writer for '" + file.extension().string() + "' files");
  if (cv_depth == CV_16U && !ext_in(file, {".png", ".tif", ".tiff", ".pgm", ".ppm", ".pnm", ".jp2"}))
    throw usage_error(name + ": the format cannot hold 16-bit samples; use .png or .tif, or --depth 8");
  if (cv_depth == CV_32F && !ext_in(file, {".tif", ".tiff", ".exr", ".pfm"}))
    throw usage_error(name + ": the format cannot hold 32-bit float samples; use .tif, .exr or .pfm, or --depth 8/16");
  if (ext_in(file, {".pfm"}) && channels != 1 && channels != 3)
    throw usage_error(name + ": PFM holds 1 or 3 channels, not " + std::to_string(channels));
}

cv::Mat for_writing(const cv::Mat& image) {
  if (image.channels() != 2) return image;
  std::vector<cv::Mat> ga;
  cv::split(image, ga);
  cv::Mat bgra;
  cv::merge(std::vector<cv::Mat>{ga[0], ga[0], ga[0], ga[1]}, bgra);
  return bgra;
}

std::vector<int> write_params(const fs::path& file, const cv::Mat& image) {
  constexpr int tiff_lzw = 5;  // libtiff's COMPRESSION_LZW
  if (image.depth() == CV_32F && ext_in(file, {".tif", ".tiff"})) return {cv::IMWRITE_TIFF_COMPRESSION, tiff_lzw};
  return {};
}

void write_output(const fs::path& file, const cv::Mat& image, bool overwrite) {
  const cv::Mat m = for_writing(image);
  write_image_atomic(file, m, overwrite, write_params(file, m));
}

}  // namespace gpuconv::app
