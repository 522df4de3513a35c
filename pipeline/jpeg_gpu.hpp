// JPEG on the GPU with nvJPEG, loaded at run time (dlopen), so that one binary runs with or
// without it: libnvjpeg.so.13 from the loader's path, $GPUCONV_NVJPEG_LIBRARY, the CUDA
// Toolkit's lib64, or the directory CMake found it in. Only nvjpeg.h is needed to build.
//
// Decoding: batches of baseline (sequential, 8-bit, Huffman) 3-component JPEGs into planar
// BGR in device memory, on the hardware decoder where the GPU has one (A100, H100:
// NVJPEG_BACKEND_HARDWARE), else the GPU-assisted hybrid backend; beside the hardware decoder's
// batches, single images on the decoupled GPU-hybrid decoder (jpeg_hybrid). Anything else (progressive,
// gray, CMYK, 12-bit, arithmetic coding, a stream without its end marker, a stray marker in
// the entropy-coded data, or a batch nvJPEG refuses) is left to the CPU decoder (OpenCV),
// which gives the same pixels and errors as before.
// Encoding: planar BGR in device memory to baseline JPEG, 4:2:0 chroma, standard Huffman
// tables (OpenCV's defaults), at a given quality.
#pragma once
#include <cstddef>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "jpeg_header.hpp"

namespace gpuconv::pipeline {

// Whether nvJPEG could be loaded and what it is ("nvJPEG 13.3.2, hardware decoder"), or
// why not ("libnvjpeg.so.13 not found"); loads on the first call (thread-safe).
struct nvjpeg_status {
  bool available = false;
  std::string text;
};
const nvjpeg_status& nvjpeg_library();
// Starts loading nvJPEG on a thread of its own (its handles take ~0.5 s to create on an
// H100), with `decoder_states` decoder states (1..4, for as many threads decoding at once);
// nvjpeg_ready() says, without waiting, whether it is loaded and available, nvjpeg_settled()
// whether loading has ended (available or not).
// `hardware_decoder_states`, when not 0, replaces `decoder_states` where the backend is the
// hardware decoder (known once loaded): the further states are made only as they are needed.
void nvjpeg_load_in_background(int decoder_states = 2, int hardware_decoder_states = 0);
bool nvjpeg_ready();
bool nvjpeg_settled();
// Whether nvJPEG's handle is up, without waiting: it comes ~0.35 s before the decoder state
// (nvjpeg_ready). jpeg_gpu::encode_bgr works from then on; decode needs nvjpeg_ready().
bool nvjpeg_encoder_ready();
// The process will decode no more JPEGs with jpeg_gpu (it is about to end): the decoder states
// are destroyed on a thread of their own from now on (the hardware decoder's take 0.26-0.39 s
// on the H100, which the exit would otherwise spend), and nvjpeg_ready() is false. The handle
// and with it the encoder and jpeg_hybrid stay.
void nvjpeg_retire_decoders();
// Measurements only (GPUCONV_TEARDOWN_PROBE=1): destroys the decoder states and the handle,
// timing each on `log`; nothing may use nvJPEG afterwards.
void nvjpeg_teardown_probe(std::ostream& log);

// The encoders' time so far, summed over threads (one line, for GPUCONV_BATCH_STATS).
std::string nvjpeg_statistics();

struct encoded_jpeg {
  std::vector<unsigned char> bytes;
};

// One worker's nvJPEG states on its stream. Not thread-safe: one per worker.
class jpeg_gpu {
 public:
  explicit jpeg_gpu(cudaStream_t stream);  // throws std::runtime_error when nvJPEG is unavailable
  ~jpeg_gpu();
  jpeg_gpu(const jpeg_gpu&) = delete;
  jpeg_gpu& operator=(const jpeg_gpu&) = delete;

  struct input {
    const unsigned char* data;
    std::size_t size;
    unsigned char* planes;  // device: 3 planes of height x width bytes (B, G, R), pitch width
    int height, width;
  };
  // Decodes every input, or returns false (nothing is known to be decoded; the caller falls
  // back to the CPU per file). Waits for the decode to finish.
  bool decode(const std::vector<input>& batch);
  // Encodes planar BGR (3 planes of height x width, pitch width, device memory).
  // Throws std::runtime_error naming the nvJPEG status on failure.
  encoded_jpeg encode_bgr(const unsigned char* planes, int height, int width, int quality);
  // The backend decoding runs on ("hardware" or "GPU hybrid").
  static const char* decoder_backend();
  // Whether that is the hardware decoder (set once nvJPEG's handle exists).
  static bool hardware_decoder();

 private:
  struct state;
  std::unique_ptr<state> s_;
};

// nvJPEG's GPU-hybrid decoder (decoupled phases: Huffman decoding on the calling thread's CPU,
// the rest on the GPU), one image a call, beside the hardware decoder's batches, on the same
// handle (its flags; a handle of its own took another 0.14-0.28 s to create on an H100 and
// decoded no faster). Its state takes 0.04-31 ms to make; usable once nvjpeg_ready(). Its pixels
// differ from the hardware decoder's by at most a few levels (H100, 12 MP photos: 3, mean 0.03).
// Not thread-safe: one per thread.
class jpeg_hybrid {
 public:
  explicit jpeg_hybrid(cudaStream_t stream);  // throws std::runtime_error when it cannot be made
  ~jpeg_hybrid();
  jpeg_hybrid(const jpeg_hybrid&) = delete;
  jpeg_hybrid& operator=(const jpeg_hybrid&) = delete;
  // Decodes one image into in.planes (as jpeg_gpu::decode), or returns false (nothing is known
  // to be decoded). Waits for the decode to finish.
  bool decode(const jpeg_gpu::input& in);

 private:
  struct state;
  std::unique_ptr<state> s_;
};

}  // namespace gpuconv::pipeline
