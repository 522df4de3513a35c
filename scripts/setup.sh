#!/usr/bin/env bash
# Installs what gpuconv needs to build and test on Debian 12 or Ubuntu 24.04:
# a C++ toolchain, CMake, Ninja, OpenCV (image I/O), CLI11, Catch2 v3, clang (fuzzing).
# Debian 12 ships Catch2 v2 in main; v3 comes from bookworm-backports, which this
# script enables. The CUDA toolkit is used from /usr/local/cuda when present;
# otherwise the distribution's nvidia-cuda-toolkit is installed (non-free/multiverse).
set -euo pipefail

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive

. /etc/os-release
# clang and libclang-rt-dev (libFuzzer, the sanitizer runtimes): scripts/fuzz.sh
packages=(build-essential cmake ninja-build pkg-config ca-certificates libopencv-dev libcli11-dev git clang libclang-rt-dev time python3)
catch_from=()

case "${ID}:${VERSION_CODENAME:-}" in
  debian:bookworm)
    list=/etc/apt/sources.list.d/gpuconv-backports.list
    if [ ! -f "$list" ]; then
      echo "deb http://deb.debian.org/debian bookworm-backports main" | $SUDO tee "$list" >/dev/null
    fi
    catch_from=(-t bookworm-backports)
    ;;
  ubuntu:noble|debian:*|ubuntu:*) ;;
  *) echo "setup.sh: untested distribution ${ID} ${VERSION_CODENAME:-}; trying anyway" >&2 ;;
esac

$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${packages[@]}"
$SUDO apt-get install -y -qq --no-install-recommends "${catch_from[@]}" catch2

if ! command -v nvcc >/dev/null 2>&1 && [ ! -x /usr/local/cuda/bin/nvcc ]; then
  echo "setup.sh: no CUDA toolkit found; installing the distribution's nvidia-cuda-toolkit" >&2
  $SUDO apt-get install -y -qq --no-install-recommends nvidia-cuda-toolkit
fi

catch_version=$(dpkg-query -W -f='${Version}' catch2 2>/dev/null || echo none)
case "$catch_version" in
  3.*) ;;
  *) echo "setup.sh: Catch2 v3 is required, found '$catch_version'" >&2; exit 1 ;;
esac
echo "setup.sh: done (Catch2 $catch_version)"
