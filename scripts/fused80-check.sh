#!/usr/bin/env bash
# On a GPU machine: the fused tile kernels on batches of small images - the fused test cases (the
# 80-tiles, conv/fused_mixed.cuh, and the power-of-two tiles with their row tables, fused_tile.cuh),
# then `gpuconv-bench sweep` with the tiles forced to 32, 64, 80 and 128 under a zero and a
# reflect101 boundary, then the model's own choice. Logs under $OUT (or ./fused80-logs), the fused
# column side by side and a short summary last. What the numbers decide: the fused sides' prices
# (tiling.hpp fused_tile_price) against direct (docs/notes-conv.md "Mixed-radix 80-tiles").
#   scripts/fused80-check.sh [BUILD_DIR]   (default build-gpu: tests/gpuconv_tests, apps/gpuconv-bench)
set -uo pipefail
build=${1:-build-gpu}
out=${OUT:-$PWD/fused80-logs}
mkdir -p "$out/tests"
tests=$build/tests/gpuconv_tests bench=$build/apps/gpuconv-bench
for f in "$tests" "$bench"; do [ -x "$f" ] || { echo "fused80-check: no $f"; exit 1; }; done
shapes=1024x64x64,64x256x256,256x100x100,1000x28x28 sizes=9,13,15,17,23,31
summary=()
# the fused cases, in parallel (one process each; Catch2 names escaped)
"$tests" "[gpu]" --list-tests --verbosity quiet | grep -E "^GPU fused" > "$out/tests/list.txt"
i=0
while IFS= read -r name; do
  i=$((i + 1))
  spec=$(printf '%s' "$name" | sed 's/[][\\,*]/\\&/g')
  ( "$tests" "$spec" --reporter compact > "$out/tests/$i.txt" 2>&1; echo "rc=$? $name" >> "$out/tests/$i.txt" ) &
done < "$out/tests/list.txt"
wait
summary+=("fused test cases: $(cat "$out"/tests/[0-9]*.txt | grep -c '^rc=0 ') of $i passed")
for b in zero reflect101; do
  for t in 32 64 80 128; do
    "$bench" sweep --reps 5 --boundary $b --tile $t --shapes "$shapes" --sizes "$sizes" > "$out/$b-$t.txt" 2>&1 ||
      summary+=("sweep $b tile $t: rc $?")
  done
  "$bench" sweep --reps 5 --boundary $b --shapes "$shapes" --sizes "$sizes" > "$out/$b-auto.txt" 2>&1
  summary+=("the model, $b: $(grep -o 'Within 10%.*' "$out/$b-auto.txt")")
  echo "$b: fused column (ms), dense kernels, tiles 32 / 64 / 80 / 128 | direct"
  for t in 32 64 80 128; do
    grep -E "^[0-9x]+ +[0-9]+ +dense" "$out/$b-$t.txt" | awk -v t=$t '{print $1, $2, t, $9, $5}'
  done | sort -s -k1,1 -k2,2n |
    awk '{key=$1" K="$2; if (key!=last) {if (last!="") print line" | "d; line=key; last=key} line=line"  "$4; d=$5} END {print line" | "d}'
done
printf '%s\n' "${summary[@]}"
