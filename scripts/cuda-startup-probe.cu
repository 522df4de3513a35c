// Where a one-image run's CUDA start-up goes: times, in a fresh process, the driver's start
// (cuInit), the primary context, a first allocation, pinned memory, the first kernel launch,
// and nvJPEG's pieces (library handle per backend, encoder state and parameters, the first and
// the second encode of a 12 MP image). A diagnostic for docs/benchmarks.md, not part of the build:
//   nvcc -O2 -o /tmp/probe scripts/cuda-startup-probe.cu -lcuda -lnvjpeg && /tmp/probe
// (run it several times: each run is one cold start).
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
void mark(const char* what) {
  const auto now = clock_type::now();
  std::printf("  %-34s %8.1f ms\n", what, std::chrono::duration<double, std::milli>(now - last).count());
  last = now;
}
void check(bool ok, const char* what) {
  if (!ok) {
    std::printf("FAILED: %s\n", what);
    std::exit(1);
  }
}
__global__ void touch(float* p) { p[threadIdx.x] = 1.f; }
}  // namespace

int main() {
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
  check(nvjpegCreateEx(NVJPEG_BACKEND_DEFAULT, nullptr, nullptr, 0, &enc_handle) == NVJPEG_STATUS_SUCCESS, "create");
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
      nvjpegCreateEx(NVJPEG_BACKEND_HARDWARE, nullptr, nullptr, 0, &hw) == NVJPEG_STATUS_SUCCESS;
  mark(have_hw ? "nvjpegCreateEx hardware backend" : "nvjpegCreateEx hardware backend (refused)");
  if (have_hw) {
    nvjpegJpegState_t js;
    check(nvjpegJpegStateCreate(hw, &js) == NVJPEG_STATUS_SUCCESS, "jpeg state");
    mark("hardware decoder state");
  }
  std::printf("  %-34s %8.1f ms\n", "total",
              std::chrono::duration<double, std::milli>(clock_type::now() - start).count());
  std::fflush(stdout);
  std::_Exit(0);  // skip the teardown: not part of a start-up
}
