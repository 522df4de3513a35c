// Image files through OpenCV: reading with IMREAD_UNCHANGED (8U, 16U, 32F; 1 to 4
// channels, in OpenCV's BGR(A) order, which the layer keeps untouched so that files come out
// in the order they went in), the output depth rule, and which formats can hold what.
#pragma once
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <opencv2/core.hpp>

namespace gpuconv::app {

enum class output_depth { same, u8, u16, f32 };

// The largest image gpuconv decodes: 2^28 pixels (16384 x 16384), or $GPUCONV_MAX_PIXELS
// when set to a positive integer. Larger images are refused before decoding where the header
// can be read without decoding (PNG, JPEG, TIFF, BMP), else right after decoding (OpenCV's
// own limit, 2^30 pixels, still applies first).
long long max_image_pixels();

// Width and height from the file's header, without decoding the pixels: PNG (IHDR), JPEG
// (the SOF marker), TIFF (the first IFD), BMP; nullopt for other formats or a header that
// cannot be parsed (the decoder then decides).
struct image_size {
  long long width = 0, height = 0;
};
std::optional<image_size> peek_image_size(const std::filesystem::path& file);

// Decoder messages: libpng and libjpeg print errors and warnings on the C `stderr`, which
// would break gpuconv's one-line errors. capture_decoder_messages() (called once by main)
// points `stderr` at a stream that keeps them per thread instead (std::cerr keeps the real
// stderr); read_image then appends the decoder's words to its error, and refuses a JPEG that
// libjpeg calls truncated or corrupt ("Premature end of JPEG file", "Corrupt JPEG data"),
// which it would otherwise decode with the missing part filled with gray.
// GPUCONV_DECODER_MESSAGES=1 leaves them on stderr as they come.
void capture_decoder_messages();

// The checks before any byte is decoded: the file exists, is no directory, can be read, is
// not empty, and its header (where readable) claims no more than max_image_pixels(). Throws
// input_error whose message starts with `name` ("input 'a.png'").
void check_before_decoding(const std::filesystem::path& file, const std::string& name);

// `text` as one line: newlines become "; ", trailing separators dropped.
std::string one_line(std::string text);

// What the decoders printed on this thread (capture_decoder_messages) since the last call, as
// one line, and forgets it.
std::string take_decoder_messages();

// Throws input_error naming the file when it cannot be read or decoded, is larger than
// max_image_pixels() (naming the size), or holds a depth or channel count outside
// 8U/16U/32F x 1..4 channels.
cv::Mat read_image(const std::filesystem::path& file);

// The same checks as read_image before decoding (existence, readability, empty file, the
// pixel limit from the header), then the file's bytes, undecoded (for the GPU's JPEG decoder;
// a file it refuses goes through read_image, so that libjpeg reports damage as always).
std::vector<unsigned char> read_image_bytes(const std::filesystem::path& file);

// OpenCV depth (CV_8U, CV_16U, CV_32F) of the output for an input of depth `input_depth`.
int output_cv_depth(output_depth d, int input_depth);

// The value of an opaque alpha in the stored units of `cv_depth`: 255, 65535, 1.0 for float.
double alpha_max(int cv_depth);

// Throws usage_error when the format chosen by the extension of `file` cannot hold
// `cv_depth` (16-bit needs PNG, TIFF, PNM or JPEG 2000; float needs TIFF, EXR or PFM) or
// `channels` (PFM: 1 or 3), rather than letting OpenCV convert silently.
void check_output_format(const std::filesystem::path& file, int cv_depth, int channels);

// The image as it goes to cv::imwrite: unchanged, except that a 2-channel (gray + alpha)
// image becomes BGRA (gray copied to B, G, R): cv::imwrite takes 1, 3 or 4 channels only.
cv::Mat for_writing(const cv::Mat& image);

// Encoder settings of the outputs (--quality, --png-level).
struct codec_options {
  int jpeg_quality = 95;  // OpenCV's default
  // PNG: -1 keeps OpenCV's default, its fastest setting (zlib level 1, RLE strategy, the Sub
  // filter); 0..9 sets the zlib level with zlib's default strategy and libpng's adaptive
  // filters (smaller files, slower: docs/benchmarks.md)
  int png_level = -1;
  // JPEG: encode one image in strips on this many threads (jpeg_strips.hpp; same pixels as one
  // piece, restart markers added); 1 encodes it in one piece, as cv::imwrite does
  int jpeg_threads = 1;
};

// cv::imwrite parameters for `file`: JPEG quality, PNG compression level; float TIFF is
// written with LZW compression, because OpenCV's default for 3-channel float TIFF is SGILOG
// (LogLuv), which is lossy.
std::vector<int> write_params(const std::filesystem::path& file, const cv::Mat& image, const codec_options& codec = {});

// Whether `image` goes to `file` through gpuconv's own baseline TIFF writer (stack_io.hpp's:
// uncompressed, one strip, written from the image's rows with no encoded copy) rather than
// OpenCV's encoder: one channel of 32-bit float in a .tif / .tiff. OpenCV 4.6 writes those
// uncompressed too (it ignores the LZW asked of it for one float channel), but it encodes into
// a buffer it grows as it goes: a 4096^2 image took 0.13-0.19 s to encode on the 2-core CI
// machine, then 0.06 s to write.
bool tiff_written_directly(const std::filesystem::path& file, const cv::Mat& image);

// for_writing + write_params + write_image_atomic: how every output image is written (the
// images of tiff_written_directly by write_tiff_pages).
void write_output(const std::filesystem::path& file, const cv::Mat& image, bool overwrite = true,
                  const codec_options& codec = {});

// for_writing + write_params + cv::imencode: the bytes write_output would write (the images of
// tiff_written_directly: tiff_stack_bytes).
std::vector<unsigned char> encode_output(const std::filesystem::path& file, const cv::Mat& image,
                                         const codec_options& codec = {});

// True for .jpg / .jpeg (any case).
bool is_jpeg_name(const std::filesystem::path& file);
bool is_png_name(const std::filesystem::path& file);

std::string depth_name(int cv_depth);

}  // namespace gpuconv::app
