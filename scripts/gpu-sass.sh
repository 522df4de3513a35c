#!/usr/bin/env bash
# Opcode mix of the fused kernel's SASS for one tile size (float in/out), from a build-gpu tree
# (scripts/gpu-check.sh or gpu-profile.sh builds it): where the instructions go. The counting is
# scripts/sass-count.sh's (any kernel, any machine).
#   scripts/gpu-sass.sh [TILE]   (default 32)
set -uo pipefail
build=${GPUCONV_BUILD_DIR:-build-gpu}
tile=${1:-32}
obj=$(find "$build" -name 'fused.cu.o' | head -1)
[ -n "$obj" ] || { echo "no fused.cu.o under $build"; exit 1; }
exec "$(dirname "$0")/sass-count.sh" "$obj" "fused_policyILi${tile}E.*EEEffEE"
