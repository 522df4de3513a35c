// gpuconv's public C++ API in one include, for library users: installed as
// <gpuconv/gpuconv.hpp> (the other installed headers are <gpuconv/conv/...> and
// <gpuconv/fft/...>). find_package(gpuconv) and link gpuconv::conv (or gpuconv::fft).
#pragma once
#include "conv/deconvolve.hpp"       // gpuconv::conv::richardson_lucy: RL deconvolution of volumes
#include "conv/plan.hpp"             // gpuconv::conv::plan: 2D convolution, CUDA and CPU backends
#include "fft/host/real_1d_host.hpp"  // gpuconv::fft::host::real_1d_plan: CPU transforms
#include "fft/plan/real_1d_plan.hpp"  // gpuconv::fft::real_1d_plan: batched 1D R2C/C2R on the GPU
#include "fft/plan/real_2d_plan.hpp"  // gpuconv::fft::real_2d_plan: 2D R2C/C2R on the GPU
