#!/usr/bin/env bash
# The Python package on a GPU machine, from the repo root, without network: builds and installs
# gpuconv into a temporary prefix with the interpreter's own scikit-build-core and nanobind
# (pip --no-build-isolation --no-deps --target), runs pytest on tests/python including the
# gpu tests (CuPy, PyTorch; -rs lists any skip with its reason), then python -m gpuconv.bench.
# Logs, the JUnit XML and the benchmark's markdown table go to $OUT (default
# ./python-gpu-logs). A short summary closes the output. Takes 3-5 minutes on an H100.
# Environment: PYTHON (default /opt/torch/.venv/bin/python when present, else python3),
# GPUCONV_BENCH=0 skips the benchmark, GPUCONV_BENCH_ARGS adds arguments to it; GPUCONV_BENCH_CPU=0
# skips python -m gpuconv.bench_cpu (the CPU backend against cv2 on every core),
# GPUCONV_BENCH_CPU_ARGS adds arguments to it; GPUCONV_BENCH_3D=1 runs scripts/cupy-conv3d.py with
# the installed package (gpuconv.convolve3d beside CuPy's fftconvolve on 128 x 512 x 512);
# GPUCONV_PY_PREFIX=DIR installs into DIR and keeps it (PYTHONPATH=DIR for later scripts);
# GPUCONV_PYTEST=0 skips pytest (a measuring call); GPUCONV_NUMPY_PEER=1 runs scripts/numpy-peer.py
# twice: gpuconv alone with GPUCONV_HOST_STATS=1 (each call's copy time and rate), then beside
# its peers (CuPy and torch round trips, cv2 on the CPU).
set -uo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
out=${OUT:-$repo/python-gpu-logs}
mkdir -p "$out"
out=$(cd "$out" && pwd)
if [ -z "${PYTHON:-}" ]; then
  if [ -x /opt/torch/.venv/bin/python ]; then PYTHON=/opt/torch/.venv/bin/python; else PYTHON=python3; fi
fi
export PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}

{
  echo "== $(date -u +%FT%TZ) $(uname -n)"
  nvidia-smi -L 2>&1 || echo "nvidia-smi: not available"
  "$PYTHON" -c 'import sys; print("python", sys.version.split()[0])'
  for m in numpy scipy cv2 cupy torch nanobind scikit_build_core pytest; do
    "$PYTHON" -c "import $m; print('$m', getattr($m, '__version__', '?'))" 2>&1 | tail -1
  done
  command -v nvcc >/dev/null && nvcc --version | tail -1
  cmake --version | head -1
} > "$out/environment.txt" 2>&1
cat "$out/environment.txt"

if [ -n "${GPUCONV_PY_PREFIX:-}" ]; then  # keep the installed package there for later runs
  prefix=$GPUCONV_PY_PREFIX
  mkdir -p "$prefix"
else
  prefix=$(mktemp -d "${TMPDIR:-/tmp}/gpuconv-python.XXXXXX")
  trap 'rm -rf "$prefix"' EXIT
fi
start=$(date +%s)
echo "python-gpu-check: building and installing into $prefix (log: $out/build.log)"
if ! "$PYTHON" -m pip install --no-build-isolation --no-deps --target "$prefix" -v . > "$out/build.log" 2>&1; then
  tail -40 "$out/build.log"
  echo "python-gpu-check: SUMMARY: the build failed (see $out/build.log)"
  exit 1
fi
build_s=$(( $(date +%s) - start ))
echo "python-gpu-check: built and installed in ${build_s} s"
export PYTHONPATH="$prefix${PYTHONPATH:+:$PYTHONPATH}"

cd "$prefix"  # import the installed package, not the tree
"$PYTHON" -c 'import gpuconv; print("gpuconv", gpuconv.__version__, gpuconv.__file__, "CUDA device:", gpuconv.cuda_available())' \
  2>&1 | tee "$out/import.log"
if [ "${GPUCONV_PYTEST:-1}" != 0 ]; then
  timeout 300 "$PYTHON" -m pytest -c "$repo/pyproject.toml" --rootdir "$repo" -p no:cacheprovider -rs -v \
    --junitxml="$out/pytest.xml" "$repo/tests/python" > "$out/pytest.log" 2>&1
  pytest_rc=$?
else
  echo "pytest skipped (GPUCONV_PYTEST=0)" > "$out/pytest.log"
  pytest_rc=0
fi
grep -E "^(FAILED|ERROR|SKIPPED \[)" "$out/pytest.log" | head -40
tail -1 "$out/pytest.log"
gpu_passed=$(grep -cE "test_gpu.py::.* PASSED" "$out/pytest.log")
gpu_total=$(grep -cE "test_gpu.py::" "$out/pytest.log")
# the volume tests on CuPy / PyTorch (test_volume.py's gpu-marked ones: cupy or torch in the name)
vol_passed=$(grep -cE "test_volume.py::test_[a-z0-9_]*(cupy|torch)[^ ]* PASSED" "$out/pytest.log")
vol_total=$(grep -cE "test_volume.py::test_[a-z0-9_]*(cupy|torch)" "$out/pytest.log")

bench_rc=skipped
if [ "${GPUCONV_BENCH:-1}" != 0 ]; then
  echo "python-gpu-check: python -m gpuconv.bench (log: $out/bench.log)"
  # shellcheck disable=SC2086
  timeout 300 "$PYTHON" -m gpuconv.bench --out "$out/bench.md" ${GPUCONV_BENCH_ARGS:-} 2>&1 | tee "$out/bench.log"
  bench_rc=${PIPESTATUS[0]}
fi
vol_rc=skipped
if [ "${GPUCONV_BENCH_3D:-0}" != 0 ]; then
  echo "python-gpu-check: scripts/cupy-conv3d.py with the installed package (log: $out/conv3d.log)"
  timeout 300 "$PYTHON" "$repo/scripts/cupy-conv3d.py" > "$out/conv3d.log" 2>&1
  vol_rc=$?
  cat "$out/conv3d.log"
fi
numpy_rc=skipped
if [ "${GPUCONV_NUMPY_PEER:-0}" != 0 ]; then
  echo "python-gpu-check: scripts/numpy-peer.py alone (host stats) and beside its peers (log: $out/numpy-peer.log)"
  { GPUCONV_HOST_STATS=1 timeout 200 "$PYTHON" "$repo/scripts/numpy-peer.py" --peers '' --out "$out/numpy-alone.md" &&
    timeout 300 "$PYTHON" "$repo/scripts/numpy-peer.py" --out "$out/numpy-peer.md"; } > "$out/numpy-peer.log" 2>&1
  numpy_rc=$?
  grep -v "^host-stats" "$out/numpy-peer.log" | tail -16
  grep "^host-stats" "$out/numpy-peer.log" | tail -4
fi
cpu_rc=skipped
if [ "${GPUCONV_BENCH_CPU:-1}" != 0 ]; then
  echo "python-gpu-check: python -m gpuconv.bench_cpu (log: $out/bench_cpu.log)"
  # shellcheck disable=SC2086
  timeout 400 "$PYTHON" -m gpuconv.bench_cpu --out "$out/bench_cpu.md" ${GPUCONV_BENCH_CPU_ARGS:-} 2>&1 | tee "$out/bench_cpu.log"
  cpu_rc=${PIPESTATUS[0]}
fi
cd "$repo"

echo
echo "python-gpu-check: SUMMARY"
echo "  build + install: ${build_s} s"
echo "  pytest (exit $pytest_rc): $(tail -1 "$out/pytest.log")"
echo "  gpu tests: $gpu_passed of $gpu_total passed; volume gpu tests: $vol_passed of $vol_total passed"
echo "  bench (exit $bench_rc): $(grep -E '^Python overhead' "$out/bench.log" 2>/dev/null || echo 'no overhead line')"
echo "  $(grep -E '^Results agree' "$out/bench.log" 2>/dev/null || echo 'no agreement line')"
echo "  CPU bench against OpenCV (exit $cpu_rc); volumes against CuPy (exit $vol_rc); NumPy peers (exit $numpy_rc)"
[ -f "$out/bench.md" ] && echo "  table: $out/bench.md"
echo "  logs: $out"
[ "$pytest_rc" = 0 ] && { [ "$bench_rc" = 0 ] || [ "$bench_rc" = skipped ]; } && { [ "$cpu_rc" = 0 ] || [ "$cpu_rc" = skipped ]; } &&
  { [ "$vol_rc" = 0 ] || [ "$vol_rc" = skipped ]; } && { [ "$numpy_rc" = 0 ] || [ "$numpy_rc" = skipped ]; }
