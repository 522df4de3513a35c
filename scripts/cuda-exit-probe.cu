// What a CUDA process's exit costs, by what it leaves behind: each case runs in a child process
// that makes the primary context, allocates what the case says, and ends by std::_Exit as
// gpuconv does (the driver then tears the context down in the kernel). The parent times the
// child's exit: from the child's last clock read before _Exit to waitpid's return. A diagnostic
// for docs/benchmarks.md, not part of the build:
//   nvcc -O2 -std=c++20 -o /tmp/exit-probe scripts/cuda-exit-probe.cu -lnvjpeg && /tmp/exit-probe ROUNDS
// Cases (all interleaved, ROUNDS rounds, medians): the context alone; device memory as 51
// buffers of 36 MB (a JPEG batch's device pool at --jobs 16) and as one slab of the same size;
// 16 page-locked buffers of 8 MB; 16 streams with work on each; nvJPEG's hardware-backend
// handle with one encoder state; all of those together; and together after freeing the buffers
// in the process first (their cudaFree / cudaFreeHost time is printed too).
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <cuda_runtime.h>
#include <nvjpeg.h>

namespace {

double now_ms() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
    std::_Exit(3);
  }
}

// The child: sets up `what`, writes "<free ms> <clock before _Exit>" to fd, ends.
[[noreturn]] void child(const std::string& what, int fd) {
  check(cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync), "cudaSetDeviceFlags");
  check(cudaFree(nullptr), "context");
  const bool all = what == "all" || what == "all-freed";
  std::vector<void*> dev, pin;
  std::vector<cudaStream_t> streams;
  if (what == "dev51" || all)
    for (int i = 0; i < 51; ++i) {
      void* p = nullptr;
      check(cudaMalloc(&p, std::size_t(36) << 20), "cudaMalloc");
      check(cudaMemset(p, 1, std::size_t(36) << 20), "cudaMemset");
      dev.push_back(p);
    }
  if (what == "slab") {
    void* p = nullptr;
    check(cudaMalloc(&p, std::size_t(51 * 36) << 20), "cudaMalloc");
    check(cudaMemset(p, 1, std::size_t(51 * 36) << 20), "cudaMemset");
    dev.push_back(p);
  }
  if (what == "pin16" || all)
    for (int i = 0; i < 16; ++i) {
      void* p = nullptr;
      check(cudaHostAlloc(&p, std::size_t(8) << 20, cudaHostAllocDefault), "cudaHostAlloc");
      std::memset(p, 1, std::size_t(8) << 20);
      pin.push_back(p);
    }
  if (what == "streams16" || all) {
    void* scratch = nullptr;
    check(cudaMalloc(&scratch, 1 << 20), "cudaMalloc");
    for (int i = 0; i < 16; ++i) {
      cudaStream_t s;
      check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
      check(cudaMemsetAsync(scratch, i, 1 << 20, s), "cudaMemsetAsync");
      streams.push_back(s);
    }
  }
  if (what == "nvjpeg" || all) {
    nvjpegHandle_t h = nullptr;
    nvjpegEncoderState_t enc = nullptr;
    if (nvjpegCreateEx(NVJPEG_BACKEND_HARDWARE, nullptr, nullptr, 0, &h) != NVJPEG_STATUS_SUCCESS ||
        nvjpegEncoderStateCreate(h, &enc, nullptr) != NVJPEG_STATUS_SUCCESS) {
      std::fprintf(stderr, "nvJPEG handle or encoder state failed\n");
      std::_Exit(3);
    }
  }
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  double freeing = 0;
  if (what == "all-freed") {
    const double t = now_ms();
    for (void* p : dev) check(cudaFree(p), "cudaFree");
    for (void* p : pin) check(cudaFreeHost(p), "cudaFreeHost");
    for (cudaStream_t s : streams) check(cudaStreamDestroy(s), "cudaStreamDestroy");
    freeing = now_ms() - t;
  }
  char line[64];
  const int n = std::snprintf(line, sizeof line, "%.3f %.3f\n", freeing, now_ms());
  if (write(fd, line, std::size_t(n)) != n) std::_Exit(4);
  std::_Exit(0);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 7;
  const std::vector<std::string> cases = {"ctx", "dev51", "slab", "pin16", "streams16", "nvjpeg", "all", "all-freed"};
  std::vector<std::vector<double>> exits(cases.size()), wall(cases.size()), freeing(cases.size());
  for (int r = 0; r < rounds; ++r)
    for (std::size_t c = 0; c < cases.size(); ++c) {
      int fds[2];
      if (pipe(fds) != 0) return 1;
      const double t0 = now_ms();
      const pid_t pid = fork();
      if (pid == 0) {
        close(fds[0]);
        child(cases[c], fds[1]);
      }
      close(fds[1]);
      char buf[64] = {};
      const ssize_t got = read(fds[0], buf, sizeof buf - 1);
      close(fds[0]);
      int status = 0;
      waitpid(pid, &status, 0);
      const double t1 = now_ms();
      double f = 0, before_exit = 0;
      if (got <= 0 || std::sscanf(buf, "%lf %lf", &f, &before_exit) != 2 || !WIFEXITED(status) ||
          WEXITSTATUS(status) != 0) {
        std::printf("%s: the child failed (status %d)\n", cases[c].c_str(), status);
        continue;
      }
      exits[c].push_back(t1 - before_exit);
      wall[c].push_back(t1 - t0);
      freeing[c].push_back(f);
    }
  std::printf("%-10s  %10s  %10s  %14s   (ms, medians of %d; exit = last clock read before _Exit to waitpid)\n",
              "case", "exit", "whole", "freed in-proc", rounds);
  for (std::size_t c = 0; c < cases.size(); ++c) {
    std::printf("%-10s  %10.1f  %10.1f  %14.1f   exits:", cases[c].c_str(), median(exits[c]), median(wall[c]),
                median(freeing[c]));
    for (double e : exits[c]) std::printf(" %.0f", e);
    std::printf("\n");
  }
  return 0;
}
