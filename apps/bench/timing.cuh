// Benchmark support: event timing with warm-up and medians, the measured copy bandwidth,
// random device data, and an on-device relative-L2 comparison.
#pragma once
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <vector>

#include <stdexcept>
#include <string>

#include <cufft.h>

#include "fft/device/buffer.hpp"

namespace gpuconv::bench {

inline void check_cufft(cufftResult r, const char* call) {
  if (r != CUFFT_SUCCESS) throw std::runtime_error(std::string(call) + " failed with cufftResult " + std::to_string(int(r)));
}

// Median milliseconds of `reps` runs of f(stream), after `warmup` untimed runs. `before`
// runs ahead of each timed run, outside the events (e.g. restoring an input).
template <typename F, typename B>
float median_ms(F&& f, B&& before, int warmup, int reps, cudaStream_t stream) {
  cuda_event start, stop;
  for (int i = 0; i < warmup; ++i) { before(); f(stream); }
  std::vector<float> t;
  for (int i = 0; i < reps; ++i) {
    before();
    GPUCONV_CUDA(cudaEventRecord(start, stream));
    f(stream);
    GPUCONV_CUDA(cudaEventRecord(stop, stream));
    t.push_back(stop.elapsed_since(start));
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

template <typename F>
float median_ms(F&& f, int warmup, int reps, cudaStream_t stream) {
  return median_ms(f, [] {}, warmup, reps, stream);
}

// Median milliseconds per call of f(stream) when `per` calls run back to back between the two
// events (the host queues the next launch while the GPU runs the last): what a caller that
// keeps the GPU busy sees. median_ms() times one call from an idle stream, which adds the
// host's launch latency to every small case.
// `host_us`, when given: the median host microseconds a call takes to queue its work.
template <typename F>
float median_ms_streamed(F&& f, int warmup, int reps, int per, cudaStream_t stream, double* host_us = nullptr) {
  cuda_event start, stop;
  for (int i = 0; i < warmup; ++i) f(stream);
  std::vector<float> t;
  std::vector<double> h;
  for (int i = 0; i < reps; ++i) {
    GPUCONV_CUDA(cudaEventRecord(start, stream));
    const auto t0 = std::chrono::steady_clock::now();
    for (int j = 0; j < per; ++j) f(stream);
    h.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / per);
    GPUCONV_CUDA(cudaEventRecord(stop, stream));
    t.push_back(stop.elapsed_since(start) / float(per));
  }
  std::sort(t.begin(), t.end());
  std::sort(h.begin(), h.end());
  if (host_us) *host_us = h[h.size() / 2];
  return t[t.size() / 2];
}

// Device-to-device copy bandwidth in GB/s, counting bytes read plus bytes written.
inline double copy_bandwidth_gbs(std::size_t bytes, int reps, cudaStream_t stream) {
  device_buffer<unsigned char> a(bytes), b(bytes);
  GPUCONV_CUDA(cudaMemsetAsync(a.data(), 1, bytes, stream));
  const float ms = median_ms(
      [&](cudaStream_t s) { GPUCONV_CUDA(cudaMemcpyAsync(b.data(), a.data(), bytes, cudaMemcpyDeviceToDevice, s)); },
      3, reps, stream);
  return 2.0 * double(bytes) / (ms * 1e-3) / 1e9;
}

// Uniform random floats in [-1, 1) from a counter hash (fresh seed per call site).
void fill_random(float* p, std::size_t count, std::uint64_t seed, cudaStream_t stream);

// Input/output sets of `pixels` floats (the inputs random), rotated between timed runs so that
// small cases are not timed out of the 50 MB L2: at least 256 MB of them, at most 16 sets.
struct rotating_sets {
  std::vector<device_buffer<float>> in, out;
  rotating_sets(long long pixels, std::uint64_t seed, cudaStream_t stream) {
    const int sets = (int)std::clamp<long long>((256LL << 20) / (pixels * 8) + 1, 1, 16);
    for (int i = 0; i < sets; ++i) {
      in.emplace_back(pixels);
      out.emplace_back(pixels);
      fill_random(in.back().data(), pixels, seed + i, stream);
    }
  }
  int size() const { return (int)in.size(); }
};

// Float32 FMA throughput of the device in TFLOP/s (2 flops per FMA), from independent
// register-resident FMA chains on every SM: the arithmetic ceiling the floors use.
double fma_peak_tflops(cudaStream_t stream);

// float -> uint8 (values scaled from [-1, 1) to [0, 255]), uint8 -> float (the values as they
// are) and the largest |a - round(b)| between a uint8 result and a float one (rounded and
// saturated as the plan does).
void to_u8(const float* in, std::uint8_t* out, std::size_t count, cudaStream_t stream);
void from_u8(const std::uint8_t* in, float* out, std::size_t count, cudaStream_t stream);
int max_u8_difference(const std::uint8_t* a, const float* b, std::size_t count, cudaStream_t stream);

// ||a - b|| / ||b|| over `count` floats, computed on the device in double.
double relative_l2(const float* a, const float* b, std::size_t count, cudaStream_t stream);

}  // namespace gpuconv::bench
