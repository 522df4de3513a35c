#!/usr/bin/env bash
# Profiles the convolution kernels with Nsight Compute on a GPU machine: the first launches of
# each kernel size given (the 4096^2 fp32 case of gpuconv-bench conv comes first), key
# sections only, caches and clocks left as they run (not flushed between kernels).
#   scripts/gpu-profile.sh [K ...]      (default: 3 7 31) — builds build-gpu first if needed
#   PROFILE_KERNELS: ncu kernel regex (default fused_tile_kernel; e.g. 'rows_|columns_' for
#   the three-pass path); PROFILE_LAUNCHES: launches profiled per size (default 1)
set -uo pipefail
out=${OUT:-$PWD/gpu-check-logs}
build=${GPUCONV_BUILD_DIR:-build-gpu}
mkdir -p "$out"
if [ ! -x "$build/apps/gpuconv-bench" ]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGPUCONV_BUILD_TESTS=OFF -DGPUCONV_LINEINFO=ON > "$out/profile-configure.log" 2>&1 &&
    cmake --build "$build" -j "$(nproc)" --target gpuconv-bench > "$out/profile-build.log" 2>&1 || { echo "build FAILED"; exit 1; }
fi
ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1 || ls /usr/local/cuda/bin/ncu 2>/dev/null)
[ -n "$ncu" ] || { echo "no ncu found"; exit 1; }
for k in "${@:-3 7 31}"; do
  for kk in $k; do
    "$ncu" -k regex:"${PROFILE_KERNELS:-fused_tile_kernel}" --launch-count "${PROFILE_LAUNCHES:-1}" \
      --cache-control none --clock-control none --section SpeedOfLight --section Occupancy \
      --section LaunchStats --section WarpStateStats --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis \
      "$build/apps/gpuconv-bench" conv --sizes "$kk" --reps 1 --warmup 0 > "$out/ncu-k$kk.txt" 2>&1
    echo "==== K=$kk"
    grep -E "${PROFILE_KERNELS:-fused_tile_kernel}|Duration|DRAM Throughput|Memory Throughput|L1/TEX Hit|L2 Hit|Compute \(SM\) Throughput|Registers Per|Achieved Occupancy|Theoretical Occupancy|Block Limit|Warp Cycles Per Issued|Issue Slots Busy|Shared Memory Configuration|Dynamic Shared|Stall|Bank" "$out/ncu-k$kk.txt" | cut -c1-150 | head -$((40 * ${PROFILE_LAUNCHES:-1}))
  done
done
