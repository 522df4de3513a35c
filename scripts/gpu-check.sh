#!/usr/bin/env bash
# GPU check: configure, build, run every test (the [gpu] ones included) and the benchmarks on
# a machine with a CUDA GPU (OpenCV optional), then print a short summary last.
# Logs go to $OUT (the device tool's output folder) or ./gpu-check-logs.
#   scripts/gpu-check.sh [--no-bench] [--bench-only] [--benches fft1d,conv(,fft3d,conv3d,sweep,deconvolve)] [--tests FILTER] [--sanitize]
#                        [--sanitize-tools memcheck,racecheck,synccheck] [--sanitize-cap SECONDS]
#                        [--sanitize-filter CATCH2_SPEC] [--sanitize-jobs N]
#                        [--sanitize-only]   (no configure, build, ctest or benchmarks: the sanitizers over an
#                                             existing $GPUCONV_BUILD_DIR/tests/gpuconv_tests, e.g. one carried
#                                             to the device, which saves a device call's build)
#                        [--cases-only]      (as --sanitize-only, without the sanitizer: every [gpu] case of that
#                                             binary as a process of its own, 12 at once, each capped at 300 s
#                                             unless --sanitize-jobs / --sanitize-cap say otherwise; on the H100
#                                             host all 67 in 159 s, session 77)
#                        [--sizes n1,n2] [--reps R]
#                        [--variant NAME='-DFLAG=V ...']...   (extra builds with other CUDA flags, benchmarked too)
# --sanitize-tools and --sanitize-filter turn the sanitizers on (as --sanitize does).
set -uo pipefail

final_out=${OUT:-$PWD/gpu-check-logs}
out="$final_out/logs"  # packed into logs.tgz at the end (the device tool returns few files)
build=${GPUCONV_BUILD_DIR:-build-gpu}
run_tests=1 run_bench=1 sanitize=0 prebuilt=0 bench_args=() variants=() benches=fft1d,conv test_filter=""
# compute-sanitizer runs each tool over the [gpu] tests to completion, one process per test case,
# --sanitize-jobs of them at once (racecheck over all of them in one process took longer than a
# device call; ten at once: every case but one in 320 s; with the direct sweep as three cases,
# 16 at once on the H100 host: all 45 in 490 s, the longest 434 s). The cap is per test case and only guards
# against a hang (a case cut by it is reported as INCOMPLETE and fails the check); each case's log
# is kept and the first report of a case with errors goes to sanitize-TOOL-problems.txt and the
# summary. Split the tools over several calls with --sanitize-tools where one call's time limit
# is shorter than the three together. Tests that repeat work for stress (GPUCONV_TEST_ROUNDS) run
# 3 rounds under the sanitizer: its hazards show in one round, and each launch is ~100x slower.
san_tools=memcheck,racecheck,synccheck san_cap=1500 san_filter="[gpu]" san_jobs=6 cap_set=0 jobs_set=0
while [ $# -gt 0 ]; do
  case "$1" in
    --no-bench) run_bench=0 ;;
    --bench-only) run_tests=0 ;;
    --sizes|--reps) bench_args+=("$1" "$2"); shift ;;
    --benches) benches=$2; shift ;;
    --tests) test_filter=$2; shift ;;
    --sanitize) sanitize=1 ;;
    --sanitize-tools) san_tools=$2; sanitize=1; shift ;;
    --sanitize-cap) san_cap=$2; cap_set=1; shift ;;
    --sanitize-filter) san_filter=$2; sanitize=1; shift ;;
    --sanitize-jobs) san_jobs=$2; jobs_set=1; shift ;;
    --sanitize-only) sanitize=1; prebuilt=1; run_tests=0; run_bench=0 ;;
    --cases-only) sanitize=1; prebuilt=1; run_tests=0; run_bench=0; san_tools=plain ;;
    --variant) variants+=("$2"); shift ;;
    *) echo "gpu-check.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
if [ "$san_tools" = plain ]; then  # --cases-only
  [ "$jobs_set" = 1 ] || san_jobs=12
  [ "$cap_set" = 1 ] || san_cap=300
fi
mkdir -p "$out"
start=$(date +%s)

nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv > "$out/gpu.txt" 2>&1 || true
generator=()
command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
if [ "$prebuilt" = 1 ]; then
  if [ ! -x "$build/tests/gpuconv_tests" ]; then
    echo "gpu-check: --sanitize-only needs $build/tests/gpuconv_tests (set GPUCONV_BUILD_DIR)"; exit 1
  fi
# (the sanitizers' reports name source lines where the device code carries them)
elif ! cmake -S . -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DGPUCONV_PTXAS_VERBOSE=ON \
    "-DGPUCONV_LINEINFO=$([ "$sanitize" = 1 ] && echo ON || echo OFF)" > "$out/configure.log" 2>&1; then
  tail -30 "$out/configure.log"; echo "gpu-check: configure FAILED"; exit 1
elif ! cmake --build "$build" -j "$(nproc)" > "$out/build.log" 2>&1; then
  grep -E "error" "$out/build.log" | head -30; echo "gpu-check: build FAILED"; exit 1
fi
build_s=$(( $(date +%s) - start ))

test_rc=0 test_line="tests not run"
if [ "$run_tests" = 1 ]; then
  ctest --test-dir "$build" --output-on-failure -j 4 ${test_filter:+-R "$test_filter"} > "$out/ctest.log" 2>&1
  test_rc=$?
  test_line=$(grep -E "tests passed|tests failed" "$out/ctest.log" | tail -1)
  skipped=$(grep -c "Skipped" "$out/ctest.log" || true)
  [ "$test_rc" = 0 ] || grep -E "Failed|FAILED|with expansion|REQUIRE|CHECK" "$out/ctest.log" | head -40
fi

# compute-sanitizer over the [gpu] tests: each tool to completion, a process per test case (see
# san_cap above)
san_lines=()
# one test case under one tool: its log, and a line "rc seconds | id | name | summary" in a .sum file
sanitize_case() {
  local tool=$1 name=$2 id spec t0 rc
  id=$(printf '%s' "$name" | md5sum | cut -c1-10)
  spec=$(printf '%s' "$name" | sed -e 's/[][\\,*]/\\&/g')  # Catch2 test spec: \ , [ ] * escaped
  t0=$(date +%s)
  if [ "$tool" = plain ]; then  # --cases-only: the case alone, no sanitizer
    timeout "$san_cap" "$build/tests/gpuconv_tests" "$spec" > "$out/sanitize-$tool-$id.log" 2>&1
  else
    GPUCONV_TEST_ROUNDS=3 timeout "$san_cap" compute-sanitizer --tool "$tool" --error-exitcode 99 "$build/tests/gpuconv_tests" "$spec" \
      > "$out/sanitize-$tool-$id.log" 2>&1
  fi
  rc=$?
  printf '%s %s | %s | %s | %s\n' "$rc" "$(( $(date +%s) - t0 ))" "$id" "$name" \
    "$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY|test cases|All tests passed" "$out/sanitize-$tool-$id.log" | tr '\n' ' ')" \
    > "$out/sanitize-$tool-$id.sum"
}
if [ "$sanitize" = 1 ]; then
  export -f sanitize_case
  export build out san_cap
  # only [gpu] cases: compute-sanitizer fails a process that makes no CUDA call (exit 255,
  # "terminated before first instrumented API call"), so a filter's host cases are left out
  mapfile -t san_cases < <(comm -12 <("$build/tests/gpuconv_tests" --list-tests --verbosity quiet "$san_filter" | sort) \
                                    <("$build/tests/gpuconv_tests" --list-tests --verbosity quiet "[gpu]" | sort))
  # (an empty list would read as a clean run: say so and fail)
  if [ "${#san_cases[@]}" = 0 ]; then echo "gpu-check: no [gpu] test case matches '$san_filter'"; exit 1; fi
  for tool in ${san_tools//,/ }; do
    t0=$(date +%s)
    rm -f "$out/sanitize-$tool-"*.sum
    printf '%s\0' "${san_cases[@]}" | xargs -0 -P "$san_jobs" -I{} bash -c 'sanitize_case "$0" "$1"' "$tool" {}
    cat "$out/sanitize-$tool-"*.sum > "$out/sanitize-$tool.txt" 2>/dev/null
    cases=$(wc -l < "$out/sanitize-$tool.txt")
    clean=$(grep -c '^0 ' "$out/sanitize-$tool.txt")
    cut=$(grep -c '^124 ' "$out/sanitize-$tool.txt")
    : > "$out/sanitize-$tool-problems.txt"
    while IFS= read -r line; do
      case "$line" in 0\ *) continue ;; esac
      id=$(printf '%s' "$line" | cut -d'|' -f2 | tr -d ' ')
      { echo "== $line"; grep -m2 -B2 -A14 -E "Error|Race reported|FAILED" "$out/sanitize-$tool-$id.log" | cut -c1-200; } \
        >> "$out/sanitize-$tool-problems.txt"
    done < "$out/sanitize-$tool.txt"
    if [ "$cases" = "$clean" ] && [ "$cases" = "${#san_cases[@]}" ]; then verdict=clean; else verdict=FAILED; test_rc=1; fi
    label="compute-sanitizer $tool" what=clean
    [ "$tool" = plain ] && label="[gpu] cases, a process each" what="passed"
    san_lines+=("$label: $verdict: $clean of ${#san_cases[@]} test cases $what, $cut cut at ${san_cap}s ($(( $(date +%s) - t0 ))s, $san_jobs at once)")
    [ "$verdict" = clean ] || san_lines+=("$(head -c 1500 "$out/sanitize-$tool-problems.txt")")
  done
fi

bench_rc=0
if [ "$run_bench" = 1 ]; then
  if [[ ,$benches, == *,fft1d,* ]]; then
    "$build/apps/gpuconv-bench" fft1d --csv "$out/fft1d.csv" "${bench_args[@]}" > "$out/bench-fft1d.txt" 2> "$out/bench-fft1d.err" || bench_rc=$?
  fi
  if [[ ,$benches, == *,conv,* ]]; then
    "$build/apps/gpuconv-bench" conv --reps 10 --csv "$out/conv.csv" > "$out/bench-conv.txt" 2> "$out/bench-conv.err" || bench_rc=$?
  fi
  # volumes (issue 15) and the CUDA methods' crossover table (issue 13), opt-in:
  # --benches fft1d,conv,fft3d,conv3d,sweep
  for b in fft3d conv3d sweep; do
    if [[ ,$benches, == *,$b,* ]]; then
      "$build/apps/gpuconv-bench" "$b" --reps 10 --csv "$out/$b.csv" > "$out/bench-$b.txt" 2> "$out/bench-$b.err" || bench_rc=$?
    fi
  done
  # Richardson-Lucy (issue 15), opt-in (--benches ...,deconvolve), with its CuPy peer
  # (scripts/rl_cupy.py: same data, same session) where CuPy imports
  if [[ ,$benches, == *,deconvolve,* ]]; then
    mkdir -p "$out/rl"
    "$build/apps/gpuconv-bench" deconvolve --csv "$out/deconvolve.csv" --dump "$out/rl" > "$out/bench-deconvolve.txt" \
      2> "$out/bench-deconvolve.err" || bench_rc=$?
    if python3 -c "import cupy" 2>/dev/null; then
      python3 scripts/rl_cupy.py "$out/rl" >> "$out/bench-deconvolve.txt" 2>> "$out/bench-deconvolve.err" || bench_rc=$?
    else
      echo "(no CuPy here: python3 scripts/rl_cupy.py DIR after gpuconv-bench deconvolve --dump DIR)" >> "$out/bench-deconvolve.txt"
    fi
    rm -f "$out/rl/"*.f32  # three 128 MB volumes
  fi
fi

for v in "${variants[@]}"; do
  name=${v%%=*} flags=${v#*=}
  vb="$build-$name"
  { cmake -S . -B "$vb" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DGPUCONV_BUILD_TESTS=OFF \
      -DGPUCONV_WITH_OPENCV=OFF -DGPUCONV_PTXAS_VERBOSE=ON "-DCMAKE_CUDA_FLAGS=$flags" &&
    cmake --build "$vb" -j "$(nproc)" --target gpuconv-bench; } > "$out/build-$name.log" 2>&1 ||
    { echo "variant $name: build FAILED"; continue; }
  [[ ,$benches, == *,fft1d,* ]] && "$vb/apps/gpuconv-bench" fft1d --csv "$out/fft1d-$name.csv" "${bench_args[@]}" > "$out/bench-fft1d-$name.txt" 2>&1
  [[ ,$benches, == *,conv,* ]] && "$vb/apps/gpuconv-bench" conv --reps 10 --csv "$out/conv-$name.csv" > "$out/bench-conv-$name.txt" 2>&1
  [[ ,$benches, == *,fft3d,* ]] && "$vb/apps/gpuconv-bench" fft3d --reps 10 --csv "$out/fft3d-$name.csv" > "$out/bench-fft3d-$name.txt" 2>&1
done

echo "==== gpu-check summary ($(head -2 "$out/gpu.txt" | tail -1)) ===="
build_note="${build_s}s"
[ "$prebuilt" = 1 ] && build_note="none (prebuilt $build)"
echo "build: ${build_note}; tests: ${test_line} (skipped lines: ${skipped:-0}, rc=$test_rc)"
for l in "${san_lines[@]}"; do echo "$l"; done
if [ "$run_bench" = 1 ]; then
  cat "$out/bench-fft1d.txt" 2>/dev/null
  echo
  cat "$out/bench-conv.txt" 2>/dev/null
  for b in fft3d conv3d sweep deconvolve; do [ -f "$out/bench-$b.txt" ] && { echo; cat "$out/bench-$b.txt"; }; done
  [ "$bench_rc" = 0 ] || { echo "bench rc=$bench_rc"; tail -5 "$out/bench-fft1d.err" "$out/bench-conv.err"; }
fi
for v in "${variants[@]}"; do
  name=${v%%=*}
  echo "---- variant $name (${v#*=}) ----"
  grep -E "^ +[0-9]+ \|" "$out/bench-fft1d-$name.txt" 2>/dev/null | cut -c1-95
  grep -E "^[0-9]+x[0-9]+" "$out/bench-conv-$name.txt" 2>/dev/null
  grep -E "^ +[0-9]+x[0-9]+x[0-9]+ \|" "$out/bench-fft3d-$name.txt" 2>/dev/null
done
echo "total: $(( $(date +%s) - start ))s"
cp "$out"/bench-*.txt "$final_out"/ 2>/dev/null
tar -C "$final_out" -czf "$final_out/logs.tgz" logs && rm -rf "$out"
[ "$test_rc" = 0 ] && [ "$bench_rc" = 0 ]
