#!/usr/bin/env bash
# On a GPU machine: the fused 80-tiles (conv/fused_mixed.cuh, off unless GPUCONV_FUSED_80=1) -
# their two test cases, then `gpuconv-bench sweep` with the tiles forced to 80 under both layouts
# (GPUCONV_FUSED_MIXED=0 / 1) beside the power-of-two sides, then the model's own choice with the
# 80-tiles allowed at the guessed price. Logs under $OUT (or ./fused80-logs), a short summary last.
# What the numbers decide: which layout, the 80-tiles' price (tiling.hpp fused_ps_per_pixel), and
# whether to switch them on (docs/notes-conv.md "Mixed-radix 80-tiles").
#   scripts/fused80-check.sh [BUILD_DIR]   (default build-gpu: tests/gpuconv_tests, apps/gpuconv-bench)
set -uo pipefail
build=${1:-build-gpu}
out=${OUT:-$PWD/fused80-logs}
mkdir -p "$out"
tests=$build/tests/gpuconv_tests bench=$build/apps/gpuconv-bench
for f in "$tests" "$bench"; do [ -x "$f" ] || { echo "fused80-check: no $f"; exit 1; }; done
shapes=1024x64x64,64x256x256,1000x28x28,256x100x100 sizes=9,13,15,17,23,31
summary=()
"$tests" "GPU fused 80-tiles*" --reporter compact > "$out/tests.txt" 2>&1
summary+=("tests (rc $?): $(grep -E '^(test cases|assertions)' "$out/tests.txt" | tr '\n' ' ')")
for layout in 0 1; do
  GPUCONV_FUSED_80=1 GPUCONV_FUSED_MIXED=$layout "$bench" sweep --reps 5 --boundary zero --tile 80 --shapes "$shapes" \
    --sizes "$sizes" > "$out/sweep-80-layout$layout.txt" 2>&1
  summary+=("forced 80, layout $layout: rc $?")
done
for t in 32 64 128; do
  "$bench" sweep --reps 5 --boundary zero --tile $t --shapes "$shapes" --sizes "$sizes" > "$out/sweep-$t.txt" 2>&1
done
GPUCONV_FUSED_80=1 "$bench" sweep --reps 5 --boundary zero --shapes "$shapes" --sizes "$sizes" > "$out/sweep-auto80.txt" 2>&1
summary+=("the model with 80 allowed: $(grep -o 'Within 10%.*' "$out/sweep-auto80.txt")")
echo "fused column (ms), dense kernels, zero boundary: tiles 32 / 64 / 128 / 80 (layout 0) / 80 (layout 1)"
for f in sweep-32 sweep-64 sweep-128 sweep-80-layout0 sweep-80-layout1; do
  grep -E "^[0-9x]+ +[0-9]+ +dense" "$out/$f.txt" | awk -v f="$f" '{print $1, $2, f, $9}'
done | sort -s -k1,1 -k2,2n | awk '{key=$1" K="$2; if (key!=last) {if (last!="") print line; line=key; last=key} line=line"  "$4} END {print line}'
printf '%s\n' "${summary[@]}"
