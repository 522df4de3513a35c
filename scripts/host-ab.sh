#!/usr/bin/env bash
# plan::execute on host buffers under several environment settings, timed against each other in
# interleaved rounds, one process per setting and round (the settings are read once a process):
# `gpuconv-bench host` with GPUCONV_HOST_STATS=1, so that each pageable call's host time (waiting
# for the GPU, copying, the copy rate) comes with its % of the PCIe floor. For the staging knobs
# (GPUCONV_HOST_UNIT_MB, GPUCONV_COPY_PLAIN, GPUCONV_COPY_THREADS, GPUCONV_POOL_SPIN_US); the host's
# memcpy rate moves between processes on the shared GPU hosts, hence the interleaving.
#
#   scripts/host-ab.sh [--bench PATH] [--rounds 3] [--reps 9] NAME='VAR=V VAR2=V' ...
#
# A setting named `default` (no variables) runs in every round first. Per round and setting:
# each case's execute on pageable buffers as % of the floor, and for the issue's case
# (3x3000x4000 f32 K=9) the last call's units, copy ms and copy GB/s. Logs go to $OUT or
# ./host-ab-logs, packed into logs.tgz there at the end (the device tool returns few files),
# beside summary.txt; the table to stdout, the medians over the rounds last.
set -euo pipefail
cd "$(dirname "$0")/.."
bench="" rounds=3 reps=9
declare -a names=(default) envs=("")
while [ $# -gt 0 ]; do
  case "$1" in
    --bench) bench=$2; shift ;;
    --rounds) rounds=$2; shift ;;
    --reps) reps=$2; shift ;;
    -h|--help) sed -n 2,14p "$0"; exit 0 ;;
    *=*) names+=("${1%%=*}"); envs+=("${1#*=}") ;;
    *) echo "host-ab.sh: unknown argument '$1' (NAME='VAR=V ...' expected)" >&2; exit 2 ;;
  esac
  shift
done
if [ -z "$bench" ]; then
  for b in build-gpu/apps/gpuconv-bench build/apps/gpuconv-bench; do [ -x "$b" ] && { bench=$b; break; }; done
fi
if [ -z "$bench" ] || [ ! -x "$bench" ]; then
  echo "host-ab.sh: no gpuconv-bench (give --bench PATH)" >&2; exit 2
fi
out=${OUT:-$PWD/host-ab-logs}
mkdir -p "$out"
summary="$out/summary.txt"
: > "$summary"
mkdir -p "$out/logs"
rc=0
for r in $(seq 1 "$rounds"); do
  for i in "${!names[@]}"; do
    n=${names[$i]}
    log="$out/logs/$n-round$r.txt"
    # shellcheck disable=SC2086 # a setting's assignments are words on purpose
    if ! env GPUCONV_HOST_STATS=1 ${envs[$i]} "$bench" host --reps "$reps" > "$log" 2>&1; then
      echo "$n round $r: FAILED (see $log)"; tail -3 "$log"; rc=1; continue
    fi
    # the case rows: name | MB in | H2D D2H floor | pageable | execute %floor | pinned %floor | ...;
    # each pageable call prints one host-stats line before its case's row
    awk -v name="$n" -v round="$r" -F'|' '
      /^host-stats/ { stats = $0; next }
      /^host memcpy/ { split($0, m, "16: "); memcpy = m[2] }
      NF >= 6 && $1 ~ /^[0-9]+x[0-9]/ {
        split($4, e, " "); pct = e[2]; sub(/%/, "", pct)
        label = substr($1, 1, 26); gsub(/ +$/, "", label)
        printf "%s\t%s\t%s\t%s\n", name, round, label, pct >> "'"$summary"'"
        line = line sprintf("  %s %s%%", label, pct)
        if (label == "3x3000x4000 f32 K=9" && stats != "") {
          split(stats, w, " "); units = w[3]
          match(stats, /copy [0-9.]+ ms/); copy = substr(stats, RSTART + 5, RLENGTH - 8)
          match(stats, /\([0-9.]+ GB\/s\)/); rate = substr(stats, RSTART + 1, RLENGTH - 2)
          extra = sprintf(" [f32 12 MP: %s units, copying %s ms, %s]", units, copy, rate)
        }
      }
      END { printf "%-10s round %s (memcpy 16 threads %s GB/s):%s%s\n", name, round, memcpy, line, extra }' "$log"
  done
done
echo "== medians over the rounds, % of the floor"
awk -F'\t' '{ k = $1 "\t" $3; v[k] = v[k] " " $4; if (!($1 in seen)) { seen[$1] = 1; order[++no] = $1 }
              if (!($3 in cseen)) { cseen[$3] = 1; cases[++nc] = $3 } }
  END {
    for (c = 1; c <= nc; ++c) {
      printf "%-26s", cases[c]
      for (o = 1; o <= no; ++o) {
        n = split(v[order[o] "\t" cases[c]], a, " ")
        for (x = 1; x <= n; ++x) for (y = x + 1; y <= n; ++y) if (a[y] + 0 < a[x] + 0) { t = a[x]; a[x] = a[y]; a[y] = t }
        printf "  %s %s", order[o], (n ? a[int((n + 1) / 2)] : "-")
      }
      printf "\n"
    }
  }' "$summary"
tar czf "$out/logs.tgz" -C "$out" logs && rm -rf "$out/logs"
exit $rc
