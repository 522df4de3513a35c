#!/usr/bin/env bash
# Builds the libFuzzer targets in fuzz/ with clang (-fsanitize=fuzzer,address,undefined) and
# runs each for SECONDS seconds (default 60; 0: build, then run the seed corpus once).
#   scripts/fuzz.sh [SECONDS] [TARGET...]     targets: kernel_text named_kernel cli_args png_scanlines
# Only host-side sources are compiled (src/kernel_io.cpp, named_kernels.cpp, cli.cpp, and what
# kernel_io now reaches for PSF stacks: stack_io, atomic_write, image_io, interrupt,
# jpeg_strips) with the CPU pool stack_io reads on (conv/cpu_pool.cpp), and PNG's CPU side for the GPU
# pipeline (pipeline/png_codec.cpp, zlib): the parsers need no GPU; the CUDA headers that conv/plan.hpp includes are taken from
# $CUDA_HOME/include (headers only, nothing of CUDA is linked).
# Work files go to build-fuzz/: the growing corpus in build-fuzz/corpus/<target> (the seeds in
# fuzz/corpus/<target> are read, never written), crash reproducers in build-fuzz/artifacts/,
# logs in build-fuzz/logs/. Exits non-zero when a target found a crash.
# Env: CXX_FUZZ (clang++), JOBS (targets run in parallel, default 1), NICE (default 10).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(kernel_text named_kernel cli_args png_scanlines)
cxx=${CXX_FUZZ:-clang++}
cuda_home=${CUDA_HOME:-/usr/local/cuda}
out=build-fuzz
mkdir -p "$out"/{obj,logs,artifacts}

if ! command -v "$cxx" >/dev/null; then
  echo "fuzz.sh: $cxx not found (apt-get install clang libclang-rt-14-dev)" >&2
  exit 1
fi
cuda_include=()
[ -d "$cuda_home/include" ] && cuda_include=(-isystem "$cuda_home/include")
read -r -a opencv_flags <<<"$(pkg-config --cflags opencv4)"
flags=(-std=c++17 -g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer-no-link,address,undefined
       -fno-sanitize-recover=undefined -DGPUCONV_VERSION=\"fuzz\" -Isrc -Ipipeline -I. "${cuda_include[@]}" "${opencv_flags[@]}")
libs=(-lopencv_imgcodecs -lopencv_core -lz -lpthread)

# the app-layer sources the parsers need, compiled once with the fuzzing instrumentation
objects=()
for src in kernel_io named_kernels cli stack_io atomic_write image_io interrupt jpeg_strips; do
  obj="$out/obj/$src.o"
  if [ ! -f "$obj" ] || [ "src/$src.cpp" -nt "$obj" ] || [ -n "$(find src -name '*.hpp' -newer "$obj")" ]; then
    echo "fuzz.sh: compiling src/$src.cpp"
    nice -n "${NICE:-10}" "$cxx" "${flags[@]}" -c "src/$src.cpp" -o "$obj"
  fi
  objects+=("$obj")
done
# and two outside src/: PNG's CPU side, and the CPU pool that stack_io reads pages on
for src in pipeline/png_codec conv/cpu_pool; do
  obj="$out/obj/$(basename "$src").o"
  if [ ! -f "$obj" ] || [ "$src.cpp" -nt "$obj" ] || [ "$src.hpp" -nt "$obj" ]; then
    echo "fuzz.sh: compiling $src.cpp"
    nice -n "${NICE:-10}" "$cxx" "${flags[@]}" -c "$src.cpp" -o "$obj"
  fi
  objects+=("$obj")
done
for t in "${targets[@]}"; do
  echo "fuzz.sh: building fuzz_$t"
  nice -n "${NICE:-10}" "$cxx" "${flags[@]}" -fsanitize=fuzzer "fuzz/fuzz_$t.cpp" "${objects[@]}" "${libs[@]}" -o "$out/fuzz_$t"
done

run_one() {
  local t=$1 corpus="$out/corpus/$1"
  mkdir -p "$corpus"
  # -timeout=30: the largest legal named kernels (4097 x 4097, e.g. log:512) take ~1.5 s with the
  # fuzzing instrumentation alone, and far longer on a busy 2-core machine; a real hang is longer
  local args=(-timeout=30 -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$out/artifacts/$t-")
  if [ "$seconds" = 0 ]; then
    args+=(-runs=0)   # every seed once
  else
    args+=(-max_total_time="$seconds")
  fi
  [ "$t" = cli_args ] && args+=(-dict=fuzz/cli_args.dict)
  echo "fuzz.sh: running fuzz_$t for ${seconds}s (log: $out/logs/$t.log)"
  if UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ASAN_OPTIONS=detect_leaks=1 \
     nice -n "${NICE:-10}" "$out/fuzz_$t" "${args[@]}" "$corpus" "fuzz/corpus/$t" >"$out/logs/$t.log" 2>&1; then
    echo "fuzz.sh: fuzz_$t: $(grep -E 'stat::number_of_executed_units' "$out/logs/$t.log" | awk '{print $2}') executions, no crash"
  else
    echo "fuzz.sh: fuzz_$t FOUND A CRASH (see $out/logs/$t.log, reproducer in $out/artifacts/):" >&2
    grep -E 'ERROR|runtime error|SUMMARY|Test unit written' "$out/logs/$t.log" | head -5 >&2
    return 1
  fi
}

status=0
if [ "${JOBS:-1}" -gt 1 ]; then
  pids=()
  for t in "${targets[@]}"; do run_one "$t" & pids+=($!); done
  for p in "${pids[@]}"; do wait "$p" || status=1; done
else
  for t in "${targets[@]}"; do run_one "$t" || status=1; done
fi
exit $status
