// Grid sizes of the pipeline's grid-stride kernels (pixels.cu, png_rows.cu, png_deflate.cu): one
// thread per item up to `max_blocks` blocks (32 a multiprocessor of the H100's 132 by default),
// at least one block.
#pragma once
#include <algorithm>

namespace gpuconv::pipeline {

inline unsigned grid_for(long long threads, int block, long long max_blocks = 132LL * 32) {
  return (unsigned)std::clamp<long long>((threads + block - 1) / block, 1, max_blocks);
}

}  // namespace gpuconv::pipeline
