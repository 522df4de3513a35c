#!/usr/bin/env bash
# Tuning variants of the batched 1D R2C / C2R kernels, timed against each other and cuFFT in
# one process start each, rounds interleaved. Builds only what `gpuconv-bench fft1d` needs (the
# 1D plan once per variant, its bench and timing once), all variants at once: about a minute on a
# 16-core host, where `gpu-check.sh --variant` builds the whole bench per variant.
#
#   scripts/fft1d-variants.sh [--sizes 1024,4096] [--rounds 3] [--reps 30] NAME='-DFLAG=V ...' ...
#
# The default build runs as `default` in every round beside the named variants. Knobs:
# fft/kernels/real_1d_policy.hpp (GPUCONV_REAL_1D_*). Each binary checks its transforms against
# cuFFT (rel L2 < 1e-5) before it times them, and fails otherwise. Logs and the compiler's
# register report per variant go to $OUT or ./fft1d-variants-logs; the table goes to stdout.
set -euo pipefail
cd "$(dirname "$0")/.."
sizes=1024,2048,4096 rounds=3 reps=30
declare -a names=(default) flags=("")
while [ $# -gt 0 ]; do
  case "$1" in
    --sizes) sizes=$2; shift ;;
    --rounds) rounds=$2; shift ;;
    --reps) reps=$2; shift ;;
    -h|--help) sed -n 2,12p "$0"; exit 0 ;;
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
    > "$out/ptxas-${names[$i]}.log" 2>&1 & pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || { echo "fft1d-variants.sh: a compile failed (logs in $out)" >&2; exit 1; }; done
for n in "${names[@]}"; do
  "$nvcc" "${common[@]}" "$work/main.o" "$work/fft1d.o" "$work/timing.o" "$work/plan-$n.o" -lcufft -o "$work/bench-$n"
done
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader > "$out/gpu.txt" 2>&1 || true
IFS=, read -r -a size_list <<< "$sizes"
printf '%-10s %5s %6s  %9s %9s %7s  %9s %9s %7s\n' variant round n "R2C ms" "cuFFT" ratio "C2R ms" "cuFFT" ratio
rc=0
for r in $(seq 1 "$rounds"); do
  for n in "${names[@]}"; do
    log="$out/bench-$n-round$r.txt"
    if ! "$work/bench-$n" "$reps" "${size_list[@]}" > "$log" 2>&1; then
      echo "$n round $r: FAILED (see $log)"; tail -3 "$log"; rc=1; continue
    fi
    # the bench's table rows: n | R2C ms Gpt/s %copy cuFFT ratio | C2R ms Gpt/s %copy cuFFT ratio | errors
    awk -v name="$n" -v round="$r" -F'|' '$1 ~ /^ *[0-9]+ *$/ {
      split($2, a, " "); split($3, b, " ");
      printf "%-10s %5s %6d  %9s %9s %7s  %9s %9s %7s\n", name, round, $1, a[1], a[4], a[5], b[1], b[4], b[5] }' "$log"
  done
done
exit $rc
