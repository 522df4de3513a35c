// Where a one-image run's CUDA start-up goes: times, in a fresh process, the driver's start
// (cuInit), the primary context, a first allocation, pinned memory, the first kernel launch,
// and nvJPEG's pieces (library handle per backend, encoder state and parameters, the first and
// the second encode of a 12 MP image). A diagnostic for docs/benchmarks.md, not part of the build:
//   nvcc -O2 -o /tmp/probe scripts/cuda-startup-probe.cu -lcuda -lnvjpeg && /tmp/probe
// (run it several times: each run is one cold start). Each line also gives the CPU time the
// step took in user and system mode (getrusage), and the nvJPEG steps run with counting
// allocators: how many device and pinned bytes each step asked for, and the time spent inside
// those allocations (plain cudaMalloc / cudaHostAlloc underneath, as nvJPEG's defaults).
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <cuda.h>
#include <cuda_runtime.h>
#include <nvjpeg.h>

namespace {
using clock_type = std::chrono::steady_clock;
clock_type::time_point last = clock_type::now();
double cpu_user = 0, cpu_sys = 0;
std::atomic<long long> dev_bytes{0}, pin_bytes{0}, dev_calls{0}, pin_calls{0}, alloc_ns{0};
void mark(const char* what) {
  const auto now = clock_type::now();
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  const double u = ru.ru_utime.tv_sec * 1e3 + ru.ru_utime.tv_usec / 1e3;
  const double s = ru.ru_stime.tv_sec * 1e3 + ru.ru_stime.tv_usec / 1e3;
  std::printf("  %-34s %8.1f ms  (cpu user %6.1f sys %6.1f ms", what,
              std::chrono::duration<double, std::milli>(now - last).count(), u - cpu_user, s - cpu_sys);
  if (dev_calls || pin_calls)
    std::printf("; device %lld x %.1f MB, pinned %lld x %.1f MB, %.1f ms in them", dev_calls.load(),
                dev_bytes / 1e6, pin_calls.load(), pin_bytes / 1e6, alloc_ns / 1e6);
  std::printf(")\n");
  dev_bytes = pin_bytes = dev_calls = pin_calls = alloc_ns = 0;
  cpu_user = u;
  cpu_sys = s;
  last = clock_type::now();
}
template <class F>
int timed(F f) {
  const auto t0 = clock_type::now();
  const int r = f();
  alloc_ns += std::chrono::duration_cast<std::chrono::nanoseconds>(clock_type::now() - t0).count();
  return r;
}
int dev_malloc(void** p, size_t n) {
  ++dev_calls;
  dev_bytes += n;
  return timed([&] { return int(cudaMalloc(p, n)); });
}
int dev_free(void* p) { return int(cudaFree(p)); }
int pin_malloc(void** p, size_t n, unsigned flags) {
  ++pin_calls;
  pin_bytes += n;
  return timed([&] { return int(cudaHostAlloc(p, n, flags)); });
}
int pin_free(void* p) { return int(cudaFreeHost(p)); }
nvjpegDevAllocator_t dev_alloc{dev_malloc, dev_free};
nvjpegPinnedAllocator_t pin_alloc{pin_malloc, pin_free};
void check(bool ok, const char* what) {
  if (!ok) {
    std::printf("FAILED: %s\n", what);
    std::exit(1);
  }
}
__global__ void touch(float* p) { p[threadIdx.x] = 1.f; }
}  // namespace

int main() {
  mark("(process start to main)");
  const auto start = clock_type::now();
  last = start;
  check(cuInit(0) == CUDA_SUCCESS, "cuInit");
  mark("cuInit (driver)");
  check(cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync) == cudaSuccess, "flags");
  check(cudaFree(nullptr) == cudaSuccess, "context");
  mark("primary context (cudaFree(0))");
  void* d = nullptr;
  check(cudaMalloc(&d, std::size_t(200) << 20) == cudaSuccess, "cudaMalloc");
  mark("cudaMalloc 200 MB");
  void* h = nullptr;
  check(cudaHostAlloc(&h, std::size_t(16) << 20, cudaHostAllocDefault) == cudaSuccess, "cudaHostAlloc");
  mark("cudaHostAlloc 16 MB");
  touch<<<1, 32>>>(static_cast<float*>(d));
  check(cudaDeviceSynchronize() == cudaSuccess, "kernel");
  mark("first kernel launch + sync");

  nvjpegHandle_t enc_handle;
  check(nvjpegCreateEx(NVJPEG_BACKEND_DEFAULT, &dev_alloc, &pin_alloc, 0, &enc_handle) == NVJPEG_STATUS_SUCCESS, "create");
  mark("nvjpegCreateEx default backend");
  nvjpegEncoderState_t es;
  nvjpegEncoderParams_t ep;
  check(nvjpegEncoderStateCreate(enc_handle, &es, nullptr) == NVJPEG_STATUS_SUCCESS, "encoder state");
  check(nvjpegEncoderParamsCreate(enc_handle, &ep, nullptr) == NVJPEG_STATUS_SUCCESS, "encoder params");
  nvjpegEncoderParamsSetQuality(ep, 95, nullptr);
  nvjpegEncoderParamsSetSamplingFactors(ep, NVJPEG_CSS_420, nullptr);
  mark("encoder state + params");
  const int H = 3000, W = 4000;
  unsigned char* planes = static_cast<unsigned char*>(d);
  cudaMemset(planes, 90, std::size_t(3) * H * W);
  nvjpegImage_t img{};
  for (int c = 0; c < 3; ++c) {
    img.channel[c] = planes + std::size_t(c) * H * W;
    img.pitch[c] = W;
  }
  std::vector<unsigned char> out;
  for (int round = 0; round < 2; ++round) {
    check(nvjpegEncodeImage(enc_handle, es, ep, &img, NVJPEG_INPUT_BGR, W, H, nullptr) == NVJPEG_STATUS_SUCCESS,
          "encode");
    std::size_t n = 0;
    nvjpegEncodeRetrieveBitstream(enc_handle, es, nullptr, &n, nullptr);
    out.resize(n);
    nvjpegEncodeRetrieveBitstream(enc_handle, es, out.data(), &n, nullptr);
    cudaDeviceSynchronize();
    mark(round == 0 ? "encode 12 MP (first)" : "encode 12 MP (second)");
  }
  nvjpegHandle_t hw;
  const bool have_hw =
      nvjpegCreateEx(NVJPEG_BACKEND_HARDWARE, &dev_alloc, &pin_alloc, 0, &hw) == NVJPEG_STATUS_SUCCESS;
  mark(have_hw ? "nvjpegCreateEx hardware backend" : "nvjpegCreateEx hardware backend (refused)");
  if (have_hw) {
    nvjpegJpegState_t js;
    check(nvjpegJpegStateCreate(hw, &js) == NVJPEG_STATUS_SUCCESS, "jpeg state");
    mark("hardware decoder state");
    nvjpegJpegState_t js2;
    check(nvjpegJpegStateCreate(hw, &js2) == NVJPEG_STATUS_SUCCESS, "jpeg state 2");
    mark("a second hardware decoder state");
    check(nvjpegDecodeBatchedInitialize(hw, js, 8, 1, NVJPEG_OUTPUT_BGR) == NVJPEG_STATUS_SUCCESS, "batched init");
    mark("batched initialize (8 images)");
  }
  nvjpegHandle_t second;
  check(nvjpegCreateEx(NVJPEG_BACKEND_DEFAULT, &dev_alloc, &pin_alloc, 0, &second) == NVJPEG_STATUS_SUCCESS, "create 2");
  mark("a second default-backend handle");
  nvjpegHandle_t hybrid;
  check(nvjpegCreateEx(NVJPEG_BACKEND_GPU_HYBRID, &dev_alloc, &pin_alloc, 0, &hybrid) == NVJPEG_STATUS_SUCCESS,
        "create hybrid");
  mark("a GPU-hybrid handle");
  nvjpegJpegState_t hs;
  check(nvjpegJpegStateCreate(hybrid, &hs) == NVJPEG_STATUS_SUCCESS, "hybrid state");
  mark("its decoder state");
  std::printf("  %-34s %8.1f ms\n", "total",
              std::chrono::duration<double, std::milli>(clock_type::now() - start).count());
  std::fflush(stdout);
  std::_Exit(0);  // skip the teardown: not part of a start-up
}
