#!/usr/bin/env bash
# Smoke test of a portable gpuconv binary (scripts/build-portable.sh) on a machine that has
# no OpenCV: checks that it links nothing but glibc, then runs --version, one single-image
# job and one recursive batch job on the sample images in data/images (8- and 16-bit PNG,
# RGBA PNG, JPEG, float TIFF, one in a subfolder) with a kernel file from data/kernels, with
# --device ${DEVICE:-auto}, and checks exit codes and outputs (present, non-empty, with the
# signature of their format).
#
#   scripts/portable-smoke.sh path/to/gpuconv
#
# Environment: DEVICE (auto, cuda, cpu; default auto), KERNEL (a named kernel or a file;
# default data/kernels/binomial5.txt with --normalize), DATA_DIR (default: data/ beside
# scripts/), WORK (work folder; default a fresh
# temporary one, removed on success). The binary runs from a copy in the work folder with
# a bare environment (env -i, no LD_LIBRARY_PATH), so it cannot reach the build tree.
set -uo pipefail

[ $# -eq 1 ] || { echo "usage: $0 path/to/gpuconv" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
data=${DATA_DIR:-$here/../data}
device=${DEVICE:-auto}
work=${WORK:-$(mktemp -d "${TMPDIR:-/tmp}/gpuconv-smoke.XXXXXX")}
mkdir -p "$work/in" "$work/out"
failures=0
pass() { echo "PASS  $*"; }
fail() { echo "FAIL  $*"; failures=$((failures + 1)); }

[ -f "$1" ] || { echo "no binary at $1" >&2; exit 2; }
bin="$work/gpuconv"
cp "$1" "$bin" && chmod +x "$bin"
[ -d "$data/images" ] && [ -f "$data/images/chart.png" ] || { echo "no sample images in $data/images (set DATA_DIR)" >&2; exit 2; }
cp -R "$data/images/." "$work/in/"
(cd "$work/in" && find . -type f | sed 's|^\./||' | sort) >"$work/inputs.txt"
if [ -n "${KERNEL:-}" ]; then
  kernel=$KERNEL; kernel_options=()
else
  cp "$data/kernels/binomial5.txt" "$work/binomial5.txt"
  kernel="$work/binomial5.txt"; kernel_options=(--normalize)
fi

# The bare environment every run gets.
run() { env -i PATH=/usr/bin:/bin HOME="$work" "$bin" "$@"; }

# Magic bytes of a PNG, JPEG or TIFF file.
signature_ok() {
  local head
  head=$(od -An -tx1 -N4 "$1" 2>/dev/null | tr -d ' \n')
  case "$1" in
    *.png) [ "$head" = 89504e47 ] ;;
    *.jpg) [ "${head:0:4}" = ffd8 ] ;;
    *.tif|*.tiff) [ "$head" = 49492a00 ] || [ "$head" = 4d4d002a ] ;;
    *) return 1 ;;
  esac
}
check_output() {
  if [ -s "$1" ] && signature_ok "$1"; then pass "output $1 ($(stat -c %s "$1") bytes)"
  else fail "output $1 missing, empty or not a ${1##*.} file"; fi
}

echo "== machine: $(. /etc/os-release && echo "$PRETTY_NAME"), glibc $(ldd --version | head -n1 | awk '{ print $NF }')"
if command -v nvidia-smi >/dev/null 2>&1; then
  echo "== GPU: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n1)"
else
  echo "== GPU: no nvidia-smi"
fi
if ldconfig -p 2>/dev/null | grep -q 'libopencv_core'; then
  echo "== note: this machine has OpenCV libraries; the dependency check below shows whether the binary uses them"
fi

echo "== dynamic dependencies"
ldd "$bin" | tee "$work/ldd.txt"
unexpected=$(awk '{ print $1 }' "$work/ldd.txt" \
  | grep -vE '^(linux-vdso\.so|/?.*ld-linux-x86-64\.so|lib(c|m|dl|pthread|rt)\.so)' || true)
if [ -z "$unexpected" ]; then pass "links only glibc"
else fail "links more than glibc: $(echo $unexpected)"; fi

echo "== gpuconv --version"
if version=$(run --version); then pass "--version: $version"; else fail "--version (exit $?)"; fi

echo "== single image: gpuconv in/chart.png ${kernel##*/} out/single.png ${kernel_options[*]} --device $device"
run "$work/in/chart.png" "$kernel" "$work/out/single.png" "${kernel_options[@]}" --device "$device"
rc=$?
if [ $rc -eq 0 ]; then pass "single image (exit 0)"; else fail "single image (exit $rc)"; fi
check_output "$work/out/single.png"

echo "== batch: gpuconv batch in ${kernel##*/} out/batch --recursive ${kernel_options[*]} --device $device"
run batch "$work/in" "$kernel" "$work/out/batch" --recursive "${kernel_options[@]}" --device "$device"
rc=$?
if [ $rc -eq 0 ]; then pass "batch (exit 0)"; else fail "batch (exit $rc)"; fi
while read -r f; do check_output "$work/out/batch/$f"; done <"$work/inputs.txt"

if [ $failures -eq 0 ]; then
  echo "== portable smoke: all passed (device $device)"
  [ -n "${WORK:-}" ] || rm -rf "$work"
  exit 0
fi
echo "== portable smoke: $failures failure(s); work folder kept: $work"
exit 1
