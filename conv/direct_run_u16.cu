// The direct path's walks for 16-bit pixels in and out (direct_walks.cuh).
#include "direct_walks.cuh"

namespace gpuconv::conv {

template void direct_tiles::run<std::uint16_t, std::uint16_t>(const std::uint16_t*, std::uint16_t*, const window_map&, int, cudaStream_t) const;

}  // namespace gpuconv::conv
