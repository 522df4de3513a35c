// Volumes in files: multi-page TIFF stacks, one gray page per z slice (ImageJ/Fiji's
// convention). Reading goes through OpenCV (cv::imreadmulti, libtiff: every compression it
// knows); writing through our own baseline TIFF encoder (tiff_stack_bytes: uncompressed, one
// strip per page, little-endian), because OpenCV 4.6 encodes several pages only into a file
// (cv::imwritemulti), and outputs must be encoded in memory to go through
// write_bytes_atomic (a temp file, fsync, rename; write errors reported with their errno).
//
// Rules (README "Volumes"):
// - samples 8-bit, 16-bit or 32-bit float, all pages the same size and depth;
// - one channel per page: a page with several channels (RGB, gray + alpha) is an input_error
//   naming the page (split the channels first; a colour stack has no one PSF per channel here);
// - at most max_image_pixels() voxels in all (2^28, GPUCONV_MAX_PIXELS), checked from the
//   first page's header and the page count before decoding.
#pragma once
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <opencv2/core.hpp>

#include "image_io.hpp"
#include "uninit_vector.hpp"

namespace gpuconv::app {

// D x H x W samples in stored units, as float, z slice after z slice, each row-major
// (values: resize() leaves them unset, uninit_vector.hpp).
struct volume {
  long long depth = 0, height = 0, width = 0;
  int cv_depth = CV_32F;  // the file's sample type (CV_8U, CV_16U, CV_32F)
  uninit_vector<float> values;
  long long voxels() const { return depth * height * width; }
};

// D x H x W samples as the file stores them (8-bit, 16-bit or float), contiguous, z slice after
// z slice: what the stack commands hand the plan where the samples can stay narrow.
struct stored_volume {
  long long depth = 0, height = 0, width = 0;
  int cv_depth = CV_8U;
  uninit_vector<unsigned char> bytes;
  long long voxels() const { return depth * height * width; }
};

// True when `file` starts with a TIFF signature (II*\0 or MM\0*), whatever its extension.
bool is_tiff_file(const std::filesystem::path& file);

// The number of pages of a TIFF file: the directories its chain names (a directory cut off
// by the end of the file counts, so that a damaged stack is read, and reported, as a stack);
// BigTIFF: libtiff's count. 0 when it is not a TIFF. Safe on several threads at once.
int tiff_page_count(const std::filesystem::path& file);

// A stack's D x H x W from its directories (the first page's size, the page count) without
// reading samples, or nothing where the file does not say (not a TIFF, a damaged chain,
// BigTIFF without a readable first page): --device auto's 3D rule.
struct stack_shape {
  long long depth = 0, height = 0, width = 0;
};
std::optional<stack_shape> peek_stack_shape(const std::filesystem::path& file);

// A TIFF with two or more pages: the CLI's 3D path.
bool is_stack_file(const std::filesystem::path& file);

// Reads every page. `role` starts the messages: "input 'a.tif'", "PSF stack 'p.tif'".
// Throws input_error (exit 3) for a missing, empty, unreadable, truncated or corrupt file,
// pages of different sizes or depths, multi-channel pages, other depths, and a stack above
// the voxel limit.
volume read_stack(const std::filesystem::path& file, const std::string& role);
// The same checks and errors; the samples as stored.
stored_volume read_stack_stored(const std::filesystem::path& file, const std::string& role);
// True where read_stack_stored copies the samples straight from the file's strips (uncompressed
// pages of one gray sample, BlackIsZero, whole-row strips, all of one size and type; either byte
// order) instead of decoding the pages through OpenCV; the samples are the same either way.
bool stack_reads_raw(const std::filesystem::path& file);
// The samples as float, in stored units (read_stack = to_float(read_stack_stored)).
volume to_float(const stored_volume& v);

// Baseline TIFF bytes of `pages` (all of one size, one channel, CV_8U / CV_16U / CV_32F):
// uncompressed, one strip per page, BlackIsZero, SampleFormat 1 (unsigned) or 3 (float).
// Throws output_error naming `file` for mixed pages or a file over 4 GiB (classic TIFF's
// offsets are 32-bit).
std::vector<unsigned char> tiff_stack_bytes(const std::vector<cv::Mat>& pages, const std::filesystem::path& file);

// The volume's values as pages of `cv_depth`: out = scale * v + offset, then for 8/16-bit
// rounded half to even (cvRound) and saturated; `clipped` counts the voxels outside the range
// (NaN included). Float pages are not rounded; with scale 1 and offset 0 they are views of
// v's values (no copy), valid while v is.
std::vector<cv::Mat> volume_pages(const volume& v, int cv_depth, double scale, double offset, long long& clipped);

// tiff_stack_bytes' TIFF written atomically from where the pages' samples lie
// (write_spans_atomic: no copy of the samples); returns the file's size in bytes.
std::uint64_t write_tiff_pages(const std::filesystem::path& file, const std::vector<cv::Mat>& pages, bool overwrite = true);

// Throws usage_error unless `file` ends in .tif or .tiff: stacks are written as TIFF only.
void check_stack_output(const std::filesystem::path& file);

// The TIFF of samples already in their output type, written atomically from where they lie
// (write_spans_atomic: the directories and the pages' samples, no copy of the whole file).
void write_stack_stored(const std::filesystem::path& file, const stored_volume& v);

// volume_pages, then written as write_stack_stored writes; returns the clipped voxel count.
long long write_stack(const std::filesystem::path& file, const volume& v, int cv_depth, double scale = 1,
                      double offset = 0);

}  // namespace gpuconv::app
