#!/usr/bin/env bash
# Installs what is needed (scripts/setup.sh), builds, and runs the whole test suite through
# CTest. On a machine without a GPU the [gpu] tests are reported as skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
build=${GPUCONV_BUILD_DIR:-build}
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build "$build" -j "$jobs"
ctest --test-dir "$build" --output-on-failure
