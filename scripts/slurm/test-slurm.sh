#!/usr/bin/env bash
# A real one-node Slurm cluster, started for this test only, runs scripts/slurm/gpuconv-array.sh:
#   scripts/slurm/test-slurm.sh [path/to/gpuconv]          (default build/apps/gpuconv)
# 1. munged and slurmctld + slurmd on this machine, with a key, a slurm.conf (no cgroup
#    plugins, no accounting), sockets, state, spool and logs in a temporary directory and a
#    free port pair; nothing under /etc or /run is used.
# 2. sbatch --array=0-3 --wait over 40 generated PNGs: the four shards' outputs are the input
#    set, each file written once (the summaries' processed counts add up to the input count and
#    every input has its output), byte-identical to one non-sharded run; the summaries add up.
# 3. The array again into an empty directory; one task is cancelled (scancel JOB_I: SIGTERM)
#    once it has written its first output and before it is done; its share is then incomplete.
#    That task alone is submitted again (GPUCONV_SHARDS=4 sbatch --array=I): the set is
#    complete and identical to the reference, its summary skips what was done, and no output
#    present before the rerun was rewritten (same inode and mtime).
# A trap cancels the jobs, shuts the daemons down, kills what is left of them (by pid: the
# processes that carry this run's token in their environment) and removes the directory,
# whatever happens; every wait is bounded, and the whole test stops itself after
# GPUCONV_SLURM_TEST_LIMIT seconds (default 240). GPUCONV_SLURM_TEST_KEEP=1 keeps the directory
# (inputs, outputs, summaries, the daemons' and the jobs' logs).
# Exit 77 (CTest: skipped) with a message when it cannot run here: not root, or the Slurm and
# MUNGE daemons are not installed (apt-get install slurmctld slurmd slurm-client munge;
# scripts/setup.sh installs them). GPUCONV_REQUIRE_SLURM=1 (set by .ci/run) makes that a
# failure instead, so that CI cannot pass without running it.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${1:-$root/build/apps/gpuconv}
array_script=$root/scripts/slurm/gpuconv-array.sh
limit=${GPUCONV_SLURM_TEST_LIMIT:-240}
started=$SECONDS

say() { echo "test-slurm: $*"; }
fail() { echo "test-slurm: FAIL: $*" >&2; exit 1; }
skip() {
  if [ "${GPUCONV_REQUIRE_SLURM:-0}" = 1 ]; then fail "cannot run, and GPUCONV_REQUIRE_SLURM=1: $*"; fi
  echo "test-slurm: SKIPPED: $*" >&2
  exit 77
}

[ "$(id -u)" = 0 ] || skip "needs root (slurmd runs the jobs as their user and must start as root)"
missing=()
for c in munged mungekey munge slurmctld slurmd sbatch squeue sinfo scontrol scancel python3; do
  command -v "$c" >/dev/null 2>&1 || [ -x "/usr/sbin/$c" ] || missing+=("$c")
done
[ ${#missing[@]} = 0 ] || skip "not installed: ${missing[*]} (apt-get install slurmctld slurmd slurm-client munge python3)"
export PATH=$PATH:/usr/sbin:/sbin
[ -x "$bin" ] || fail "$bin is not built"
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")  # the jobs run elsewhere
[ -f "$array_script" ] || fail "$array_script is missing"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpuconv-slurm.XXXXXX")
chmod 700 "$tmp"
token="GPUCONV_SLURM_TEST=$tmp"  # in the environment of the daemons and the jobs only
munged_pid="" ctld_pid="" slurmd_pid="" submit_pid=""

# The processes of this run that are still alive: those whose environment carries the token
# (slurmctld, slurmd, slurmstepd, the jobs), and the ones started here.
our_pids() {
  local p
  for p in /proc/[0-9]*; do
    p=${p#/proc/}
    [ "$p" != $$ ] || continue
    if { tr '\0' '\n' <"/proc/$p/environ"; } 2>/dev/null | grep -qxF "$token"; then echo "$p"; fi
  done
}
cleanup() {
  local rc=$? p i
  trap - EXIT INT TERM
  set +e
  [ -z "${watchdog:-}" ] || kill "$watchdog" 2>/dev/null
  if [ -n "$ctld_pid" ] && kill -0 "$ctld_pid" 2>/dev/null; then
    timeout 10 scancel --quiet --user=root >/dev/null 2>&1
    for ((i = 0; i < 50; i++)); do  # up to 10 s for the jobs to go
      [ -z "$(timeout 5 squeue -h -o %i 2>/dev/null)" ] && break
      sleep 0.2
    done
    timeout 10 scontrol shutdown >/dev/null 2>&1
  fi
  [ -z "$submit_pid" ] || kill "$submit_pid" 2>/dev/null
  for p in $ctld_pid $slurmd_pid; do  # up to 10 s each for the daemons to stop
    for ((i = 0; i < 50; i++)); do kill -0 "$p" 2>/dev/null || break; sleep 0.2; done
  done
  for p in $(our_pids); do kill -TERM "$p" 2>/dev/null; done
  sleep 0.5
  for p in $(our_pids); do kill -KILL "$p" 2>/dev/null; done
  if [ -n "$munged_pid" ]; then
    kill -TERM "$munged_pid" 2>/dev/null
    for ((i = 0; i < 25; i++)); do kill -0 "$munged_pid" 2>/dev/null || break; sleep 0.2; done
    kill -KILL "$munged_pid" 2>/dev/null
  fi
  if [ "$rc" != 0 ] && [ "$rc" != 77 ]; then
    for f in "$tmp"/log/*.log "$tmp"/jobs/*.log; do
      [ -f "$f" ] || continue
      echo "---- $(basename "$f") (last 25 lines)" >&2
      tail -n 25 "$f" >&2
    done
  fi
  if [ "${GPUCONV_SLURM_TEST_KEEP:-0}" = 1 ]; then
    say "$( [ "$rc" = 0 ] && echo passed || echo "exit $rc" ) in $((SECONDS - started)) s; daemons stopped, $tmp kept"
  else
    rm -rf "$tmp"
    say "$( [ "$rc" = 0 ] && echo passed || echo "exit $rc" ) in $((SECONDS - started)) s; daemons stopped, $tmp removed"
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'echo "test-slurm: interrupted" >&2; exit 143' INT TERM
# The whole test is bounded: the watchdog ends it (through the trap) after $limit seconds.
# (its sleep holds no output open, so that a pipe or CTest does not wait for it)
(
  sleep "$limit" </dev/null >/dev/null 2>&1 &
  sleeper=$!
  trap 'kill $sleeper 2>/dev/null; exit 0' TERM
  wait $sleeper
  echo "test-slurm: FAIL: still running after $limit s" >&2
  kill -TERM $$
  # and what the test waits for in the foreground (timeout, python3, ...), so that its trap runs now
  for p in $(ps -o pid= --ppid $$); do [ "$p" = "$BASHPID" ] || kill -TERM "$p" 2>/dev/null; done
) &
watchdog=$!

# wait_for SECONDS WHAT COMMAND...: polls COMMAND every 0.2 s
wait_for() {
  local deadline=$((SECONDS + $1)) what=$2
  shift 2
  until "$@" >/dev/null 2>&1; do
    [ "$SECONDS" -lt "$deadline" ] || fail "timed out after ${deadline}s waiting for $what"
    sleep 0.2
  done
}

# ---- MUNGE: a key, its own socket, pid, log and seed
mkdir -p "$tmp/munge" "$tmp/log" "$tmp/state" "$tmp/spool" "$tmp/run" "$tmp/jobs"
chmod 755 "$tmp/munge"  # munged wants its socket's directory searchable by all (the key stays 0400)
if ! mungekey --create --keyfile="$tmp/munge/munge.key" 2>/dev/null; then
  dd if=/dev/urandom of="$tmp/munge/munge.key" bs=1024 count=1 status=none
fi
chmod 400 "$tmp/munge/munge.key"
socket=$tmp/munge/munge.socket
env "$token" munged --foreground --force --key-file="$tmp/munge/munge.key" --socket="$socket" \
  --pid-file="$tmp/munge/munged.pid" --log-file="$tmp/log/munged.log" --seed-file="$tmp/munge/seed" \
  >>"$tmp/log/munged.log" 2>&1 &
munged_pid=$!
munge_ok() { munge -n -S "$socket" | unmunge -S "$socket"; }
wait_for 20 "munged" munge_ok

# ---- slurm.conf: one node (this host, at 127.0.0.1), one partition, a free port pair
node=$(hostname -s 2>/dev/null || hostname)
cpus=$(nproc)
[ "$cpus" -ge 4 ] || cpus=4  # four tasks at once even on 2 cores (SlurmdParameters=config_overrides)
port=$(python3 - <<'PY'
import socket
for _ in range(200):
    a = socket.socket(); a.bind(('127.0.0.1', 0)); p = a.getsockname()[1]
    b = socket.socket()
    try:
        if p < 65535:
            b.bind(('127.0.0.1', p + 1)); print(p); break
    except OSError:
        pass
    finally:
        a.close(); b.close()
PY
)
[ -n "$port" ] || fail "no free port pair"
conf=$tmp/slurm.conf
cat >"$conf" <<EOF
ClusterName=gpuconvci
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$socket
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool/%n
SlurmctldPidFile=$tmp/run/slurmctld.pid
SlurmdPidFile=$tmp/run/slurmd.pid
SlurmctldLogFile=$tmp/log/slurmctld.log
SlurmdLogFile=$tmp/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SwitchType=switch/none
MpiDefault=none
MailProg=/bin/true
ReturnToService=2
SlurmdParameters=config_overrides
KillWait=10
MinJobAge=600
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=ci Nodes=$node Default=YES MaxTime=10 State=UP
EOF
export SLURM_CONF=$conf
mkdir -p "$tmp/spool/$node"
env "$token" slurmctld -D -c -f "$conf" >>"$tmp/log/slurmctld.out" 2>&1 &
ctld_pid=$!
wait_for 30 "slurmctld" scontrol ping
env "$token" slurmd -D -f "$conf" -N "$node" >>"$tmp/log/slurmd.out" 2>&1 &
slurmd_pid=$!
node_idle() { [ "$(sinfo -h -N -n "$node" -o %t)" = idle ]; }
wait_for 40 "node $node idle" node_idle
say "cluster up in $((SECONDS - started)) s: $(sinfo -h -o '%P %D %t %C' | head -1) (port $port, slurm $(sinfo --version | awk '{print $2}'))"

# ---- the input set: 40 PNGs of 1024 x 1024 (a third of them in sub/), each its own pixels
in=$tmp/in
python3 - "$in" <<'PY'
import os, struct, sys, zlib
out = sys.argv[1]
def chunk(t, d):
    return struct.pack('>I', len(d)) + t + d + struct.pack('>I', zlib.crc32(t + d) & 0xffffffff)
w = h = 1024
period = bytes((k * 7 + (k >> 8) * 13) & 255 for k in range(4096 + w * 3))
for i in range(40):
    rows = b''.join(b'\0' + period[(y * 29 + i * 101) % 4096:][:w * 3] for y in range(h))
    name = f'{out}/sub/img{i:02d}.png' if i % 3 == 0 else f'{out}/img{i:02d}.png'
    os.makedirs(os.path.dirname(name), exist_ok=True)
    with open(name, 'wb') as f:
        f.write(b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', w, h, 8, 2, 0, 0, 0))
                + chunk(b'IDAT', zlib.compress(rows, 1)) + chunk(b'IEND', b''))
PY
kernel=gaussian:3
opts=(--device cpu -j 1)  # the same options for the reference and the jobs; one thread each
count=$(find "$in" -type f | wc -l)
[ "$count" = 40 ] || fail "expected 40 inputs, made $count"
list() { (cd "$1" && find . -path ./.summaries -prune -o -type f -print | sed 's|^\./||' | sort); }
list "$in" >"$tmp/inputs.txt"
"$bin" batch "$in" "$kernel" "$tmp/ref" --recursive -q "${opts[@]}" || fail "the reference (non-sharded) run failed"
[ "$(list "$tmp/ref")" = "$(cat "$tmp/inputs.txt")" ] || fail "the reference run did not write every output"

export GPUCONV=$bin
# submit OUT [sbatch options]: the array script over $in, logs in $tmp/jobs; prints the job id.
# Bounded: with --wait, sbatch is stopped after 150 s (the trap cancels what is left).
submit() {
  local out=$1
  shift
  timeout 150 env "$token" sbatch --parsable --chdir="$tmp/jobs" --output="$tmp/jobs/%x-%A_%a.log" --time=5 "$@" \
    "$array_script" "$in" "$kernel" "$out" "${opts[@]}"
}
# summaries DIR: checks and prints the merged counts of DIR/.summaries/*.json (python3)
summaries() {
  python3 - "$1/.summaries" <<'PY'
import glob, json, sys
files = sorted(glob.glob(sys.argv[1] + '/*.json'))
s = [json.load(open(f)) for f in files]
total = {k: sum(x[k] for x in s) for k in ('total', 'processed', 'skipped', 'failed', 'not_processed')}
print(len(s), ','.join(x['shard'] for x in s), ' '.join(f'{k}={v}' for k, v in total.items()),
      'interrupted=' + ','.join(x['shard'] for x in s if x['interrupted']))
PY
}

# ---- 2. the array, four shards, to completion
say "sbatch --array=0-3 --wait $(basename "$array_script") ($count inputs)"
t0=$SECONDS
job=$(submit "$tmp/out1" --array=0-3 --wait) \
  || fail "sbatch --array=0-3 --wait failed or timed out (job ${job:-?})"
job=${job%%;*}
say "job $job done in $((SECONDS - t0)) s"
[ "$(list "$tmp/out1")" = "$(cat "$tmp/inputs.txt")" ] || {
  diff <(cat "$tmp/inputs.txt") <(list "$tmp/out1") >&2 || true
  fail "the union of the shards' outputs is not the input set"
}
[ -z "$(find "$tmp/out1" -name '*.gpuconv-tmp-*')" ] || fail "temp files left in the output"
diff -r -q -x .summaries "$tmp/ref" "$tmp/out1" >&2 || fail "sharded outputs differ from the non-sharded run"
summaries "$tmp/out1" >"$tmp/merged.txt" || fail "the summaries cannot be read"
read -r n shards merged <"$tmp/merged.txt"
say "summaries: $n ($shards): $merged"
[ "$n" = 4 ] && [ "$shards" = "0/4,1/4,2/4,3/4" ] || fail "expected the summaries of shards 0/4..3/4"
# Four processes wrote $count files in all and every input has its output: no file was
# written twice (and with total = count, the shards' lists are disjoint and cover the set).
[ "$merged" = "total=$count processed=$count skipped=0 failed=0 not_processed=0 interrupted=" ] \
  || fail "the summaries do not add up to $count processed"
for i in 0 1 2 3; do
  grep -q "\"processed\": [1-9]" "$tmp/out1/.summaries/task-$i.json" || fail "task $i processed nothing"
done

rm -rf "$tmp/out1"

# ---- 3. again into an empty directory; cancel one task mid-run, rerun it
victim=2
"$bin" batch "$in" "$kernel" "$tmp/member" --recursive -q --io-only --shard "$victim/4" --device cpu \
  || fail "listing shard $victim/4 failed"
list "$tmp/member" >"$tmp/member.txt"
share=$(wc -l <"$tmp/member.txt")
[ "$share" -ge 4 ] || fail "shard $victim/4 has only $share files; the test needs a few"
say "shard $victim/4 has $share files; sbatch --array=0-3 again, scancel ${victim} once it has written one"
out=$tmp/out2
killed=""
for attempt in 1 2 3; do
  rm -rf "$out"
  : >"$tmp/submit.out"
  ( submit "$out" --array=0-3 --wait >"$tmp/submit.out" 2>"$tmp/submit.err" ) &
  submit_pid=$!
  wait_for 20 "the job id" grep -q . "$tmp/submit.out"
  job=$(head -1 "$tmp/submit.out")
  job=${job%%;*}
  # its first output of shard $victim, then scancel at once
  deadline=$((SECONDS + 60))
  first=""
  while [ -z "$first" ]; do
    [ "$SECONDS" -lt "$deadline" ] || fail "task ${job}_$victim wrote nothing within 60 s"
    while read -r f; do
      if [ -f "$out/$f" ]; then first=$f; break; fi
    done <"$tmp/member.txt"
    [ -n "$first" ] || sleep 0.05
  done
  scancel "${job}_$victim" || fail "scancel ${job}_$victim"
  for ((i = 0; i < 120; i++)); do kill -0 "$submit_pid" 2>/dev/null || break; sleep 0.5; done  # <= 60 s
  kill -0 "$submit_pid" 2>/dev/null && fail "sbatch --wait still waiting 60 s after scancel"
  submit_rc=0
  wait "$submit_pid" || submit_rc=$?
  submit_pid=""
  present=0
  while read -r f; do [ ! -f "$out/$f" ] || present=$((present + 1)); done <"$tmp/member.txt"
  state=$(scontrol -o show job "${job}_$victim" | tr ' ' '\n' | sed -n 's/^JobState=//p')
  say "attempt $attempt: job $job, task $victim $state after '$first'; $present of its $share outputs present (sbatch --wait exit $submit_rc)"
  if [ "$present" -lt "$share" ]; then killed=$job; break; fi
  say "task $victim finished before the signal reached it; again"
done
[ -n "$killed" ] || fail "task $victim could not be cancelled mid-run in 3 attempts"
[ "$state" = CANCELLED ] || fail "task ${killed}_$victim is $state, expected CANCELLED"
[ "$submit_rc" != 0 ] || fail "sbatch --wait returned 0 although a task was cancelled"
# the other three shards are complete, the missing files are all of shard $victim
comm -23 "$tmp/inputs.txt" <(list "$out") >"$tmp/missing.txt"
[ -z "$(comm -23 "$tmp/missing.txt" "$tmp/member.txt")" ] || fail "files of other shards are missing"
[ -s "$tmp/missing.txt" ] || fail "nothing missing after the cancel"
# the cancelled task's summary, written on SIGTERM: interrupted, what it did
cancelled=$tmp/cancelled.json
cp "$out/.summaries/task-$victim.json" "$cancelled" 2>/dev/null || fail "the cancelled task wrote no summary"
python3 - "$cancelled" "$victim" "$share" "$(grep -c . "$tmp/missing.txt")" <<'PY' || fail "the cancelled task's summary is not as expected"
import json, sys
s = json.load(open(sys.argv[1]))
victim, share, missing = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
print('test-slurm: the cancelled task\'s summary', {k: s[k] for k in ('shard', 'total', 'processed', 'not_processed', 'interrupted')})
sys.exit(not (s['shard'] == f'{victim}/4' and s['total'] == share and s['interrupted'] is True
              and s['processed'] == share - missing and s['not_processed'] == missing and s['failed'] == 0))
PY
# what exists now, with inode and mtime: none of it may be written again
(cd "$out" && find . -path ./.summaries -prune -o -type f -printf '%P %i %T@\n' | sort) >"$tmp/before.txt"

say "GPUCONV_SHARDS=4 sbatch --array=$victim --wait (the cancelled task again)"
t0=$SECONDS
job=$(submit "$out" --array="$victim" --wait --export=ALL,GPUCONV_SHARDS=4) \
  || fail "the rerun of task $victim failed or timed out"
job=${job%%;*}
say "job $job done in $((SECONDS - t0)) s"
[ "$(list "$out")" = "$(cat "$tmp/inputs.txt")" ] || fail "the set is not complete after the rerun"
diff -r -q -x .summaries "$tmp/ref" "$out" >&2 || fail "outputs after the rerun differ from the non-sharded run"
(cd "$out" && find . -path ./.summaries -prune -o -type f -printf '%P %i %T@\n' | sort) >"$tmp/after.txt"
[ -z "$(comm -23 "$tmp/before.txt" "$tmp/after.txt")" ] || fail "outputs present before the rerun were rewritten"
rerun=$out/.summaries/task-$victim.json
expect_skipped=$((share - $(wc -l <"$tmp/missing.txt")))
python3 - "$rerun" "$victim" "$share" "$expect_skipped" <<'PY' || fail "the rerun's summary is not as expected"
import json, sys
s = json.load(open(sys.argv[1]))
victim, share, skipped = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
want = {'shard': f'{victim}/4', 'total': share, 'skipped': skipped, 'processed': share - skipped,
        'failed': 0, 'not_processed': 0, 'interrupted': False}
got = {k: s[k] for k in want}
print('test-slurm: rerun summary', got)
sys.exit(got != want)
PY
summaries "$out" >"$tmp/merged.txt" || fail "the summaries cannot be read"
read -r n shards merged <"$tmp/merged.txt"
say "summaries: $n ($shards): $merged"
[ "$merged" = "total=$count processed=$((count - expect_skipped)) skipped=$expect_skipped failed=0 not_processed=0 interrupted=" ] \
  || fail "the summaries do not add up"
say "all checks passed"
