// The direct path's walks for the separable path's passes between pixel types: narrow pixels
// into its float intermediate, and back (direct_walks.cuh).
#include "direct_walks.cuh"

namespace gpuconv::conv {

template void direct_tiles::run<std::uint8_t, float>(const std::uint8_t*, float*, const window_map&, int, cudaStream_t) const;
template void direct_tiles::run<std::uint16_t, float>(const std::uint16_t*, float*, const window_map&, int, cudaStream_t) const;
template void direct_tiles::run<float, std::uint8_t>(const float*, std::uint8_t*, const window_map&, int, cudaStream_t) const;
template void direct_tiles::run<float, std::uint16_t>(const float*, std::uint16_t*, const window_map&, int, cudaStream_t) const;

}  // namespace gpuconv::conv
