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

// Copies every segment on up to `threads` threads (this one included); returns when all are
// done. Segments must not overlap. Large copies use non-temporal stores (GPUCONV_COPY_PLAIN=1:
// plain memcpy, for measurements).
void parallel_copy(int threads, const std::vector<copy_segment>& segments);

}  // namespace gpuconv::conv
