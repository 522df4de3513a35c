#!/usr/bin/env bash
# Installs what is needed (scripts/setup.sh), builds, and runs the whole test suite through
# CTest, then the load test (scripts/load-test.sh: 10,000 images through gpuconv batch), then
# the Python package (scripts/python-test.sh: wheel, venv, pytest). On a machine without a GPU
# the [gpu] tests (and pytest's gpu tests) are reported as skipped.
# Then, unless GPUCONV_SANITIZE=0:
#  - the same suite built with AddressSanitizer + UndefinedBehaviorSanitizer on all host code
#    (GPUCONV_SANITIZE=ON, build dir build-asan, no benchmark); the [cli] tests run the
#    sanitized gpuconv binary, so its errors fail them too;
#  - the fuzz targets (scripts/fuzz.sh 0): built with clang, every seed of fuzz/corpus
#    (which holds the crashes found so far) run once (before the sanitized CTest run, whose
#    summary ends the log).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
build=${GPUCONV_BUILD_DIR:-build}
jobs=$(nproc 2>/dev/null || echo 2)
# Without a GPU the kernels are built as PTX alone (90-virtual), as in the sanitizer build below
# and the CI wheel: no test here runs them, and ptxas makes a quarter to a half of each .cu
# file's compile time; with a GPU they keep the default architectures (machine code).
main_arch=()
nvidia-smi -L >/dev/null 2>&1 || main_arch=(-DCMAKE_CUDA_ARCHITECTURES=90-virtual)
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release "${main_arch[@]}"
cmake --build "$build" -j "$jobs"
# two tests at a time on CI's two cores (the tests' files are per process: tests/app/support.hpp's
# scratch_dir; slurm_array runs alone, RUN_SERIAL); gpu-check.sh runs them 4 at a time on the GPU host
ctest --test-dir "$build" --output-on-failure -j "$jobs"
# load: 10,000 generated images through gpuconv batch, bounded memory, no temp file left
bash scripts/load-test.sh 10000 "$build/apps/gpuconv"

# --- Python package: a wheel (pip wheel .) installed in a venv, pytest on tests/python (the
# GPU tests reported as skipped without a device). GPUCONV_PYTHON=0 skips it.
if [ "${GPUCONV_PYTHON:-1}" != 0 ]; then
  bash scripts/python-test.sh
fi
# --- end Python package

if [ "${GPUCONV_SANITIZE:-1}" != 0 ]; then
  asan=${GPUCONV_ASAN_BUILD_DIR:-build-asan}
  echo "test.sh: AddressSanitizer + UndefinedBehaviorSanitizer build in $asan"
  # -O1 -g1 (line tables, what a sanitizer's report needs) instead of RelWithDebInfo's -O2 -g: a
  # third of the compile time (test_thread_fft.cpp: 84 s against 268 s on CI's machine). Without
  # a GPU the kernels are built as PTX alone (90-virtual): no test here runs them, and ptxas is
  # about half of each .cu file's compile time; with a GPU they keep the default architectures.
  asan_arch=()
  nvidia-smi -L >/dev/null 2>&1 || asan_arch=(-DCMAKE_CUDA_ARCHITECTURES=90-virtual)
  cmake -S . -B "$asan" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPUCONV_SANITIZE=ON -DGPUCONV_BUILD_BENCH=OFF \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" "-DCMAKE_CUDA_FLAGS_RELWITHDEBINFO=-O1 -Xcompiler=-g1 -DNDEBUG" \
    "${asan_arch[@]}"
  cmake --build "$asan" -j "$jobs"
  # No ASAN_OPTIONS are needed on a machine without a GPU: the CUDA runtime only answers "no
  # device" there, and LeakSanitizer finds no leak. On a GPU machine libcudart may need
  # protect_shadow_gap=0 (its mappings land in ASan's shadow gap) and detect_leaks=0 (the
  # driver's one-time allocations); set ASAN_OPTIONS to that there.
  echo "test.sh: fuzz targets on the seed corpus (scripts/fuzz.sh 0)"
  bash scripts/fuzz.sh 0
  # last, so that CTest's summary closes the log
  UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
    ctest --test-dir "$asan" --output-on-failure -j "$jobs"
fi
