// Parallel host memcpy for the staging of plan::execute on host buffers: one memcpy thread
// moves ~6-10 GB/s between pageable and page-locked memory, well below what PCIe carries, so
// the CPU pool's threads (cpu_pool.hpp) copy a list of segments together, split by bytes.
#pragma once
#include <cstddef>
#include <vector>

namespace gpuconv::conv {

struct copy_segment {
  void* dst;
  const void* src;
  std::size_t bytes;
};

// A copy takes a thread for each `bytes_per_thread` bytes, at most `threads`. The default, 1 MiB,
// keeps the application's few-MB downloads on few threads; plan::execute's staging of host
// buffers uses 256 KiB: a uint8 12 MP call's ~4 MB units then copy on 16 threads instead of 4
// (H200 host, NumPy 3 x 3000 x 4000 uint8 through the GPU, two rounds: 2.2-2.5 ms a call
// against 3.1-3.9 ms; docs/benchmarks.md, session 50). GPUCONV_COPY_MIN_KB overrides both
// (measurements).
inline constexpr std::size_t copy_bytes_per_thread = std::size_t(1) << 20;
inline constexpr std::size_t staging_bytes_per_thread = std::size_t(256) << 10;

// Copies every segment on up to `threads` threads (this one included); returns when all are
// done. Segments must not overlap. Large copies use non-temporal stores (GPUCONV_COPY_PLAIN=1:
// plain memcpy, for measurements).
void parallel_copy(int threads, const std::vector<copy_segment>& segments,
                   std::size_t bytes_per_thread = copy_bytes_per_thread);

}  // namespace gpuconv::conv
