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
packages=(build-essential cmake ninja-build pkg-config ca-certificates libopencv-dev libcli11-dev git clang libclang-rt-dev time python3
          python3-pip unzip)
# --- Python package (scripts/python-test.sh): venv, pip, and what the tests compare with
packages+=(python3-venv python3-dev python3-numpy python3-scipy python3-opencv python3-pytest)
# --- end Python package
# --- Slurm test (scripts/slurm/test-slurm.sh, CTest slurm_array): the daemons and clients, run
# by the test itself from a temp directory. On a systemd host the packages enable munge.service
# (its own key, unused by the test); slurmctld/slurmd do not start without /etc/slurm/slurm.conf.
# GPUCONV_SLURM=0 leaves them out (the test is then reported as skipped).
if [ "${GPUCONV_SLURM:-1}" != 0 ]; then packages+=(slurmctld slurmd slurm-client munge); fi
# --- end Slurm test
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

# nvJPEG (GPU JPEG decode/encode; gpuconv loads the library at run time and needs only its
# header to build): from the CUDA Toolkit when it has it, else from the PyPI wheel
# nvidia-nvjpeg (CUDA 13), unpacked into /opt/gpuconv/nvjpeg/{include,lib} where CMake looks.
cuda_include=$(dirname "$(command -v nvcc 2>/dev/null || echo /usr/local/cuda/bin/nvcc)")/../include
nvjpeg_root=/opt/gpuconv/nvjpeg
if [ ! -f "$cuda_include/nvjpeg.h" ] && [ ! -f "$nvjpeg_root/include/nvjpeg.h" ]; then
  wheel_dir=$(mktemp -d)
  if python3 -m pip download -q --no-deps --only-binary=:all: --platform manylinux_2_17_x86_64 \
       --python-version 3.11 -d "$wheel_dir" 'nvidia-nvjpeg>=13,<14'; then
    $SUDO mkdir -p "$nvjpeg_root"
    unzip -q -o "$wheel_dir"/nvidia_nvjpeg-*.whl 'nvidia/cu13/*' -d "$wheel_dir/x"
    $SUDO cp -r "$wheel_dir/x/nvidia/cu13/include" "$wheel_dir/x/nvidia/cu13/lib" "$nvjpeg_root/"
    echo "setup.sh: nvJPEG header and library from the nvidia-nvjpeg wheel in $nvjpeg_root"
  else
    echo "setup.sh: the nvidia-nvjpeg wheel could not be fetched; building without GPU JPEG" >&2
  fi
  rm -rf "$wheel_dir"
fi

catch_version=$(dpkg-query -W -f='${Version}' catch2 2>/dev/null || echo none)
case "$catch_version" in
  3.*) ;;
  *) echo "setup.sh: Catch2 v3 is required, found '$catch_version'" >&2; exit 1 ;;
esac
echo "setup.sh: done (Catch2 $catch_version)"
