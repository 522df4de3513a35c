#!/usr/bin/env bash
# Opcode histogram of the fused kernel's SASS for one tile size (float in/out), from a
# build-gpu tree (scripts/gpu-check.sh or gpu-profile.sh builds it): where the instructions go.
#   scripts/gpu-sass.sh [TILE]   (default 32)
set -uo pipefail
build=${GPUCONV_BUILD_DIR:-build-gpu}
tile=${1:-32}
obj=$(find "$build" -name 'fused.cu.o' | head -1)
[ -n "$obj" ] || { echo "no fused.cu.o under $build"; exit 1; }
cuobjdump -sass "$obj" > /tmp/fused.sass 2>&1
awk -v pat="fused_policyILi${tile}E.*EEEffEE" '/Function :/ {on = ($0 ~ pat)} on' /tmp/fused.sass > /tmp/fused-$tile.sass
echo "instructions: $(grep -cE '^\s+/\*[0-9a-f]{4}\*/' /tmp/fused-$tile.sass)"
grep -oE '^\s+/\*[0-9a-f]{4}\*/\s+(@!?U?P[0-9T] )?[A-Z][A-Z0-9_]*' /tmp/fused-$tile.sass | awk '{print $NF}' | sort | uniq -c | sort -rn | head -25
