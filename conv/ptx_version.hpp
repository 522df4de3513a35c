// The PTX version the library's device code runs from on the current device.
#pragma once

namespace gpuconv::conv {

// cudaFuncAttributes::ptxVersion (major x 10 + minor) of an empty kernel in a module of its own,
// on the current device. Every kernel of the library is built for the same targets, so this is
// what any of them runs from (the direct path's tensor-core walk is empty below 80), and asking it
// loads nothing else: under CUDA's lazy loading the same question put to the tensor-core walk's
// kernel loaded it, ~65-85 ms inside the first plan of a process (H100, session 70: a 12 MP photo
// through the CLI spent 0.061-0.079 s in its convolve stage, 0.001 s with every module loaded at
// start).
int library_ptx_version();

}  // namespace gpuconv::conv
