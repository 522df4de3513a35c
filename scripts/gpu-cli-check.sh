#!/usr/bin/env bash
# On a GPU machine: the gpuconv CLI's CUDA results against its CPU results, image by image
# (data/images, several kernels and options), written uncompressed (PNM, PFM for float; PNG
# for RGBA) so that `cmp -l` counts differing bytes. JPEG inputs are decoded by OpenCV on both
# sides (--decoder cpu): the same decoded pixels. 8/16-bit outputs may differ by one level
# where a value lies within float rounding of a half step; float outputs by float rounding.
#   scripts/gpu-cli-check.sh path/to/gpuconv
set -uo pipefail
bin=${1:?usage: gpu-cli-check.sh path/to/gpuconv}
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
fail=0
for img in $(find "$here/data/images" -type f | sort); do
  case "$img" in
    *float*) ext=pfm ;;
    *rgba*) ext=png ;;
    *) ext=pnm ;;
  esac
  for spec in "gaussian:2" "sobel-x" "$here/data/kernels/binomial5.txt" "motion:9,30"; do
    for opts in "" "--correlate --boundary wrap" "--mode full --boundary constant:7"; do
      name=$(basename "$img").$(echo "$spec $opts" | tr -c 'A-Za-z0-9' _)
      "$bin" "$img" "$spec" "$work/$name.cuda.$ext" --device cuda --decoder cpu --quiet $opts 2>"$work/err" || { echo "FAIL cuda $name: $(cat "$work/err")"; fail=1; continue; }
      "$bin" "$img" "$spec" "$work/$name.cpu.$ext" --device cpu --quiet $opts 2>"$work/err" || { echo "FAIL cpu $name: $(cat "$work/err")"; fail=1; continue; }
      if cmp -s "$work/$name.cuda.$ext" "$work/$name.cpu.$ext"; then same=identical; else same="differ ($(cmp -l "$work/$name.cuda.$ext" "$work/$name.cpu.$ext" 2>/dev/null | wc -l) bytes of $(stat -c %s "$work/$name.cpu.$ext"))"; fi
      echo "$name: $same"
    done
  done
done
rm -rf "$work"
exit $fail
