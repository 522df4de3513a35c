#!/usr/bin/env bash
# The main job until the CLI exists: install, build, run the FFT self-check (the [fft]
# tests: host transforms against a long-double DFT, GPU kernels against cuFFT where a GPU
# is present), then, on a GPU, the fft1d benchmark against cuFFT.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
build=${GPUCONV_BUILD_DIR:-build}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build "$build" -j "$(nproc 2>/dev/null || echo 2)"
"$build/tests/gpuconv_tests" "[fft]"
if nvidia-smi -L >/dev/null 2>&1; then
  "$build/apps/gpuconv-bench" fft1d
else
  echo "main-job: no NVIDIA GPU here: the fft1d benchmark needs one (the [gpu] checks above were skipped)"
fi
