#!/usr/bin/env bash
# Batch throughput against the decode + encode ceiling: N generated 1024^2 RGB PNGs through
# `gpuconv batch` and through `gpuconv batch --io-only` with the same --jobs (issue 4, item 7).
# Everything runs inside the gpuconv binary (`gpuconv bench`), so this works with the portable
# binary on a machine without OpenCV:
#   scripts/bench-batch.sh [GPUCONV] [gpuconv bench options...]
#   scripts/bench-batch.sh build/apps/gpuconv --images 64 --jobs 8 --device cuda
set -euo pipefail
cd "$(dirname "$0")/.."
gpuconv=build/apps/gpuconv
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then gpuconv=$1; shift; fi
if [ ! -x "$gpuconv" ]; then
  echo "bench-batch: no gpuconv binary at '$gpuconv' (build first, or pass its path)" >&2
  exit 2
fi
exec "$gpuconv" bench --images 32 --size 1024 "$@"
