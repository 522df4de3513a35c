#include "jpeg_gpu.hpp"

#include <dlfcn.h>
#include <algorithm>

#include <cstdlib>
#include <cstring>
#include <atomic>
#include <chrono>
#include <iostream>
#include <mutex>
#include <thread>
#include <sstream>
#include <stdexcept>

#include <nvjpeg.h>

#include "gpu_convolver.hpp"

namespace gpuconv::pipeline {

namespace {

// The entry points gpuconv uses, resolved from the library at run time.
struct nvjpeg_api {
#define GPUCONV_NVJPEG_FN(name) decltype(&::name) name = nullptr;
  GPUCONV_NVJPEG_FN(nvjpegGetProperty)
  GPUCONV_NVJPEG_FN(nvjpegCreateEx)
  GPUCONV_NVJPEG_FN(nvjpegDestroy)
  GPUCONV_NVJPEG_FN(nvjpegJpegStateCreate)
  GPUCONV_NVJPEG_FN(nvjpegJpegStateDestroy)
  GPUCONV_NVJPEG_FN(nvjpegDecodeBatchedInitialize)
  GPUCONV_NVJPEG_FN(nvjpegDecodeBatched)
  GPUCONV_NVJPEG_FN(nvjpegEncoderStateCreate)
  GPUCONV_NVJPEG_FN(nvjpegEncoderStateDestroy)
  GPUCONV_NVJPEG_FN(nvjpegEncoderParamsCreate)
  GPUCONV_NVJPEG_FN(nvjpegEncoderParamsDestroy)
  GPUCONV_NVJPEG_FN(nvjpegEncoderParamsSetQuality)
  GPUCONV_NVJPEG_FN(nvjpegEncoderParamsSetSamplingFactors)
  GPUCONV_NVJPEG_FN(nvjpegEncoderParamsSetOptimizedHuffman)
  GPUCONV_NVJPEG_FN(nvjpegEncodeImage)
  GPUCONV_NVJPEG_FN(nvjpegEncodeRetrieveBitstream)
  // the decoupled decoder (jpeg_hybrid): optional, resolved apart from the above
  GPUCONV_NVJPEG_FN(nvjpegDecoderCreate)
  GPUCONV_NVJPEG_FN(nvjpegDecoderDestroy)
  GPUCONV_NVJPEG_FN(nvjpegDecoderStateCreate)
  GPUCONV_NVJPEG_FN(nvjpegBufferPinnedCreate)
  GPUCONV_NVJPEG_FN(nvjpegBufferPinnedDestroy)
  GPUCONV_NVJPEG_FN(nvjpegBufferDeviceCreate)
  GPUCONV_NVJPEG_FN(nvjpegBufferDeviceDestroy)
  GPUCONV_NVJPEG_FN(nvjpegStateAttachPinnedBuffer)
  GPUCONV_NVJPEG_FN(nvjpegStateAttachDeviceBuffer)
  GPUCONV_NVJPEG_FN(nvjpegJpegStreamCreate)
  GPUCONV_NVJPEG_FN(nvjpegJpegStreamDestroy)
  GPUCONV_NVJPEG_FN(nvjpegJpegStreamParse)
  GPUCONV_NVJPEG_FN(nvjpegDecodeParamsCreate)
  GPUCONV_NVJPEG_FN(nvjpegDecodeParamsDestroy)
  GPUCONV_NVJPEG_FN(nvjpegDecodeParamsSetOutputFormat)
  GPUCONV_NVJPEG_FN(nvjpegDecodeJpegHost)
  GPUCONV_NVJPEG_FN(nvjpegDecodeJpegTransferToDevice)
  GPUCONV_NVJPEG_FN(nvjpegDecodeJpegDevice)
#undef GPUCONV_NVJPEG_FN
  bool decoupled = false;  // every decoupled entry point resolved
  nvjpegHandle_t handle = nullptr;  // the decoder's and the encoder's; hardware backend where there is one
  const char* backend = "none";
  bool hardware = false;  // the handle's backend is the hardware decoder
  // Decoder states for the process, each used by one thread at a time (creating one costs
  // 0.3-0.9 s on the H100). The first is made with the handle; the others afterwards, in
  // the background loader, one per further decode stage, to keep the hardware decoder busier.
  struct decoder_state {
    nvjpegJpegState_t state = nullptr;
    std::mutex mutex;
    int batch = 0;  // the batch size the state was initialised for
    std::atomic<bool> ready{false};
  };
  static constexpr int max_decoders = 4;
  decoder_state decoders[max_decoders];
};

nvjpeg_api api;
nvjpeg_status status;
// The encoders' time (GPUCONV_BATCH_STATS), summed over threads: in nvjpegEncodeImage's call
// (it returns once the GPU has made the bitstream: 0.45 ms alone on an H100, 12 MP), waiting
// for the stream after it, and retrieving the bitstream into host memory.
std::atomic<long long> encode_call_ns{0}, encode_wait_ns{0}, retrieve_ns{0}, encodes{0};
std::atomic<bool> loaded{false};
// The handle exists (~0.3 s into the load): workers encode on the GPU from then on, while the
// decoder state takes another ~0.35 s.
std::atomic<bool> encoder_up{false};

// GPUCONV_NVJPEG_DEBUG=1: the time of every nvJPEG set-up and work call on std::cerr.
struct debug_timer {
  const char* what;
  int n;
  std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
  static bool on() {
    static const bool v = [] {
      const char* e = std::getenv("GPUCONV_NVJPEG_DEBUG");
      return e && *e == '1';
    }();
    return v;
  }
  ~debug_timer() {
    if (on()) {
      const auto now = std::chrono::steady_clock::now();
      std::cerr << "gpuconv: nvJPEG " << what << (n >= 0 ? " (" + std::to_string(n) + ")" : std::string()) << ": "
                << std::chrono::duration<double, std::milli>(now - t0).count() << " ms, ended "
                << std::chrono::duration<double>(now - process_epoch).count() << " s into the process\n";
    }
  }
  static const std::chrono::steady_clock::time_point process_epoch;  // static initialisation, just before main
};

const std::chrono::steady_clock::time_point debug_timer::process_epoch = std::chrono::steady_clock::now();

void* open_library() {
  std::vector<std::string> names;
  if (const char* env = std::getenv("GPUCONV_NVJPEG_LIBRARY"); env && *env) names.push_back(env);
  names.push_back("libnvjpeg.so.13");
#ifdef GPUCONV_NVJPEG_HINT
  names.push_back(std::string(GPUCONV_NVJPEG_HINT) + "/libnvjpeg.so.13");
#endif
  for (const char* dir : {"/usr/local/cuda/lib64", "/usr/local/cuda/targets/x86_64-linux/lib"})
    names.push_back(std::string(dir) + "/libnvjpeg.so.13");
  for (const auto& n : names)
    if (void* h = ::dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL)) return h;
  return nullptr;
}

std::string status_name(nvjpegStatus_t s) {
  switch (s) {
    case NVJPEG_STATUS_SUCCESS: return "success";
    case NVJPEG_STATUS_NOT_INITIALIZED: return "not initialized";
    case NVJPEG_STATUS_INVALID_PARAMETER: return "invalid parameter";
    case NVJPEG_STATUS_BAD_JPEG: return "bad JPEG";
    case NVJPEG_STATUS_JPEG_NOT_SUPPORTED: return "JPEG not supported";
    case NVJPEG_STATUS_ALLOCATOR_FAILURE: return "allocator failure";
    case NVJPEG_STATUS_EXECUTION_FAILED: return "execution failed";
    case NVJPEG_STATUS_ARCH_MISMATCH: return "architecture mismatch";
    case NVJPEG_STATUS_INTERNAL_ERROR: return "internal error";
    case NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED: return "implementation not supported";
    case NVJPEG_STATUS_INCOMPLETE_BITSTREAM: return "incomplete bitstream";
  }
  return "status " + std::to_string(int(s));
}

void check(nvjpegStatus_t s, const char* call) {
  if (s != NVJPEG_STATUS_SUCCESS) throw std::runtime_error(std::string("nvJPEG: ") + call + ": " + status_name(s));
}

// 3 planes of height x width bytes (B, G, R), pitch width, as nvJPEG describes an image.
nvjpegImage_t bgr_planes_image(const unsigned char* planes, int height, int width) {
  nvjpegImage_t im{};
  const std::size_t plane = std::size_t(height) * width;
  for (int c = 0; c < 3; ++c) {
    im.channel[c] = const_cast<unsigned char*>(planes) + c * plane;
    im.pitch[c] = std::size_t(width);
  }
  return im;
}

void load() {
  debug_timer t{"library load, handles and decoder state", -1};
  void* lib = open_library();
  if (!lib) {
    status.text = "libnvjpeg.so.13 not found";
    return;
  }
  bool all = true;
#define GPUCONV_NVJPEG_RESOLVE(name)                                          \
  api.name = reinterpret_cast<decltype(api.name)>(::dlsym(lib, #name)); \
  all = all && api.name;
  GPUCONV_NVJPEG_RESOLVE(nvjpegGetProperty)
  GPUCONV_NVJPEG_RESOLVE(nvjpegCreateEx)
  GPUCONV_NVJPEG_RESOLVE(nvjpegDestroy)
  GPUCONV_NVJPEG_RESOLVE(nvjpegJpegStateCreate)
  GPUCONV_NVJPEG_RESOLVE(nvjpegJpegStateDestroy)
  GPUCONV_NVJPEG_RESOLVE(nvjpegDecodeBatchedInitialize)
  GPUCONV_NVJPEG_RESOLVE(nvjpegDecodeBatched)
  GPUCONV_NVJPEG_RESOLVE(nvjpegEncoderStateCreate)
  GPUCONV_NVJPEG_RESOLVE(nvjpegEncoderStateDestroy)
  GPUCONV_NVJPEG_RESOLVE(nvjpegEncoderParamsCreate)
  GPUCONV_NVJPEG_RESOLVE(nvjpegEncoderParamsDestroy)
  GPUCONV_NVJPEG_RESOLVE(nvjpegEncoderParamsSetQuality)
  GPUCONV_NVJPEG_RESOLVE(nvjpegEncoderParamsSetSamplingFactors)
  GPUCONV_NVJPEG_RESOLVE(nvjpegEncoderParamsSetOptimizedHuffman)
  GPUCONV_NVJPEG_RESOLVE(nvjpegEncodeImage)
  GPUCONV_NVJPEG_RESOLVE(nvjpegEncodeRetrieveBitstream)
  bool required = all;
  GPUCONV_NVJPEG_RESOLVE(nvjpegDecoderCreate)
  GPUCONV_NVJPEG_RESOLVE(nvjpegDecoderDestroy)
  GPUCONV_NVJPEG_RESOLVE(nvjpegDecoderStateCreate)
  GPUCONV_NVJPEG_RESOLVE(nvjpegBufferPinnedCreate)
  GPUCONV_NVJPEG_RESOLVE(nvjpegBufferPinnedDestroy)
  GPUCONV_NVJPEG_RESOLVE(nvjpegBufferDeviceCreate)
  GPUCONV_NVJPEG_RESOLVE(nvjpegBufferDeviceDestroy)
  GPUCONV_NVJPEG_RESOLVE(nvjpegStateAttachPinnedBuffer)
  GPUCONV_NVJPEG_RESOLVE(nvjpegStateAttachDeviceBuffer)
  GPUCONV_NVJPEG_RESOLVE(nvjpegJpegStreamCreate)
  GPUCONV_NVJPEG_RESOLVE(nvjpegJpegStreamDestroy)
  GPUCONV_NVJPEG_RESOLVE(nvjpegJpegStreamParse)
  GPUCONV_NVJPEG_RESOLVE(nvjpegDecodeParamsCreate)
  GPUCONV_NVJPEG_RESOLVE(nvjpegDecodeParamsDestroy)
  GPUCONV_NVJPEG_RESOLVE(nvjpegDecodeParamsSetOutputFormat)
  GPUCONV_NVJPEG_RESOLVE(nvjpegDecodeJpegHost)
  GPUCONV_NVJPEG_RESOLVE(nvjpegDecodeJpegTransferToDevice)
  GPUCONV_NVJPEG_RESOLVE(nvjpegDecodeJpegDevice)
  api.decoupled = all;
  all = required;
#undef GPUCONV_NVJPEG_RESOLVE
  if (!all) {
    status.text = "libnvjpeg.so.13 lacks entry points gpuconv needs";
    return;
  }
  int major = 0, minor = 0, patch = 0;
  api.nvjpegGetProperty(MAJOR_VERSION, &major);
  api.nvjpegGetProperty(MINOR_VERSION, &minor);
  api.nvjpegGetProperty(PATCH_LEVEL, &patch);
  const std::string version = "nvJPEG " + std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
  // One handle for the decoder and the encoder (0.28 s on an H100). With a second handle for the
  // encoder, created on another thread, the two creations and the decoder state's serialised in
  // about half the runs: nvJPEG's decoder first used 0.91-0.93 s into a 480-photo batch instead
  // of 0.63-0.67 s; with one, 0.63-0.66 s in every run, the encoder's output the same bytes.
  // The encoder is usable as soon as the handle exists, before the decoder state. The hardware
  // decoder exists on A100/H100-class GPUs only; elsewhere its handle fails and the
  // GPU-assisted hybrid backend decodes. GPUCONV_NVJPEG_BACKEND=hybrid forces the latter (for
  // measurements).
  const char* forced = std::getenv("GPUCONV_NVJPEG_BACKEND");
  const bool hybrid_only = forced && std::string(forced) == "hybrid";
  // Chroma upsampled by interpolation, as libjpeg's default "fancy upsampling" does (nvJPEG's
  // default replicates samples: up to 30+ levels from libjpeg at chroma edges); strict
  // bitstream checks, so that a damaged stream is an error (then the CPU decoder reports it).
  unsigned flags = NVJPEG_FLAGS_UPSAMPLING_WITH_INTERPOLATION | NVJPEG_FLAGS_BITSTREAM_STRICT;
  if (const char* f = std::getenv("GPUCONV_NVJPEG_FLAGS")) flags = unsigned(std::strtoul(f, nullptr, 0));
  {
    debug_timer th{"decoder handle", -1};
    if (!hybrid_only &&
        api.nvjpegCreateEx(NVJPEG_BACKEND_HARDWARE, nullptr, nullptr, flags, &api.handle) == NVJPEG_STATUS_SUCCESS) {
      api.backend = "hardware decoder";
      api.hardware = true;
    } else if (api.nvjpegCreateEx(NVJPEG_BACKEND_GPU_HYBRID, nullptr, nullptr, flags, &api.handle) ==
               NVJPEG_STATUS_SUCCESS) {
      api.backend = "GPU hybrid decoder";
    }
    if (api.handle) encoder_up = true;
  }
  // the decoder state all workers share (one at a time): it takes another 0.3-0.5 s
  bool state_ok = false;
  if (api.handle) {
    debug_timer ts{"decoder state", -1};
    state_ok = api.nvjpegJpegStateCreate(api.handle, &api.decoders[0].state) == NVJPEG_STATUS_SUCCESS;
    api.decoders[0].ready = state_ok;
  }
  if (!api.handle || !state_ok) {
    status.text = version + ": no decoder could be created (no usable CUDA device?)";
    return;
  }
  status.available = true;
  status.text = version + ", " + api.backend + ", GPU encoder";
}

std::once_flag once;

void load_once() {
  std::call_once(once, load);
  loaded = true;
}

}  // namespace

const nvjpeg_status& nvjpeg_library() {
  load_once();
  return status;
}

namespace {

// The background loader's thread: joined at exit, so that the process never ends while nvJPEG
// is being set up (unless it ends by std::_Exit), or by nvjpeg_retire_decoders' thread.
struct loader_thread {
  std::mutex mutex;
  std::thread thread;
  void join() {
    std::lock_guard lock(mutex);
    if (thread.joinable()) thread.join();
  }
  ~loader_thread() { join(); }
} background_loader;
std::atomic<bool> retired{false};  // nvjpeg_retire_decoders was called

}  // namespace

void nvjpeg_load_in_background(int decoder_states, int hardware_decoder_states) {
  static std::once_flag started;
  std::call_once(started, [decoder_states, hardware_decoder_states] {
    background_loader.thread = std::thread([decoder_states, hardware_decoder_states] {
      prefer_blocking_sync();  // where this thread is the first to need the context
      load_once();
      if (!status.available) return;
      const int states = std::clamp(api.hardware && hardware_decoder_states > 0 ? hardware_decoder_states : decoder_states,
                                    1, nvjpeg_api::max_decoders);
      for (int k = 1; k < states; ++k) {  // the further states, once the first is in use
        debug_timer ts{"further decoder state", k};
        if (api.nvjpegJpegStateCreate(api.handle, &api.decoders[k].state) == NVJPEG_STATUS_SUCCESS)
          api.decoders[k].ready = true;
      }
    });
  });
}

bool nvjpeg_ready() { return loaded && status.available && !retired; }

void nvjpeg_retire_decoders() {
  static std::once_flag once_retired;
  std::call_once(once_retired, [] {
    retired = true;
    if (debug_timer::on()) debug_timer{"decoders retired", -1};
    std::thread([] {
      background_loader.join();  // the further states may still be in the making (a short batch)
      // each state on a thread of its own
      std::vector<std::thread> destroyers;
      for (auto& d : api.decoders)
        destroyers.emplace_back([&d] {
          std::lock_guard lock(d.mutex);
          d.ready = false;
          if (d.state) {
            debug_timer t{"decoder state destroyed", int(&d - api.decoders)};
            api.nvjpegJpegStateDestroy(d.state);
            d.state = nullptr;
          }
          d.batch = 0;
        });
      for (auto& t : destroyers) t.join();
    }).detach();
  });
}

bool nvjpeg_settled() { return loaded; }

bool nvjpeg_encoder_ready() { return encoder_up; }

void nvjpeg_teardown_probe(std::ostream& log) {
  if (!loaded || !status.available) return;
  auto t = std::chrono::steady_clock::now();
  auto lap = [&](const char* what) {
    const auto now = std::chrono::steady_clock::now();
    log << "gpuconv: teardown probe: " << what << " " << std::chrono::duration<double, std::milli>(now - t).count()
        << " ms\n";
    t = now;
  };
  for (auto& d : api.decoders)
    if (d.state) api.nvjpegJpegStateDestroy(d.state);
  lap("nvJPEG decoder states destroyed");
  api.nvjpegDestroy(api.handle);
  lap("nvJPEG handle destroyed");
}

const char* jpeg_gpu::decoder_backend() { return api.backend; }

bool jpeg_gpu::hardware_decoder() { return api.hardware; }

std::string nvjpeg_statistics() {
  std::ostringstream o;
  o << "nvJPEG encodes " << encodes << ", seconds summed over threads: encode call " << encode_call_ns * 1e-9
    << ", wait " << encode_wait_ns * 1e-9 << ", bitstream to host " << retrieve_ns * 1e-9;
  return o.str();
}

struct jpeg_gpu::state {
  cudaStream_t stream;
  nvjpegEncoderState_t encoder = nullptr;
  nvjpegEncoderParams_t params = nullptr;
  int quality = -1;
  // The bitstream's way to host memory: page-locked, so that the copy is one DMA rather than
  // the driver's staging through its own buffers (H100, 12 MP at quality 95, ~4 MB: 1.9 -> 1.2 ms
  // an image with three workers, the copy into the caller's vector included).
  void* pinned = nullptr;
  std::size_t pinned_size = 0;
  ~state() {
    if (params) api.nvjpegEncoderParamsDestroy(params);
    if (encoder) api.nvjpegEncoderStateDestroy(encoder);
    if (pinned) cudaFreeHost(pinned);
  }
  // page-locked room for `n` bytes, or nullptr (then the bitstream goes to pageable memory)
  unsigned char* pinned_room(std::size_t n) {
    if (n > pinned_size) {
      if (pinned) cudaFreeHost(pinned);
      pinned = nullptr;
      pinned_size = 0;
      const std::size_t want = n + n / 4;  // room for the next images' slightly larger bitstreams
      if (cudaHostAlloc(&pinned, want, cudaHostAllocDefault) != cudaSuccess) {
        (void)cudaGetLastError();
        pinned = nullptr;
        return nullptr;
      }
      pinned_size = want;
    }
    return static_cast<unsigned char*>(pinned);
  }
};

jpeg_gpu::jpeg_gpu(cudaStream_t stream) : s_(std::make_unique<state>()) {
  // an encoder needs only the handle (no wait for the decoder state)
  if (!encoder_up && !nvjpeg_library().available)
    throw std::runtime_error("nvJPEG is not available: " + nvjpeg_library().text);
  s_->stream = stream;
}

jpeg_gpu::~jpeg_gpu() = default;

bool jpeg_gpu::decode(const std::vector<input>& batch) {
  if (batch.empty()) return true;
  if (!nvjpeg_ready()) return false;  // a worker that came up with the encoder: the CPU decodes
  const int n = int(batch.size());
  // a free decoder state, else wait for the first
  nvjpeg_api::decoder_state* d = nullptr;
  std::unique_lock<std::mutex> lock;
  for (auto& candidate : api.decoders)
    if (candidate.ready && (lock = std::unique_lock(candidate.mutex, std::try_to_lock))) {
      d = &candidate;
      break;
    }
  if (!d) {
    d = &api.decoders[0];
    lock = std::unique_lock(d->mutex);
  }
  if (d->batch != n) {
    debug_timer t{"batched decode initialised", n};
    if (api.nvjpegDecodeBatchedInitialize(api.handle, d->state, n, 1, NVJPEG_OUTPUT_BGR) !=
        NVJPEG_STATUS_SUCCESS) {
      d->batch = 0;
      return false;
    }
    d->batch = n;
  }
  std::vector<const unsigned char*> data(n);
  std::vector<std::size_t> sizes(n);
  std::vector<nvjpegImage_t> out(n);
  for (int i = 0; i < n; ++i) {
    data[i] = batch[i].data;
    sizes[i] = batch[i].size;
    out[i] = bgr_planes_image(batch[i].planes, batch[i].height, batch[i].width);
  }
  debug_timer t{"batched decode", n};
  const nvjpegStatus_t st = api.nvjpegDecodeBatched(api.handle, d->state, data.data(), sizes.data(),
                                                    out.data(), s_->stream);
  const cudaError_t sync = cudaStreamSynchronize(s_->stream);  // the state is free again once this returns
  if (st != NVJPEG_STATUS_SUCCESS) {
    d->batch = 0;  // a failed batch needs the state re-initialised
    return false;
  }
  if (sync != cudaSuccess) throw std::runtime_error(std::string("nvJPEG decode: ") + cudaGetErrorString(sync));
  return true;
}

encoded_jpeg jpeg_gpu::encode_bgr(const unsigned char* planes, int height, int width, int quality) {
  debug_timer t{"encode", -1};
  if (!s_->encoder) {
    debug_timer ts{"encoder state", -1};
    check(api.nvjpegEncoderStateCreate(api.handle, &s_->encoder, s_->stream), "nvjpegEncoderStateCreate");
    check(api.nvjpegEncoderParamsCreate(api.handle, &s_->params, s_->stream), "nvjpegEncoderParamsCreate");
    check(api.nvjpegEncoderParamsSetSamplingFactors(s_->params, NVJPEG_CSS_420, s_->stream),
          "nvjpegEncoderParamsSetSamplingFactors");
    check(api.nvjpegEncoderParamsSetOptimizedHuffman(s_->params, 0, s_->stream), "nvjpegEncoderParamsSetOptimizedHuffman");
  }
  if (s_->quality != quality) {
    check(api.nvjpegEncoderParamsSetQuality(s_->params, quality, s_->stream), "nvjpegEncoderParamsSetQuality");
    s_->quality = quality;
  }
  const nvjpegImage_t src = bgr_planes_image(planes, height, width);
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  check(api.nvjpegEncodeImage(api.handle, s_->encoder, s_->params, &src, NVJPEG_INPUT_BGR, width, height,
                              s_->stream),
        "nvjpegEncodeImage");
  const auto t1 = clock::now();
  std::size_t length = 0;
  check(api.nvjpegEncodeRetrieveBitstream(api.handle, s_->encoder, nullptr, &length, s_->stream),
        "nvjpegEncodeRetrieveBitstream");
  if (cudaStreamSynchronize(s_->stream) != cudaSuccess) throw std::runtime_error("nvJPEG encode: stream failed");
  const auto t2 = clock::now();
  encoded_jpeg e;
  unsigned char* pinned = s_->pinned_room(length);
  if (!pinned) e.bytes.resize(length);
  check(api.nvjpegEncodeRetrieveBitstream(api.handle, s_->encoder, pinned ? pinned : e.bytes.data(), &length,
                                          s_->stream),
        "nvjpegEncodeRetrieveBitstream");
  if (cudaStreamSynchronize(s_->stream) != cudaSuccess) throw std::runtime_error("nvJPEG encode: stream failed");
  if (pinned)
    e.bytes.assign(pinned, pinned + length);
  else
    e.bytes.resize(length);
  const auto t3 = clock::now();
  auto ns = [](clock::time_point a, clock::time_point b) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(b - a).count();
  };
  encode_call_ns += ns(t0, t1);
  encode_wait_ns += ns(t1, t2);
  retrieve_ns += ns(t2, t3);
  ++encodes;
  return e;
}

struct jpeg_hybrid::state {
  cudaStream_t stream;
  nvjpegJpegDecoder_t decoder = nullptr;
  nvjpegJpegState_t js = nullptr;
  nvjpegBufferPinned_t pinned = nullptr;
  nvjpegBufferDevice_t device = nullptr;
  nvjpegJpegStream_t jstream = nullptr;
  nvjpegDecodeParams_t params = nullptr;
  ~state() {
    if (params) api.nvjpegDecodeParamsDestroy(params);
    if (jstream) api.nvjpegJpegStreamDestroy(jstream);
    if (js) api.nvjpegJpegStateDestroy(js);
    if (device) api.nvjpegBufferDeviceDestroy(device);
    if (pinned) api.nvjpegBufferPinnedDestroy(pinned);
    if (decoder) api.nvjpegDecoderDestroy(decoder);
  }
};

jpeg_hybrid::jpeg_hybrid(cudaStream_t stream) : s_(std::make_unique<state>()) {
  if (!nvjpeg_library().available) throw std::runtime_error("nvJPEG is not available: " + nvjpeg_library().text);
  if (!api.decoupled) throw std::runtime_error("nvJPEG: the library lacks the decoupled decoder's entry points");
  debug_timer t{"hybrid decoder state", -1};
  const nvjpegHandle_t h = api.handle;
  s_->stream = stream;
  check(api.nvjpegDecoderCreate(h, NVJPEG_BACKEND_GPU_HYBRID, &s_->decoder), "nvjpegDecoderCreate");
  check(api.nvjpegDecoderStateCreate(h, s_->decoder, &s_->js), "nvjpegDecoderStateCreate");
  check(api.nvjpegBufferPinnedCreate(h, nullptr, &s_->pinned), "nvjpegBufferPinnedCreate");
  check(api.nvjpegBufferDeviceCreate(h, nullptr, &s_->device), "nvjpegBufferDeviceCreate");
  check(api.nvjpegStateAttachPinnedBuffer(s_->js, s_->pinned), "nvjpegStateAttachPinnedBuffer");
  check(api.nvjpegStateAttachDeviceBuffer(s_->js, s_->device), "nvjpegStateAttachDeviceBuffer");
  check(api.nvjpegJpegStreamCreate(h, &s_->jstream), "nvjpegJpegStreamCreate");
  check(api.nvjpegDecodeParamsCreate(h, &s_->params), "nvjpegDecodeParamsCreate");
  check(api.nvjpegDecodeParamsSetOutputFormat(s_->params, NVJPEG_OUTPUT_BGR), "nvjpegDecodeParamsSetOutputFormat");
}

jpeg_hybrid::~jpeg_hybrid() = default;

bool jpeg_hybrid::decode(const jpeg_gpu::input& in) {
  const nvjpegHandle_t h = api.handle;
  nvjpegImage_t out = bgr_planes_image(in.planes, in.height, in.width);
  debug_timer t{"hybrid decode", 1};
  if (api.nvjpegJpegStreamParse(h, in.data, in.size, 0, 0, s_->jstream) != NVJPEG_STATUS_SUCCESS ||
      api.nvjpegDecodeJpegHost(h, s_->decoder, s_->js, s_->params, s_->jstream) != NVJPEG_STATUS_SUCCESS ||
      api.nvjpegDecodeJpegTransferToDevice(h, s_->decoder, s_->js, s_->jstream, s_->stream) != NVJPEG_STATUS_SUCCESS ||
      api.nvjpegDecodeJpegDevice(h, s_->decoder, s_->js, &out, s_->stream) != NVJPEG_STATUS_SUCCESS) {
    (void)cudaStreamSynchronize(s_->stream);  // nothing of this image's may still run on the buffer
    return false;
  }
  const cudaError_t sync = cudaStreamSynchronize(s_->stream);
  if (sync != cudaSuccess) throw std::runtime_error(std::string("nvJPEG hybrid decode: ") + cudaGetErrorString(sync));
  return true;
}

}  // namespace gpuconv::pipeline
