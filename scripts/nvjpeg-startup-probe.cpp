// Where nvJPEG's start-up goes (issue 11: a JPEG batch's first ~0.9 s waits for it): one process,
// one MODE, the chain gpuconv's batch runs - libnvjpeg loaded with dlopen (as the portable binary
// does), the driver (cuInit), the primary context, the hardware decoder's handle, its first
// decoder state, a first batch of 8 photos, a second state - each step timed from process start.
// MODEs: "default" (the steps one after another, as gpuconv's loader thread runs them),
// "hybrid" (the GPU-hybrid backend's handle and state instead), "early" (dlopen on a thread of
// its own from process start, beside the driver and the context), "parallel" (the handle asked
// for on a second thread as soon as the driver is up, while the first makes the context).
// (An earlier version passed counting allocators to nvjpegCreateEx: nvJPEG 13.0.1 asked them for
// nothing during the handle, the state and the first batch, so the state's time is not its
// buffers' allocation.) A measurement tool, not built by CMake:
//   g++ -O2 -std=c++20 -I/usr/local/cuda/include -o nvjpeg-startup-probe
//       scripts/nvjpeg-startup-probe.cpp -L/usr/local/cuda/lib64 -lcudart -ldl -pthread
//   nvjpeg-startup-probe MODE DIR
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <nvjpeg.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#define CK(x)                                                                  \
  do {                                                                         \
    auto s_ = (x);                                                             \
    if (int(s_) != 0) {                                                        \
      std::fprintf(stderr, "%s:%d %s -> %d\n", __FILE__, __LINE__, #x, int(s_)); \
      std::exit(1);                                                            \
    }                                                                          \
  } while (0)

using clk = std::chrono::steady_clock;
const clk::time_point epoch = clk::now();
double now_ms() { return std::chrono::duration<double, std::milli>(clk::now() - epoch).count(); }

struct api {
  decltype(&nvjpegCreateEx) create = nullptr;
  decltype(&nvjpegJpegStateCreate) state_create = nullptr;
  decltype(&nvjpegDecodeBatchedInitialize) batched_init = nullptr;
  decltype(&nvjpegDecodeBatched) batched = nullptr;
  decltype(&nvjpegGetImageInfo) image_info = nullptr;
  double opened_at = 0, open_ms = 0;
  void open() {
    const double t = now_ms();
    void* lib = dlopen("libnvjpeg.so.13", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      std::fprintf(stderr, "dlopen: %s\n", dlerror());
      std::exit(1);
    }
    create = reinterpret_cast<decltype(create)>(dlsym(lib, "nvjpegCreateEx"));
    state_create = reinterpret_cast<decltype(state_create)>(dlsym(lib, "nvjpegJpegStateCreate"));
    batched_init = reinterpret_cast<decltype(batched_init)>(dlsym(lib, "nvjpegDecodeBatchedInitialize"));
    batched = reinterpret_cast<decltype(batched)>(dlsym(lib, "nvjpegDecodeBatched"));
    image_info = reinterpret_cast<decltype(image_info)>(dlsym(lib, "nvjpegGetImageInfo"));
    opened_at = now_ms();
    open_ms = opened_at - t;
  }
} nv;

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: nvjpeg-startup-probe default|hybrid|early|parallel DIR\n");
    return 2;
  }
  const std::string mode = argv[1];
  std::thread opener;
  if (mode == "early") opener = std::thread([] { nv.open(); });
  std::vector<std::vector<unsigned char>> files;
  for (auto& e : std::filesystem::directory_iterator(argv[2]))
    if (e.path().extension() == ".jpg" && files.size() < 8) {
      std::ifstream in(e.path(), std::ios::binary);
      std::vector<unsigned char> bytes(std::filesystem::file_size(e.path()));
      in.read(reinterpret_cast<char*>(bytes.data()), std::streamsize(bytes.size()));
      files.push_back(std::move(bytes));
    }
  const double t_read = now_ms();
  int n = 0;
  CK(cudaGetDeviceCount(&n));
  const double t_driver = now_ms();
  const unsigned flags = NVJPEG_FLAGS_UPSAMPLING_WITH_INTERPOLATION | NVJPEG_FLAGS_BITSTREAM_STRICT;
  const nvjpegBackend_t backend = mode == "hybrid" ? NVJPEG_BACKEND_GPU_HYBRID : NVJPEG_BACKEND_HARDWARE;
  nvjpegHandle_t handle = nullptr;
  double t_context = 0, t_handle = 0;
  if (mode == "parallel") {
    nv.open();
    std::thread maker([&] {
      // fails harmlessly where nvJPEG's thread made the context first
      if (cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync) != cudaSuccess) (void)cudaGetLastError();
      CK(cudaFree(nullptr));
      t_context = now_ms();
    });
    CK(nv.create(backend, nullptr, nullptr, flags, &handle));
    t_handle = now_ms();
    maker.join();
  } else {
    CK(cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync));
    CK(cudaFree(nullptr));
    t_context = now_ms();
    if (opener.joinable()) opener.join();
    if (!nv.create) nv.open();
    CK(nv.create(backend, nullptr, nullptr, flags, &handle));
    t_handle = now_ms();
  }
  nvjpegJpegState_t state = nullptr;
  CK(nv.state_create(handle, &state));
  const double t_state = now_ms();
  const int batch = int(files.size());
  double t_first = t_state, t_state2 = t_state;
  if (mode != "hybrid" && batch > 0) {
    CK(nv.batched_init(handle, state, batch, 1, NVJPEG_OUTPUT_BGRI));
    cudaStream_t stream;
    CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    std::vector<const unsigned char*> data;
    std::vector<size_t> sizes;
    std::vector<nvjpegImage_t> images(batch);
    for (int i = 0; i < batch; ++i) {
      int comps = 0, w[NVJPEG_MAX_COMPONENT], h[NVJPEG_MAX_COMPONENT];
      nvjpegChromaSubsampling_t ss;
      CK(nv.image_info(handle, files[i].data(), files[i].size(), &comps, &ss, w, h));
      void* out = nullptr;
      CK(cudaMalloc(&out, size_t(w[0]) * h[0] * 3));
      images[i].channel[0] = (unsigned char*)out;
      images[i].pitch[0] = size_t(w[0]) * 3;
      data.push_back(files[i].data());
      sizes.push_back(files[i].size());
    }
    CK(nv.batched(handle, state, data.data(), sizes.data(), images.data(), stream));
    CK(cudaStreamSynchronize(stream));
    t_first = now_ms();
    nvjpegJpegState_t state2 = nullptr;
    CK(nv.state_create(handle, &state2));
    t_state2 = now_ms();
  }
  std::printf("%-8s dlopen %.1f ms (done at %.1f) | driver done %.1f | context done %.1f | handle done %.1f | state done "
              "%.1f | first batch of %d done %.1f | second state done %.1f ms (files read by %.1f)\n",
              mode.c_str(), nv.open_ms, nv.opened_at, t_driver, t_context, t_handle, t_state, batch, t_first, t_state2,
              t_read);
  std::fflush(stdout);
  std::_Exit(0);  // the teardown is not what this probe measures
}
