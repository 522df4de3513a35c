// The direct path's walks for float pixels in and out (direct_walks.cuh).
#include "direct_walks.cuh"

namespace gpuconv::conv {

template void direct_tiles::run<float, float>(const float*, float*, const window_map&, int, cudaStream_t) const;

}  // namespace gpuconv::conv
