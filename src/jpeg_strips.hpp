// One JPEG encoded on several threads: the image is cut into horizontal strips whose heights
// are whole MCU rows, each strip is encoded by OpenCV (libjpeg) with a restart marker after
// every MCU row, and the strips' entropy-coded segments are joined under the first strip's
// headers (frame height patched, restart markers renumbered RST0..RST7 in sequence).
//
// Restart markers only reset the DC predictors: the quantised coefficients, and so the decoded
// pixels, are those of a one-thread cv::imencode at the same quality (tested); the file
// carries a DRI segment and two bytes per MCU row more. The one-image command uses it, where a
// 12 MP photo's encode (~80 ms on one core) sits on the critical path; a batch encodes many
// images at once and does not need it.
#pragma once
#include <optional>
#include <vector>

#include <opencv2/core.hpp>

namespace gpuconv::app {

// 8-bit, 1 or 3 channels, at JPEG `quality` on up to `threads` threads. Returns nothing when the
// image is not such, is too small to be worth splitting, threads < 2, or OpenCV's output is not
// laid out as expected (the caller then encodes it in one piece); throws what cv::imencode throws.
std::optional<std::vector<unsigned char>> encode_jpeg_strips(const cv::Mat& image, int quality, int threads);

}  // namespace gpuconv::app
