#!/usr/bin/env bash
# Load test: a batch of N small generated PNGs (default 10000, 32 x 32 RGB) through
#   gpuconv batch IN box:3 OUT --device cpu
# under /usr/bin/time -v, then checks that every output exists, that no temp file is left
# anywhere, and prints the peak resident set size. SHAPES=mixed gives the images 64
# different sizes (24..31 x 24..31), which exercises the compute thread's plan cache.
# Fails unless every output exists, no temp file is left and the peak RSS is at most
# MAX_RSS_MIB (default 256). scripts/test.sh runs it (CI).
#   scripts/load-test.sh [N] [path/to/gpuconv]      env: JOBS (2), SHAPES (same|mixed), KEEP=1
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-10000}
gpuconv=${2:-build/apps/gpuconv}
jobs=${JOBS:-2}
shapes=${SHAPES:-same}
[ -x "$gpuconv" ] || { echo "load-test.sh: $gpuconv not built (cmake --build build)" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "load-test.sh: needs /usr/bin/time (apt-get install time)" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/gpuconv-load.XXXXXX")
[ "${KEEP:-0}" = 1 ] || trap 'rm -rf "$work"' EXIT
mkdir -p "$work/in"

# N PNGs written directly (zlib + CRC), each with its own pixels
python3 - "$work/in" "$n" "$shapes" <<'PY'
import struct, sys, zlib
out, n, shapes = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def chunk(t, d):
    return struct.pack('>I', len(d)) + t + d + struct.pack('>I', zlib.crc32(t + d) & 0xffffffff)
for i in range(n):
    w, h = (32, 32) if shapes == 'same' else (24 + i % 8, 24 + (i // 8) % 8)
    rows = b''.join(b'\0' + bytes(((x * 7 + y * 3 + i) & 255) for x in range(w * 3)) for y in range(h))
    png = (b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', w, h, 8, 2, 0, 0, 0))
           + chunk(b'IDAT', zlib.compress(rows)) + chunk(b'IEND', b''))
    with open(f'{out}/img{i:05d}.png', 'wb') as f:
        f.write(png)
PY
echo "load-test.sh: $n images ($shapes shapes) in $work/in; gpuconv batch --jobs $jobs --device cpu"
set +e
/usr/bin/time -v "$gpuconv" batch "$work/in" box:3 "$work/out" --device cpu --jobs "$jobs" 2>"$work/log"
rc=$?
set -e
grep -E '^gpuconv' "$work/log" | tail -3
outputs=$(find "$work/out" -type f -name '*.png' | wc -l)
temps=$(find "$work" -name '*.gpuconv-tmp-*' | wc -l)
rss_kb=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$work/log")
wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$work/log")
echo "load-test.sh: exit $rc, $outputs/$n outputs, $temps temp files left, peak RSS $((rss_kb / 1024)) MiB ($rss_kb kB), wall $wall"
# bounded memory: the images in flight are bounded by the queues; what grows is ~2 KB of
# path lists per file (README, Hardening), so 10,000 files stay far below this bound
max_mib=${MAX_RSS_MIB:-256}
[ $((rss_kb / 1024)) -le "$max_mib" ] || echo "load-test.sh: peak RSS above the ${max_mib} MiB bound"
[ "$rc" = 0 ] && [ "$outputs" = "$n" ] && [ "$temps" = 0 ] && [ $((rss_kb / 1024)) -le "$max_mib" ]
