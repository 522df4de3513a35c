// Output files appear whole or not at all. The image is encoded in memory by cv::imencode
// (the codec picked by the extension) or by the GPU's JPEG encoder, written with write(2) into a temp file in the
// output's directory, `.NAME.gpuconv-tmp-PID-N.EXT`, every short or failed write reported
// with its errno (ENOSPC, EFBIG, EROFS, ...), fsync'ed, then moved onto the output name:
// rename(2) when overwriting is allowed, link(2) + unlink(2) otherwise, so that a file that
// appeared in the meantime is never replaced. On any failure, or when an interrupt arrived
// before the move, the temp file is removed and output_error is thrown.
#pragma once
#include <cstddef>
#include <filesystem>
#include <vector>

#include <opencv2/core.hpp>

namespace gpuconv::app {

void write_image_atomic(const std::filesystem::path& out, const cv::Mat& image, bool overwrite = true,
                        const std::vector<int>& params = {});
// The same for bytes already encoded (the GPU's JPEG encoder). `despite_interrupt`: written
// even after SIGINT/SIGTERM (the batch's --summary, which reports the interrupted run).
void write_bytes_atomic(const std::filesystem::path& out, const std::vector<unsigned char>& bytes, bool overwrite = true,
                        bool despite_interrupt = false);

// The same for bytes in several places, written in order (writev): a TIFF stack's directories
// and its pages' samples where they lie, without one buffer holding them all.
struct byte_span {
  const unsigned char* data;
  std::size_t bytes;
};
void write_spans_atomic(const std::filesystem::path& out, const std::vector<byte_span>& spans, bool overwrite = true,
                        bool despite_interrupt = false);

// True for names write_image_atomic uses for its temp files (tests look for leftovers).
bool is_temp_name(const std::filesystem::path& file);

}  // namespace gpuconv::app
