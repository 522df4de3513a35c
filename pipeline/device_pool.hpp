// Device buffers handed from one stage to another and back (the JPEG decode stage fills
// them, a compute worker releases them): at most `capacity` in use at once, acquire waits
// for one to come back; each slot keeps its allocation and grows to the largest size asked.
#pragma once
#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include "fft/device/buffer.hpp"

namespace gpuconv::pipeline {

class device_pool {
 public:
  explicit device_pool(std::size_t capacity) : slots_(capacity), busy_(capacity, false) {}
  device_pool(const device_pool&) = delete;
  device_pool& operator=(const device_pool&) = delete;

  // A buffer of at least `bytes`, returned to the pool when the last copy of the pointer
  // goes. The pool must outlive every lease.
  std::shared_ptr<unsigned char> acquire(std::size_t bytes) {
    std::unique_lock lock(mutex_);
    std::size_t i = 0;
    returned_.wait(lock, [&] {
      for (i = 0; i < busy_.size(); ++i)
        if (!busy_[i]) return true;
      return false;
    });
    busy_[i] = true;
    lock.unlock();
    try {
      slots_[i].reserve(bytes);
    } catch (...) {
      release(i);
      throw;
    }
    return std::shared_ptr<unsigned char>(slots_[i].data(), [this, i](unsigned char*) { release(i); });
  }

 private:
  void release(std::size_t i) {
    {
      std::lock_guard lock(mutex_);
      busy_[i] = false;
    }
    returned_.notify_one();
  }
  std::vector<device_buffer<unsigned char>> slots_;
  std::vector<bool> busy_;
  std::mutex mutex_;
  std::condition_variable returned_;
};

}  // namespace gpuconv::pipeline
