#!/usr/bin/env bash
# Tuning variants of the batched 1D R2C / C2R kernels, timed against each other and cuFFT in
# one process start each, rounds interleaved. Builds only what `gpuconv-bench fft1d` needs (the
# 1D plan once per variant, its bench and timing once), all variants at once: about a minute on a
# 16-core host, where `gpu-check.sh --variant` builds the whole bench per variant.
#
#   scripts/fft1d-variants.sh [--sizes 1024,4096] [--rounds 3] [--reps 30] [--profile] [--profile-cufft]
#                             NAME='-DFLAG=V ...' ...
#
# The default build runs as `default` in every round beside the named variants. Knobs:
# fft/kernels/real_1d_policy.hpp (GPUCONV_REAL_1D_*). Each binary checks its transforms against
# cuFFT (rel L2 < 1e-5) before it times them, and fails otherwise. One log per variant (its
# rounds one after another), the compiler's register reports in ptxas.txt, and with --profile
# an Nsight Compute report per variant of its first R2C and C2R launch at each size (ncu-NAME.txt,
# the limiters' lines also on stdout) go to $OUT or ./fft1d-variants-logs; the table to stdout.
# --profile-cufft: the same sections over every kernel of the default binary's first launches at
# each size (ours, cuFFT's and the check's; ncu-cufft.txt), to compare with cuFFT's kernels.
set -euo pipefail
cd "$(dirname "$0")/.."
sizes=1024,2048,4096 rounds=3 reps=30 profile=0 profile_cufft=0
declare -a names=(default) flags=("")
while [ $# -gt 0 ]; do
  case "$1" in
    --sizes) sizes=$2; shift ;;
    --rounds) rounds=$2; shift ;;
    --reps) reps=$2; shift ;;
    --profile) profile=1 ;;
    --profile-cufft) profile_cufft=1 ;;
    -h|--help) sed -n 2,15p "$0"; exit 0 ;;
    *=*) names+=("${1%%=*}"); flags+=("${1#*=}") ;;
    *) echo "fft1d-variants.sh: unknown argument '$1' (NAME='-DFLAG=V' expected)" >&2; exit 2 ;;
  esac
  shift
done
out=${OUT:-$PWD/fft1d-variants-logs}
mkdir -p "$out"
nvcc=${CUDACXX:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
arch=${GPUCONV_CUDA_ARCH:-90}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat > "$work/main.cu" <<'EOF'
#include <cstdlib>
#include "apps/bench/bench.hpp"
int main(int argc, char** argv) {  // argv: reps, then the sizes
  gpuconv::bench::options o;
  o.reps = std::atoi(argv[1]);
  for (int i = 2; i < argc; ++i) o.sizes.push_back(std::atoi(argv[i]));
  return gpuconv::bench::run_fft1d(o);
}
EOF
common=(-std=c++17 -O3 "-arch=sm_$arch" --expt-relaxed-constexpr -lineinfo -I.)
pids=()
"$nvcc" "${common[@]}" -c apps/bench/fft1d.cu -o "$work/fft1d.o" & pids+=($!)
"$nvcc" "${common[@]}" -c apps/bench/timing.cu -o "$work/timing.o" & pids+=($!)
"$nvcc" "${common[@]}" -c "$work/main.cu" -o "$work/main.o" & pids+=($!)
for i in "${!names[@]}"; do
  # shellcheck disable=SC2086 # a variant's flags are words on purpose
  "$nvcc" "${common[@]}" ${flags[$i]} -Xptxas=-v -c fft/plan/real_1d_plan.cu -o "$work/plan-${names[$i]}.o" \
    > "$work/ptxas-${names[$i]}.log" 2>&1 & pids+=($!)
done
failed=0
for p in "${pids[@]}"; do wait "$p" || failed=1; done
for n in "${names[@]}"; do echo "== $n"; cat "$work/ptxas-$n.log"; done > "$out/ptxas.txt" 2>/dev/null
[ "$failed" = 0 ] || { echo "fft1d-variants.sh: a compile failed (compiler output in $out/ptxas.txt)" >&2; exit 1; }
for n in "${names[@]}"; do
  "$nvcc" "${common[@]}" "$work/main.o" "$work/fft1d.o" "$work/timing.o" "$work/plan-$n.o" -lcufft -o "$work/bench-$n"
done
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader > "$out/gpu.txt" 2>&1 || true
IFS=, read -r -a size_list <<< "$sizes"
printf '%-10s %5s %6s  %9s %9s %7s  %9s %9s %7s\n' variant round n "R2C ms" "cuFFT" ratio "C2R ms" "cuFFT" ratio
rc=0
for r in $(seq 1 "$rounds"); do
  for n in "${names[@]}"; do
    log="$work/bench-$n-round$r.txt"
    status=0
    "$work/bench-$n" "$reps" "${size_list[@]}" > "$log" 2>&1 || status=$?
    { echo "== round $r"; cat "$log"; } >> "$out/bench-$n.txt"
    if [ "$status" != 0 ]; then
      echo "$n round $r: FAILED (see $out/bench-$n.txt)"; tail -3 "$log"; rc=1; continue
    fi
    # the bench's table rows: n | R2C ms Gpt/s %copy cuFFT ratio | C2R ms Gpt/s %copy cuFFT ratio | errors
    awk -v name="$n" -v round="$r" -F'|' '$1 ~ /^ *[0-9]+ *$/ {
      split($2, a, " "); split($3, b, " ");
      printf "%-10s %5s %6d  %9s %9s %7s  %9s %9s %7s\n", name, round, $1, a[1], a[4], a[5], b[1], b[4], b[5] }' "$log"
  done
done
ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -1 || true)
sections=(--section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats
  --section SchedulerStats --section MemoryWorkloadAnalysis)
summary='_1d_kernel|fft|Duration|DRAM Throughput|Compute \(SM\) Throughput|L1/TEX Cache Throughput|Registers Per|Block Size|Grid Size|Shared Memory Config|Achieved Occupancy|Theoretical Occupancy|Warp Cycles Per Issued|No Eligible|stalled|inst_executed|mem_shared'
if [ "$profile_cufft" = 1 ]; then
  if [ -z "$ncu" ]; then
    echo "fft1d-variants.sh: --profile-cufft: no ncu found"; rc=1
  else
    : > "$out/ncu-cufft.txt"
    for size in "${size_list[@]}"; do
      # every launch of the accuracy checks: fill, ours, cuFFT's R2C, the error, ours, cuFFT's C2R
      "$ncu" --clock-control none --launch-count 12 "${sections[@]}" \
        --metrics 'smsp__inst_executed.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum' \
        "$work/bench-default" 1 "$size" >> "$out/ncu-cufft.txt" 2>&1 || { echo "ncu (cufft) failed (see $out/ncu-cufft.txt)"; rc=1; }
    done
    echo "== every kernel (ncu)"
    { grep -E "$summary" "$out/ncu-cufft.txt" | grep -v ' 0$' | cut -c1-150 | head -200; } || true
  fi
fi
if [ "$profile" = 1 ]; then
  if [ -z "$ncu" ]; then
    echo "fft1d-variants.sh: --profile: no ncu found"; rc=1
  else
    for n in "${names[@]}"; do
      : > "$out/ncu-$n.txt"
      for size in "${size_list[@]}"; do
        # a size's first two launches of the 1D kernels are its accuracy checks: one R2C, one C2R
        "$ncu" --clock-control none -k regex:'(r2c|c2r)_1d_kernel' --launch-count 2 "${sections[@]}" \
          --metrics 'regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio,smsp__inst_executed.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum' \
          "$work/bench-$n" 1 "$size" >> "$out/ncu-$n.txt" 2>&1 || { echo "$n: ncu failed (see $out/ncu-$n.txt)"; rc=1; }
      done
      echo "== $n (ncu)"
      { grep -E "$summary" "$out/ncu-$n.txt" | grep -v ' 0$' | cut -c1-150 | head -120; } || true
    done
  fi
fi
exit $rc
