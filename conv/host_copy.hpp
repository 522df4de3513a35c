// Parallel host memcpy for the staging of plan::execute on host buffers: one memcpy thread
// moves ~10 GB/s between pageable and page-locked memory, well below what PCIe carries, so a
// few persistent threads copy a list of segments together, split by bytes.
#pragma once
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <thread>
#include <vector>

namespace gpuconv::conv {

struct copy_segment {
  void* dst;
  const void* src;
  std::size_t bytes;
};

class copy_pool {
 public:
  // `threads` copiers in all, the caller included (1: the caller copies alone).
  explicit copy_pool(int threads);
  ~copy_pool();
  copy_pool(const copy_pool&) = delete;
  copy_pool& operator=(const copy_pool&) = delete;

  // Copies every segment; returns when all are done. Segments must not overlap.
  void copy(const std::vector<copy_segment>& segments);
  int threads() const { return (int)workers_.size() + 1; }

 private:
  void share(int index, int parts);  // copier `index` of `parts`: its slice of the bytes
  void worker(int index);

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable start_, finished_;
  const std::vector<copy_segment>* job_ = nullptr;
  std::size_t job_bytes_ = 0;
  int parts_ = 1;
  unsigned long long generation_ = 0;
  int pending_ = 0;
  bool stop_ = false;
};

}  // namespace gpuconv::conv
