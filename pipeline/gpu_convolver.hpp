// One image at a time through the GPU, from stored samples to stored samples: the stage of
// the pipeline that owns a CUDA stream, the plans (plan_cache) and the device and pinned
// buffers of one compute worker. Nothing but the 8/16-bit (or float) samples crosses the
// bus; deinterleave, conversion, premultiplication, the convolution, unpremultiplication,
// scale and offset, rounding, saturation, the clip count and interleaving run on the GPU
// (pixels.hpp).
//
//   upload (pinned, chunked) -> load_planes -> conv::plan::execute_device -> store_planes -> download (pinned, chunked)
//
// The JPEG path skips upload and download: nvJPEG decodes into input_buffer() and encodes
// from output() (jpeg_gpu.hpp). PNGs cross as their scanlines (upload_png: the filters undone
// here) and leave as a zlib stream (download_png_zlib: filtered and deflated here; png_rows.hpp,
// png_deflate.hpp). Not thread-safe: one per worker thread.
#pragma once
#include <cstddef>
#include <memory>
#include <utility>
#include <vector>

#include "fft/device/buffer.hpp"
#include "pixels.hpp"
#include "plan_cache.hpp"
#include "png_deflate.hpp"

namespace gpuconv::pipeline {

// Waits for the GPU (stream and event synchronisation) yield the CPU instead of spinning:
// a batch keeps every core busy decoding and encoding, and a spinning wait takes one from
// them. Call before the CUDA context is created (the first CUDA call that needs it).
void prefer_blocking_sync();

// What the application asks of every image (src/convolve_image.hpp), free of OpenCV.
struct image_rules {
  conv::options semantics;
  float scale = 1, offset = 0;
  alpha_rule alpha = alpha_rule::premultiply;
};

struct gpu_result {
  long long out_h = 0, out_w = 0;
  long long clipped = 0;  // narrow outputs: pixels with a channel rounded outside the range
};

class gpu_convolver {
 public:
  // kernel: kh x kw as it will be applied. `memory_limit` as conv::plan_options (0: default).
  gpu_convolver(std::vector<float> kernel, int kh, int kw, const image_rules& rules, std::size_t memory_limit = 0);
  ~gpu_convolver();
  gpu_convolver(const gpu_convolver&) = delete;
  gpu_convolver& operator=(const gpu_convolver&) = delete;

  cudaStream_t stream() const { return stream_.get(); }
  const image_rules& rules() const { return rules_; }

  // Output size for an h x w input (the plan's geometry).
  std::pair<long long, long long> output_size(long long h, long long w) const;

  // A device buffer of at least `bytes` for the input (valid until the next call).
  void* input_buffer(std::size_t bytes);
  // Copies a host image through pinned staging into input_buffer (asynchronous on stream()
  // except for the host side of the staging, which it waits for chunk by chunk).
  stored_image upload(const void* host, sample type, int height, int width, int channels, layout at);

  // Copies a PNG's scanlines (png_codec.hpp; every row's filter None or Sub) through the pinned
  // staging and undoes their filter on the GPU into input_buffer (interleaved, BGR(A) or gray).
  stored_image upload_png(const void* scanlines, int height, int width, int channels, int depth = 8);

  // Convolves `in` (device memory) into output(), laid out as out_at with samples out_type;
  // waits for the stream to read the clip count.
  gpu_result run(const stored_image& in, sample out_type, layout out_at);
  const void* output() const { return output_.data(); }

  // Copies `bytes` of output() to host memory through pinned staging; waits for it.
  void download(void* host, std::size_t bytes);
  // PNG scanlines of output() (8- or 16-bit as `depth`, interleaved BGR(A) or gray, out_h x
  // out_w, as run() left it) filtered with Sub on the GPU, copied to `host`:
  // png_scanline_bytes(out_h, out_w, channels, depth) bytes; waits for them.
  void download_png(void* host, long long out_h, long long out_w, int channels, int depth = 8);
  // The same scanlines compressed on the GPU (png_deflate.hpp) into a zlib stream for a PNG's
  // IDAT, copied to `zlib`; false where the GPU's code came out incomplete (then nothing was
  // copied: download_png and the CPU's deflate instead). Waits for it.
  bool download_png_zlib(std::vector<unsigned char>& zlib, long long out_h, long long out_w, int channels,
                         int depth = 8);
  // Threads that copy between the pinned staging and the caller's memory (default 1; one
  // thread moves 6-10 GB/s, PCIe ~50).
  void set_copy_threads(int threads) { copy_threads_ = threads < 1 ? 1 : threads; }
  // Downloads through the pinned staging (default) or straight into the caller's memory (the
  // driver's own staging: no pinned allocation; GPUCONV_STAGING=direct or pinned overrides).
  void set_pinned_download(bool pinned) { pinned_download_ = pinned; }
  // Whether downloads go through the pinned staging (the setting, or GPUCONV_STAGING's).
  bool pinned_download() const;

  // Creates the CUDA context and stream work queue now (start-up off the critical path).
  static void warm_up();

 private:
  image_rules rules_;
  plan_cache plans_;
  cuda_stream stream_;
  // the samples' bytes to the device (pinned chunks or direct), asynchronously on stream()
  void copy_up(unsigned char* device, const void* host, std::size_t bytes);
  void copy_down(void* host, const unsigned char* device, std::size_t bytes);

  device_buffer<unsigned char> input_, output_, scanlines_;
  std::unique_ptr<gpu_deflate> deflate_;  // made at the first download_png_zlib
  device_buffer<float> planes_, result_;
  device_buffer<unsigned long long> clipped_;
  pinned_buffer staging_[2];
  int copy_threads_ = 1;
  bool pinned_download_ = true;
  pinned_buffer clipped_host_;
  // a waiting host thread sleeps instead of spinning (cudaEventBlockingSync)
  cuda_event staged_[2]{cuda_event(cudaEventBlockingSync | cudaEventDisableTiming),
                        cuda_event(cudaEventBlockingSync | cudaEventDisableTiming)};
};

}  // namespace gpuconv::pipeline
