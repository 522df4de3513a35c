#!/usr/bin/env bash
# On the GPU machine: the application as users meet it, with the portable binary and its app
# tests (scripts/build-portable.sh with PORTABLE_TESTS=1, built elsewhere and carried):
#   1. --version (is GPU JPEG there), the app tests ([app], [cli], [gpu]) with nvJPEG enabled
#   2. the CLI's CUDA outputs against its CPU outputs over data/ (scripts/gpu-cli-check.sh)
#   3. nvJPEG's decoded pixels against libjpeg's on the bench photos (identity kernel)
#   4. one 12 MP JPEG: wall time (cuda, cuda with the driver's start-up defaults, cpu; interleaved)
#      and --timing breakdown, OpenCV in Python beside it
#   5. gpuconv bench --workload jpeg and --workload png (each next to OpenCV alone), REPS runs
# Logs under $OUT (or ./gpu-app-logs); a short table last.
#   6. --sanitize: compute-sanitizer memcheck, racecheck, synccheck over the [pipeline] tests
#      (the pipeline's kernels and nvJPEG calls), each to completion
#   7. --sweep: the JPEG batch (all photos, gpuconv batch alone) under each of the pipeline's
#      settings in SWEEP (env assignments, ';'-separated), interleaved, SWEEP_ROUNDS rounds
#      (default 2), with GPUCONV_BATCH_STATS
#   scripts/gpu-app-check.sh [--no-tests] [--sanitize] [--no-bench] [--sweep] [--images N] [--reps R] [--png-images N]
set -uo pipefail
bin=${GPUCONV_BIN:-build-portable/apps/gpuconv}
tests=${GPUCONV_APP_TESTS:-build-portable/tests/gpuconv_app_tests}
out=${OUT:-$PWD/gpu-app-logs}
# carried gzipped (the device tool carries 64 MiB in all; the binary is ~66 MB, the tests ~71 MB,
# ~24 MB each gzipped): FILE.gz beside a missing FILE is unpacked first
for f in "$bin" "$tests"; do
  if [ ! -e "$f" ] && [ -f "$f.gz" ]; then gunzip -c "$f.gz" > "$f" && chmod +x "$f"; fi
done
images=96 reps=3 png_images=256 run_tests=1 sanitize=0 bench=1 sweep=0 jobs=$(nproc)
sweep_settings=${SWEEP:-"GPUCONV_DECODE_STAGES=3;GPUCONV_DECODE_STAGES=2;GPUCONV_STARTUP_DECODERS=16;GPUCONV_DECODE_BATCH=16"}
while [ $# -gt 0 ]; do
  case "$1" in
    --no-tests) run_tests=0 ;;
    --sanitize) sanitize=1 ;;
    --no-bench) bench=0 ;;
    --sweep) sweep=1 ;;
    --images) images=$2; shift ;;
    --reps) reps=$2; shift ;;
    --png-images) png_images=$2; shift ;;
    *) echo "gpu-app-check.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
mkdir -p "$out"
work=$(mktemp -d /tmp/gpu-app-check.XXXX)
trap 'rm -rf "$work"' EXIT
summary=()
# the summary, then (the device tool returns few files) everything else in one archive
finish() {
  echo "==== gpu-app-check summary ($(cat "$out/gpu.txt")) ===="
  printf '%s\n' "${summary[@]}" | tee "$out/summary.txt"
  tar -C "$out" -czf "$work/logs.tgz" --exclude summary.txt . && find "$out" -type f ! -name summary.txt -delete &&
    mv "$work/logs.tgz" "$out/"
  exit 0
}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$out/gpu.txt" 2>&1
"$bin" --version | tee "$out/version.txt"

if [ "$run_tests" = 1 ]; then
  # the CLI tests run the binary by an absolute path (GPUCONV_BIN may be relative or absolute)
  GPUCONV_CLI_PATH=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin") "$tests" --reporter compact \
    > "$out/app-tests.log" 2>&1
  summary+=("app tests (portable, nvJPEG on): rc=$? $(grep -E '^(All tests passed|test cases:)' "$out/app-tests.log" | tail -1)")
  grep -E "FAILED|failed" "$out/app-tests.log" | head -20
  bash scripts/gpu-cli-check.sh "$bin" > "$out/cli-check.log" 2>&1
  summary+=("gpu-cli-check (CUDA vs CPU over data/, --decoder cpu): rc=$? $(grep -c identical "$out/cli-check.log") identical, $(grep -c differ "$out/cli-check.log") differ")
fi

if [ "$sanitize" = 1 ]; then
  for tool in memcheck racecheck synccheck; do
    compute-sanitizer --tool "$tool" --error-exitcode 99 "$tests" "[pipeline]" > "$out/sanitize-$tool.log" 2>&1
    summary+=("compute-sanitizer $tool over [pipeline]: rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|test cases|All tests passed' "$out/sanitize-$tool.log" | tr '\n' ' ')")
  done
fi
[ "$bench" = 0 ] && [ "$sweep" = 0 ] && finish

# the photos, generated once by the bench (kept for the later runs)
"$bin" bench --workload jpeg --images "$images" --jobs "$jobs" --device cpu --no-peer --rounds 1 --dir "$work/bench" --keep -q \
  > "$out/bench-generate.txt" 2>&1
photo=$work/bench/in-jpeg/img00000.jpg
ls -la "$work/bench/in-jpeg" | head -5 > "$out/photos.txt"

if [ "$sweep" = 1 ]; then
  IFS=';' read -ra settings <<< "$sweep_settings"
  for r in $(seq 1 "${SWEEP_ROUNDS:-2}"); do
    for setting in "${settings[@]}"; do
      rm -rf "$work/sweep-out"
      log="$out/sweep-$r-${setting//[^A-Za-z0-9_=]/_}.txt"
      env $setting GPUCONV_BATCH_STATS=1 "$bin" batch "$work/bench/in-jpeg" gaussian:2 "$work/sweep-out" \
        --device cuda --jobs "$jobs" > "$log" 2>&1
      summary+=("sweep $setting run $r: $(grep -E '^gpuconv: batch done' "$log" | grep -oE '[0-9.]+ images/s') $(grep -oE 'CPU: [0-9]+|used at [0-9.]+ s' "$log" | tr '\n' ' ')")
    done
  done
  rm -rf "$work/sweep-out"
  [ "$bench" = 0 ] && finish
fi

# nvJPEG vs libjpeg: the identity kernel, written lossless
for i in 0 1 2 3; do
  p=$work/bench/in-jpeg/img0000$i.jpg
  "$bin" "$p" box:1 "$work/id-gpu-$i.png" --device cuda --decoder gpu -q
  "$bin" "$p" box:1 "$work/id-cpu-$i.png" --device cuda --decoder cpu -q
done
python3 - "$work" > "$out/decoder-diff.txt" 2>&1 <<'PY'
import sys, cv2, numpy as np
w = sys.argv[1]
for i in range(4):
    a = cv2.imread(f"{w}/id-gpu-{i}.png", cv2.IMREAD_UNCHANGED).astype(np.int32)
    b = cv2.imread(f"{w}/id-cpu-{i}.png", cv2.IMREAD_UNCHANGED).astype(np.int32)
    d = np.abs(a - b)
    print(f"photo {i}: nvJPEG vs libjpeg: max {d.max()}, mean {d.mean():.3f}, differing {100 * (d > 0).mean():.1f}% of samples")
PY
summary+=("$(head -1 "$out/decoder-diff.txt")")

# one 12 MP JPEG through the CLI: wall time (median of 15, the settings interleaved: this
# build's CUDA start-up, the driver's defaults it overrides, the CPU), --timing, peak RSS
wall() {  # seconds the command takes, start to exit
  local t0=$EPOCHREALTIME
  "$@" > /dev/null 2>&1
  awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.4f", b - a }'
}
median() { printf '%s\n' "$@" | sort -g | sed -n "$(( ($# + 1) / 2 ))p"; }
{
  cuda=() defaults=() cpu=()
  for r in $(seq 15); do
    cuda+=("$(wall "$bin" "$photo" gaussian:2 "$work/single.jpg" --device cuda -q)")
    defaults+=("$(CUDA_DEVICE_MAX_CONNECTIONS=8 CUDA_FORCE_PRELOAD_LIBRARIES=1 \
      wall "$bin" "$photo" gaussian:2 "$work/single.jpg" --device cuda -q)")
    cpu+=("$(wall "$bin" "$photo" gaussian:2 "$work/single.jpg" --device cpu -q)")
  done
  echo "gpuconv --device cuda: median wall $(median "${cuda[@]}") s over 15 (${cuda[*]})"
  echo "gpuconv --device cuda, the driver's defaults (CUDA_DEVICE_MAX_CONNECTIONS=8 CUDA_FORCE_PRELOAD_LIBRARIES=1): median wall $(median "${defaults[@]}") s over 15 (${defaults[*]})"
  echo "gpuconv --device cpu: median wall $(median "${cpu[@]}") s over 15 (${cpu[*]})"
  "$bin" "$photo" gaussian:2 "$work/single.jpg" --device cuda --timing
  "$bin" "$photo" gaussian:2 "$work/single.jpg" --device cpu --timing
  python3 - "$photo" "$work/single-cv.jpg" <<'PY'
import sys, time
t0 = time.perf_counter()
import cv2
t1 = time.perf_counter()
ts = []
for r in range(7):
    a = time.perf_counter()
    img = cv2.imread(sys.argv[1]); out = cv2.GaussianBlur(img, (17, 17), 2, borderType=cv2.BORDER_REFLECT_101)
    cv2.imwrite(sys.argv[2], out)
    ts.append(time.perf_counter() - a)
print(f"OpenCV (python3, cv2 {cv2.__version__}, {cv2.getNumThreads()} threads): imread+GaussianBlur 17x17+imwrite median of 7 {sorted(ts)[3]:.3f} s in one process (first {ts[0]:.3f} s; import cv2 {t1 - t0:.3f} s)")
PY
} > "$out/single.txt" 2>&1
summary+=("$(grep 'device cuda:' "$out/single.txt")" "$(grep "device cuda, the driver" "$out/single.txt" | sed 's/ s over.*/ s/')"
          "$(grep 'device cpu:' "$out/single.txt")" "$(grep '^OpenCV' "$out/single.txt")")
summary+=("single cuda $(grep -A14 'gpuconv: timing' "$out/single.txt" | grep -E 'total|peak' | head -2 | tr -s ' ' | tr '\n' ';')")

# batch benchmarks, each next to OpenCV alone and the CPU codec ceiling (GPUCONV_BATCH_STATS:
# where each run's time went); the first 96 photos (the issue's set) and all of them
mkdir -p "$work/bench96/in-jpeg"
for f in $(ls "$work/bench/in-jpeg" | head -96); do ln -sf "$work/bench/in-jpeg/$f" "$work/bench96/in-jpeg/$f"; done
for r in $(seq "$reps"); do
  for set in bench96 bench; do
    GPUCONV_BATCH_STATS=1 "$bin" bench --workload jpeg --images "$(ls "$work/$set/in-jpeg" | wc -l)" --jobs "$jobs" \
      --device cuda --rounds 1 --dir "$work/$set" --keep > "$out/bench-jpeg-$set-$r.txt" 2>&1
    summary+=("jpeg $set run $r: $(grep -E '^gpuconv batch' "$out/bench-jpeg-$set-$r.txt" | tr -s ' ')")
  done
done
summary+=("jpeg ceiling/opencv (last run): $(grep -E '^(decode|OpenCV)' "$out/bench-jpeg-bench-$reps.txt" | tr -s ' ' | tr '\n' ';')")
for r in $(seq "$reps"); do
  GPUCONV_BATCH_STATS=1 "$bin" bench --workload png --images "$png_images" --jobs "$jobs" --device cuda --rounds 1 \
    --dir "$work/bench" --keep > "$out/bench-png-$r.txt" 2>&1
  summary+=("png run $r: $(grep -E '^gpuconv batch' "$out/bench-png-$r.txt" | tr -s ' ')")
done
summary+=("png ceiling/opencv (last run): $(grep -E '^(decode|OpenCV)' "$out/bench-png-$reps.txt" | tr -s ' ' | tr '\n' ';')")

finish
