#!/usr/bin/env bash
# The Python package in CI (scripts/test.sh calls this): builds a wheel of the repo as a user's
# `pip wheel .` does (scikit-build-core and nanobind fetched from PyPI into an isolated build
# environment; CMake builds only fft, conv and the module), installs it into a venv that also
# sees the distribution's numpy, scipy, cv2 and pytest (--system-site-packages; setup.sh
# installs them), and runs pytest on tests/python from outside the tree, so that the
# installed package is the one tested. Without a GPU the tests marked gpu are reported as
# skipped, with their reason (-rs).
# Environment: GPUCONV_PYTHON_EXE (default /usr/bin/python3: the distribution's, whose
# packages setup.sh installs), GPUCONV_PYTHON_DIR (default build-python/ci).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
py=${GPUCONV_PYTHON_EXE:-/usr/bin/python3}
work=${GPUCONV_PYTHON_DIR:-build-python/ci}
mkdir -p "$work"
work=$(cd "$work" && pwd)
rm -rf "$work/venv" "$work/wheels"
"$py" -m venv --system-site-packages "$work/venv"
vpy="$work/venv/bin/python"
# Without a GPU (CI) the wheel's kernels are built as PTX alone (CMAKE_CUDA_ARCHITECTURES
# 90-virtual): no test here runs them, and ptxas, which makes the sm_90 machine code, is about
# half of every .cu file's compile time (docs/benchmarks.md, CI's time). The host code is
# the same; scripts/python-gpu-check.sh builds and tests the wheel users get, machine code
# included. GPUCONV_PYTHON_CUDA_ARCH overrides the choice either way.
arch=()
if [ -n "${GPUCONV_PYTHON_CUDA_ARCH:-}" ]; then
  arch=("--config-settings=cmake.define.CMAKE_CUDA_ARCHITECTURES=$GPUCONV_PYTHON_CUDA_ARCH")
elif ! nvidia-smi -L >/dev/null 2>&1; then
  arch=("--config-settings=cmake.define.CMAKE_CUDA_ARCHITECTURES=90-virtual")
fi
start=$(date +%s)
CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc 2>/dev/null || echo 2)} \
  "$vpy" -m pip wheel --no-deps -q "${arch[@]}" . -w "$work/wheels"
echo "python-test.sh: wheel $(basename "$work"/wheels/gpuconv-*.whl) built in $(( $(date +%s) - start )) s${arch:+ (${arch[0]#--config-settings=})}"
"$vpy" -m pip install --no-deps -q --force-reinstall "$work"/wheels/gpuconv-*.whl
cd "$work"
"$vpy" -c 'import gpuconv; print("python-test.sh: gpuconv", gpuconv.__version__, "from", gpuconv.__file__, "; CUDA device:", gpuconv.cuda_available())'
"$vpy" -m pytest -c "$repo/pyproject.toml" --rootdir "$repo" -rs -q -p no:cacheprovider "$repo/tests/python"
