// RAII owners for device memory, page-locked host memory, streams and events.
#pragma once
#include <cstddef>
#include <utility>

#include "cuda_check.hpp"

namespace gpuconv {

template <typename T>
class device_buffer {
 public:
  device_buffer() = default;
  explicit device_buffer(std::size_t count) : count_(count) {
    if (count > 0) GPUCONV_CUDA(cudaMalloc(reinterpret_cast<void**>(&data_), count * sizeof(T)));
  }
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;
  device_buffer(device_buffer&& o) noexcept : data_(std::exchange(o.data_, nullptr)), count_(std::exchange(o.count_, 0)) {}
  device_buffer& operator=(device_buffer&& o) noexcept {
    if (this != &o) {
      release();
      data_ = std::exchange(o.data_, nullptr);
      count_ = std::exchange(o.count_, 0);
    }
    return *this;
  }
  ~device_buffer() { release(); }

  // At least `count` elements: reallocates (contents dropped) when smaller, the old buffer
  // freed first so that the two need not fit the device at once.
  void reserve(std::size_t count) {
    if (count_ >= count) return;
    release();
    *this = device_buffer(count);
  }

  T* data() { return data_; }
  const T* data() const { return data_; }
  std::size_t size() const { return count_; }
  std::size_t bytes() const { return count_ * sizeof(T); }

 private:
  void release() {
    if (data_) cudaFree(data_);
    data_ = nullptr;
    count_ = 0;
  }
  T* data_ = nullptr;
  std::size_t count_ = 0;
};

// Host memory to device memory, arrived when this returns. cudaMemcpy from pageable memory may
// return once the bytes are staged for the DMA, before they reach the device, and kernels on the
// non-blocking streams below (cuda_stream) are not ordered after it: a plan's first launch could
// read its taps or spectra before they arrive (session 63: the tensor-core walk read a 36 KB tap
// table as zeros, once in a test run). So the copy's stream is synchronized too.
inline void upload(void* device, const void* host, std::size_t bytes) {
  GPUCONV_CUDA(cudaMemcpy(device, host, bytes, cudaMemcpyHostToDevice));
  GPUCONV_CUDA(cudaStreamSynchronize(0));
}

// Page-locked host memory (cudaMallocHost), grown on demand (contents dropped on growth).
class pinned_buffer {
 public:
  pinned_buffer() = default;
  pinned_buffer(const pinned_buffer&) = delete;
  pinned_buffer& operator=(const pinned_buffer&) = delete;
  ~pinned_buffer() { release(); }
  void* reserve(std::size_t bytes) {
    if (bytes > bytes_) {
      release();
      GPUCONV_CUDA(cudaMallocHost(&data_, bytes));
      bytes_ = bytes;
    }
    return data_;
  }
  void* data() const { return data_; }
  std::size_t bytes() const { return bytes_; }

 private:
  void release() {
    if (data_) cudaFreeHost(data_);
    data_ = nullptr;
    bytes_ = 0;
  }
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

class cuda_stream {
 public:
  cuda_stream() { GPUCONV_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking)); }
  // at a priority in cudaDeviceGetStreamPriorityRange's range (lower numbers run first)
  explicit cuda_stream(int priority) {
    GPUCONV_CUDA(cudaStreamCreateWithPriority(&stream_, cudaStreamNonBlocking, priority));
  }
  cuda_stream(const cuda_stream&) = delete;
  cuda_stream& operator=(const cuda_stream&) = delete;
  ~cuda_stream() { cudaStreamDestroy(stream_); }
  cudaStream_t get() const { return stream_; }
  operator cudaStream_t() const { return stream_; }

 private:
  cudaStream_t stream_{};
};

class cuda_event {
 public:
  cuda_event() { GPUCONV_CUDA(cudaEventCreate(&event_)); }
  explicit cuda_event(unsigned flags) { GPUCONV_CUDA(cudaEventCreateWithFlags(&event_, flags)); }
  cuda_event(const cuda_event&) = delete;
  cuda_event& operator=(const cuda_event&) = delete;
  ~cuda_event() { cudaEventDestroy(event_); }
  cudaEvent_t get() const { return event_; }
  operator cudaEvent_t() const { return event_; }

  // Milliseconds from start to this event; waits for this event.
  float elapsed_since(const cuda_event& start) const {
    GPUCONV_CUDA(cudaEventSynchronize(event_));
    float ms = 0;
    GPUCONV_CUDA(cudaEventElapsedTime(&ms, start.event_, event_));
    return ms;
  }

 private:
  cudaEvent_t event_{};
};

}  // namespace gpuconv
