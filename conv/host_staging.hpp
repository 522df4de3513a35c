// Copies between the caller's host memory and device memory at PCIe speed, for the volume
// paths' execute() on host buffers (plan3d, the 3D separable method, Richardson-Lucy). A plain
// cudaMemcpy from pageable memory runs at ~8-10 GB/s on the H100 host (the driver stages it
// through its own small buffers one piece at a time); here the bytes go in chunks through
// three page-locked slots: the CPU pool's threads (parallel_copy, non-temporal stores) fill
// one slot while the DMA engine empties another, so a transfer takes about the longer of the
// two, not their sum. Caller buffers that are already page-locked (cudaHostAlloc,
// cudaHostRegister) are copied to and from directly.
//
// The 2D plan's execute() has its own pipeline (cuda_backend.cu), which also overlaps the
// convolution of one unit with the copies of others; a volume's tiles need the whole slab
// along D first, so here upload, compute and download follow each other.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <memory>
#include <vector>

#include "fft/device/buffer.hpp"

namespace gpuconv::conv {

// The threads that stage pageable bytes: plan_options::threads where > 0, else
// GPUCONV_COPY_THREADS (measurements), else the cores, at most 16.
int staging_threads(int plan_threads);

struct host_transfer {
  void* dst;
  const void* src;
  std::size_t bytes;
};

class host_staging {
 public:
  // threads: plan_options::threads (staging_threads)
  explicit host_staging(int threads = 0);
  host_staging(const host_staging&) = delete;
  host_staging& operator=(const host_staging&) = delete;

  // Host -> device, every part (dst on the device, src on the host), in order on `stream`.
  // Returns once the host sources have been read into staging (pageable sources) or the
  // copies are queued (page-locked sources, which must then live until `stream` has passed
  // them: a synchronous execute() does).
  void upload(const std::vector<host_transfer>& parts, cudaStream_t stream);
  // Device -> host (dst on the host, src on the device) after the work queued on `stream`;
  // returns when every byte is in place.
  void download(const std::vector<host_transfer>& parts, cudaStream_t stream);

  void upload(void* device_dst, const void* host_src, std::size_t bytes, cudaStream_t stream) {
    upload({{device_dst, host_src, bytes}}, stream);
  }
  void download(void* host_dst, const void* device_src, std::size_t bytes, cudaStream_t stream) {
    download({{host_dst, device_src, bytes}}, stream);
  }

  // True where p is page-locked host memory the DMA engine can read and write directly.
  static bool page_locked(const void* p);

 private:
  struct chunk;
  std::vector<chunk> chunks(const std::vector<host_transfer>& parts, bool host_is_src) const;
  char* slot(int s) const;
  void reserve_slots(std::size_t total);

  int threads_;
  std::size_t slot_bytes_ = 0;
  pinned_buffer pinned_;
  cuda_event done_[3] = {cuda_event(cudaEventDisableTiming), cuda_event(cudaEventDisableTiming),
                         cuda_event(cudaEventDisableTiming)};
  bool pending_[3] = {false, false, false};  // done_[s] recorded and not yet waited for
};

// A plan's staging, made on its first use: inside the plan's execute, whose device_scope makes
// the plan's device current (the events belong to the device current when they are made).
class lazy_host_staging {
 public:
  explicit lazy_host_staging(int threads) : threads_(threads) {}
  host_staging& operator()() {
    if (!staging_) staging_ = std::make_unique<host_staging>(threads_);
    return *staging_;
  }

 private:
  int threads_;
  std::unique_ptr<host_staging> staging_;
};

}  // namespace gpuconv::conv
