// Where nvJPEG's start-up goes (issue 11: the whole command's first ~0.8 s waits for it): one
// process, one MODE, the chain gpuconv's batch runs - the driver (cuInit), the primary context,
// the hardware-decoder handle, its first decoder state, a first batch of 8 photos - each step
// timed from process start; with MODE "log" every allocation nvJPEG asks for (device and
// page-locked, its size and how long it took) is printed, and MODE "arena" serves nvJPEG's
// page-locked requests from one block that another thread allocates while the handle is made.
// A measurement tool, not built by CMake:
//   g++ -O2 -std=c++20 -I/usr/local/cuda/include -o nvjpeg-startup-probe
//       scripts/nvjpeg-startup-probe.cpp -L/usr/local/cuda/lib64 -lnvjpeg -lcudart -pthread
//   nvjpeg-startup-probe MODE DIR [ARENA_MB]      (MODE: default, log, arena, hybrid)
#include <cuda_runtime.h>
#include <nvjpeg.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
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
double ms_since(clk::time_point t) { return std::chrono::duration<double, std::milli>(clk::now() - t).count(); }
double now_ms() { return ms_since(epoch); }

bool logging = false;
std::mutex log_mutex;
struct totals {
  int count = 0;
  double bytes = 0, ms = 0;
} dev_totals, pinned_totals;

void note(const char* kind, totals& t, size_t size, double ms) {
  std::lock_guard lock(log_mutex);
  ++t.count, t.bytes += double(size), t.ms += ms;
  if (logging) std::printf("  %-7s %10.3f MB  %8.3f ms  at %8.1f ms\n", kind, double(size) / 1e6, ms, now_ms());
}

int dev_malloc(void** p, size_t size) {
  const auto t = clk::now();
  const int r = int(cudaMalloc(p, size));
  note("device", dev_totals, size, ms_since(t));
  return r;
}
int dev_free(void* p) { return int(cudaFree(p)); }

// the arena: one page-locked block, handed out front to back (no reuse)
std::atomic<bool> arena_ready{false};
std::thread arena_thread;
char* arena = nullptr;
size_t arena_size = 0, arena_used = 0;

int pinned_malloc(void** p, size_t size, unsigned flags) {
  const auto t = clk::now();
  if (arena_size) {
    if (arena_thread.joinable()) arena_thread.join();
    std::lock_guard lock(log_mutex);
    const size_t need = (size + 4095) / 4096 * 4096;
    if (arena_used + need <= arena_size) {
      *p = arena + arena_used;
      arena_used += need;
      if (logging) std::printf("  arena   %10.3f MB  %8.3f ms  at %8.1f ms\n", double(size) / 1e6, ms_since(t), now_ms());
      return 0;
    }
  }
  const int r = int(cudaHostAlloc(p, size, flags));
  note("pinned", pinned_totals, size, ms_since(t));
  return r;
}
int pinned_free(void* p) {
  if (arena && (char*)p >= arena && (char*)p < arena + arena_size) return 0;
  return int(cudaFreeHost(p));
}

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: nvjpeg-startup-probe default|log|arena|hybrid DIR [ARENA_MB]\n");
    return 2;
  }
  const std::string mode = argv[1];
  logging = mode == "log" || mode == "arena";
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
  CK(cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync));
  CK(cudaFree(nullptr));
  const double t_context = now_ms();
  if (mode == "arena") {
    arena_size = size_t(argc > 3 ? std::atof(argv[3]) : 64) * 1000000 / 4096 * 4096;
    arena_thread = std::thread([] {
      const auto t = clk::now();
      void* p = nullptr;
      CK(cudaHostAlloc(&p, arena_size, cudaHostAllocDefault));
      arena = (char*)p;
      std::printf("  arena block %.1f MB made in %.3f ms (done at %.1f ms)\n", arena_size / 1e6, ms_since(t), now_ms());
    });
  }
  nvjpegDevAllocator_t dev{dev_malloc, dev_free};
  nvjpegPinnedAllocator_t pinned{pinned_malloc, pinned_free};
  const bool custom = mode != "default" && mode != "hybrid";
  const unsigned flags = NVJPEG_FLAGS_UPSAMPLING_WITH_INTERPOLATION | NVJPEG_FLAGS_BITSTREAM_STRICT;
  nvjpegHandle_t handle = nullptr;
  if (logging) std::printf("handle:\n");
  CK(nvjpegCreateEx(mode == "hybrid" ? NVJPEG_BACKEND_GPU_HYBRID : NVJPEG_BACKEND_HARDWARE, custom ? &dev : nullptr,
                    custom ? &pinned : nullptr, flags, &handle));
  const double t_handle = now_ms();
  if (logging) std::printf("state:\n");
  nvjpegJpegState_t state = nullptr;
  CK(nvjpegJpegStateCreate(handle, &state));
  const double t_state = now_ms();
  const int batch = int(files.size());
  double t_first = t_state, t_state2 = t_state;
  if (mode != "hybrid" && batch > 0) {
    if (logging) std::printf("first batch:\n");
    CK(nvjpegDecodeBatchedInitialize(handle, state, batch, 1, NVJPEG_OUTPUT_BGRI));
    cudaStream_t stream;
    CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    std::vector<const unsigned char*> data;
    std::vector<size_t> sizes;
    std::vector<nvjpegImage_t> images(batch);
    for (int i = 0; i < batch; ++i) {
      int comps = 0, w[NVJPEG_MAX_COMPONENT], h[NVJPEG_MAX_COMPONENT];
      nvjpegChromaSubsampling_t ss;
      CK(nvjpegGetImageInfo(handle, files[i].data(), files[i].size(), &comps, &ss, w, h));
      void* out = nullptr;
      CK(cudaMalloc(&out, size_t(w[0]) * h[0] * 3));
      images[i].channel[0] = (unsigned char*)out;
      images[i].pitch[0] = size_t(w[0]) * 3;
      data.push_back(files[i].data());
      sizes.push_back(files[i].size());
    }
    CK(nvjpegDecodeBatched(handle, state, data.data(), sizes.data(), images.data(), stream));
    CK(cudaStreamSynchronize(stream));
    t_first = now_ms();
    if (logging) std::printf("second state:\n");
    nvjpegJpegState_t state2 = nullptr;
    CK(nvjpegJpegStateCreate(handle, &state2));
    t_state2 = now_ms();
  }
  std::printf("%-7s read %.1f | driver %.1f | context %.1f | handle %.1f | state %.1f | first batch of %d %.1f | "
              "second state %.1f ms  (ends at %.1f, %.1f, %.1f, %.1f, %.1f, %.1f)\n",
              mode.c_str(), t_read, t_driver - t_read, t_context - t_driver, t_handle - t_context, t_state - t_handle,
              batch, t_first - t_state, t_state2 - t_first, t_driver, t_context, t_handle, t_state, t_first, t_state2);
  if (custom)
    std::printf("        allocations: device %d, %.1f MB, %.1f ms; page-locked %d, %.1f MB, %.1f ms\n", dev_totals.count,
                dev_totals.bytes / 1e6, dev_totals.ms, pinned_totals.count, pinned_totals.bytes / 1e6, pinned_totals.ms);
  std::fflush(stdout);
  std::_Exit(0);  // the teardown is not what this probe measures
}
