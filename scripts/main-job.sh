#!/usr/bin/env bash
# The main job: install, build, run the FFT self-check (the [fft] tests: host transforms
# against a long-double DFT, GPU kernels against cuFFT where a GPU is present), then run
# gpuconv on the sample data (data/): single images with a text kernel, a named kernel and a
# PSF image, and a batch over data/images. On a GPU, also the fft1d benchmark.
# Outputs go to $OUT/main-job when $OUT is set, else ./main-job-out.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
build=${GPUCONV_BUILD_DIR:-build}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build "$build" -j "$(nproc 2>/dev/null || echo 2)"
"$build/tests/gpuconv_tests" "[fft]"

gpuconv="$build/apps/gpuconv"
out=${OUT:+$OUT/main-job}
out=${out:-main-job-out}
rm -rf "$out"
mkdir -p "$out"
run() {
  echo "+ gpuconv $*"
  "$gpuconv" "$@"
}
"$gpuconv" --version
run data/images/chart.png data/kernels/sharpen.txt "$out/chart-sharpen.png"
run data/images/chart.png gaussian:2 "$out/chart-gaussian2.png"
run data/images/chart.png data/kernels/emboss.txt "$out/chart-emboss.png" --correlate --boundary replicate
run data/images/noise.jpg motion:15,30 "$out/noise-motion.jpg"
run data/images/gray16.png sobel-x "$out/gray16-sobel-x.tif" --depth 32f
run data/images/logo-rgba.png box:9 "$out/logo-box9.png"
run data/images/field-float.tif log:2 "$out/field-log2.tif"
run data/images/chart.png data/kernels/star-psf.png "$out/chart-star-psf.png" --mode full --boundary zero
run data/images/chart.png data/kernels/binomial5.txt "$out/chart-binomial.png" --normalize
run batch data/images disk:3 "$out/batch" --recursive --format tif
echo "main-job: wrote:"
find "$out" -type f | sort | while read -r f; do printf '  %s (%s bytes)\n' "$f" "$(stat -c %s "$f")"; done

if nvidia-smi -L >/dev/null 2>&1; then
  "$build/apps/gpuconv-bench" fft1d
else
  echo "main-job: no NVIDIA GPU here: the fft1d benchmark needs one (the [gpu] checks above were skipped)"
fi
