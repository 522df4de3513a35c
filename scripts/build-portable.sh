#!/usr/bin/env bash
# Builds one self-contained gpuconv binary, build-portable/apps/gpuconv, that needs nothing on
# the target machine but glibc and an NVIDIA driver:
#   - OpenCV core/imgproc/imgcodecs, static, built from the distribution's OpenCV source
#     package (apt-get source), with PNG, JPEG and TIFF;
#   - libtiff, static, built from the distribution's tiff source package with only the
#     zlib/JPEG codecs, so that its static dependencies stay libjpeg + zlib (the system
#     libtiff.a would pull in zstd, lzma, jbig, deflate, webp and Lerc, which OpenCV's
#     exported link interface does not list);
#   - libpng, libjpeg and zlib from the system's static archives (libpng-dev, libjpeg-dev,
#     zlib1g-dev);
#   - the CUDA runtime, libstdc++ and libgcc static (gpuconv's GPUCONV_STATIC option).
# Debian's OpenCV source is +dfsg: its 3rdparty/ folder (bundled zlib, libpng, libjpeg,
# libtiff...) is removed, hence the system archives above.
#
# libtiff and OpenCV are installed once per machine into a cache outside the repository,
#   ${GPUCONV_CACHE:-$HOME/.cache/gpuconv}/opencv-<version>-static-<options hash>,
# and skipped when the cache is complete (its stamp file is written last).
#
# Environment: GPUCONV_CACHE (cache root), JOBS (parallel jobs, default 2; the OpenCV build
# runs under nice -n 19), CMAKE_CUDA_ARCHITECTURES (passed on when set).
# Tested on Debian 12; written for Ubuntu 24.04 as well (deb-src for the release is enabled
# from the apt source that serves it).
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
cache=${GPUCONV_CACHE:-$HOME/.cache/gpuconv}
build="$repo/build-portable"
jobs=${JOBS:-2}
log() { echo "build-portable: $*" >&2; }

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
. /etc/os-release
codename=${VERSION_CODENAME:?no VERSION_CODENAME in /etc/os-release}

# --- build dependencies (only installed when missing) ---------------------------------------
packages=(build-essential cmake ninja-build pkg-config dpkg-dev ca-certificates xz-utils bzip2
          libpng-dev libjpeg-dev zlib1g-dev libcli11-dev)
missing=()
for p in "${packages[@]}"; do
  [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" = 'install ok installed' ] || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  log "installing ${missing[*]}"
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# --- deb-src for the release, idempotently ---------------------------------------------------
# A copy of the apt source that serves "deb" for the release itself, re-typed as deb-src,
# so that its options (Signed-By in particular) match and apt sees no conflict.
enable_deb_src() {
  # (grep without -q: an early exit would fail the pipeline through apt-cache's SIGPIPE)
  if apt-cache showsrc opencv 2>/dev/null | grep '^Package: opencv' >/dev/null; then return 0; fi
  local dir=/etc/apt/sources.list.d stanza line
  stanza=$(awk -v cn="$codename" 'BEGIN { RS = ""; ORS = "\n" }
      /(^|\n)Types:[^\n]*deb([ \n]|$)/ && match($0, /(^|\n)Suites:[^\n]*/) {
        s = substr($0, RSTART, RLENGTH); if (s ~ ("[ :]" cn "([ ]|$)")) { print; exit } }' \
      "$dir"/*.sources 2>/dev/null || true)
  if [ -n "$stanza" ]; then
    printf '%s\n' "$stanza" | sed -E -e 's/^Types:.*/Types: deb-src/' -e "s/^Suites:.*/Suites: ${codename}/" \
      | $SUDO tee "$dir/gpuconv-src.sources" >/dev/null
  else
    line=$(grep -hE "^deb[[:space:]]+(\[[^]]*\][[:space:]]+)?[^[:space:]]+[[:space:]]+${codename}[[:space:]]" \
      /etc/apt/sources.list "$dir"/*.list 2>/dev/null | head -n1 || true)
    [ -n "$line" ] || { log "no apt source for ${codename} found to derive a deb-src line from"; return 1; }
    printf '%s\n' "deb-src${line#deb}" | $SUDO tee "$dir/gpuconv-src.list" >/dev/null
  fi
  log "enabled deb-src for ${codename}"
  $SUDO apt-get update -qq
}

# Newest version of a source package that apt knows.
source_version() {
  apt-cache showsrc "$1" | awk '/^Version:/ { print $2 }' | sort -V | tail -n1
}

# Unpacks source package $1 at version $2 under $cache/src and prints its directory.
fetch_source() {
  local name=$1 version=$2 upstream dir
  upstream=${version#*:}; upstream=${upstream%-*}
  dir="$cache/src/${name}-${upstream}"
  if [ ! -f "$dir/.gpuconv-unpacked-$version" ]; then
    rm -rf "$dir"
    mkdir -p "$cache/src"
    log "fetching source package ${name} ${version}"
    # apt-get source: as root it downloads unsandboxed (a warning), and it unpacks with
    # dpkg-source, which applies the distribution's patches.
    (cd "$cache/src" && apt-get source -qq "${name}=${version}" >/dev/null)
    touch "$dir/.gpuconv-unpacked-$version"
  fi
  echo "$dir"
}

enable_deb_src
opencv_version=$(source_version opencv)
tiff_version=$(source_version tiff)
[ -n "$opencv_version" ] && [ -n "$tiff_version" ] || { log "apt knows no opencv/tiff source"; exit 1; }

# --- static archives of the system image libraries -------------------------------------------
# gcc -print-file-name searches the linker's directories (multiarch included); it echoes
# the bare name back when the archive is not found.
archive() {
  local path
  path=$(gcc -print-file-name="$1")
  [ "$path" != "$1" ] && [ -f "$path" ] || { log "static archive $1 not found (install its -dev package)"; exit 1; }
  readlink -f "$path"
}
zlib_a=$(archive libz.a)
png_a=$(archive libpng.a)
jpeg_a=$(archive libjpeg.a)
png_include=$(pkg-config --variable=includedir libpng)
png_include=${png_include:-/usr/include}

# --- the cache key: versions and options -----------------------------------------------------
tiff_options=(
  -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF -DCMAKE_POSITION_INDEPENDENT_CODE=ON
  -Dtiff-tools=OFF -Dtiff-tests=OFF -Dtiff-contrib=OFF -Dtiff-docs=OFF -Dcxx=OFF
  -Dzlib=ON -Djpeg=ON -Dold-jpeg=ON -Dpixarlog=ON
  -Djbig=OFF -Dlerc=OFF -Dlzma=OFF -Dzstd=OFF -Dwebp=OFF -Dlibdeflate=OFF -Djpeg12=OFF
  -Dtiff-opengl=OFF
  "-DZLIB_LIBRARY=$zlib_a" "-DJPEG_LIBRARY=$jpeg_a")
opencv_options=(
  -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF -DCMAKE_POSITION_INDEPENDENT_CODE=ON
  -DBUILD_LIST=core,imgproc,imgcodecs
  -DBUILD_TESTS=OFF -DBUILD_PERF_TESTS=OFF -DBUILD_EXAMPLES=OFF -DBUILD_opencv_apps=OFF
  -DBUILD_DOCS=OFF -DBUILD_JAVA=OFF -DBUILD_opencv_js=OFF -DBUILD_PACKAGE=OFF
  -DOPENCV_GENERATE_PKGCONFIG=OFF -DINSTALL_C_EXAMPLES=OFF -DINSTALL_PYTHON_EXAMPLES=OFF -DINSTALL_TESTS=OFF
  -DBUILD_ZLIB=OFF -DBUILD_PNG=OFF -DBUILD_JPEG=OFF -DBUILD_TIFF=OFF -DBUILD_WEBP=OFF
  -DBUILD_OPENJPEG=OFF -DBUILD_JASPER=OFF -DBUILD_OPENEXR=OFF -DBUILD_TBB=OFF -DBUILD_IPP_IW=OFF -DBUILD_ITT=OFF
  -DWITH_PNG=ON -DWITH_JPEG=ON -DWITH_TIFF=ON
  -DWITH_WEBP=OFF -DWITH_OPENJPEG=OFF -DWITH_JASPER=OFF -DWITH_OPENEXR=OFF -DWITH_GDAL=OFF -DWITH_GDCM=OFF
  -DWITH_QT=OFF -DWITH_GTK=OFF -DWITH_OPENGL=OFF -DWITH_VTK=OFF
  -DWITH_FFMPEG=OFF -DWITH_GSTREAMER=OFF -DWITH_V4L=OFF -DWITH_1394=OFF -DWITH_GPHOTO2=OFF
  -DWITH_VA=OFF -DWITH_VA_INTEL=OFF -DWITH_OPENCL=OFF -DWITH_VULKAN=OFF -DWITH_CUDA=OFF
  -DWITH_IPP=OFF -DWITH_TBB=OFF -DWITH_OPENMP=OFF -DWITH_ITT=OFF -DWITH_EIGEN=OFF -DWITH_LAPACK=OFF
  -DWITH_PROTOBUF=OFF -DWITH_QUIRC=OFF -DWITH_ONNX=OFF -DWITH_OPENVX=OFF -DWITH_HALIDE=OFF
  -DWITH_OPENVINO=OFF -DWITH_TENGINE=OFF -DWITH_TIMVX=OFF -DWITH_WEBNN=OFF -DWITH_ADE=OFF
  -DENABLE_CCACHE=OFF -DENABLE_LTO=OFF)
key=$(printf '%s\n' "opencv=$opencv_version" "tiff=$tiff_version" "gcc=$(gcc -dumpfullversion)" \
        "zlib=$zlib_a" "png=$png_a" "jpeg=$jpeg_a" "${tiff_options[@]}" "${opencv_options[@]}")
key_hash=$(printf '%s' "$key" | sha256sum | cut -c1-8)
opencv_upstream=${opencv_version#*:}; opencv_upstream=${opencv_upstream%-*}
prefix="$cache/opencv-${opencv_upstream}-static-${key_hash}"
stamp="$prefix/.gpuconv-complete"

if [ -f "$stamp" ]; then
  log "static OpenCV cached: $prefix"
else
  rm -rf "$prefix" "$cache/build"
  mkdir -p "$cache/build"
  tiff_src=$(fetch_source tiff "$tiff_version")
  opencv_src=$(fetch_source opencv "$opencv_version")
  for lib in zlib libpng libjpeg libtiff; do
    [ -d "$opencv_src/3rdparty/$lib" ] && log "note: $opencv_src/3rdparty/$lib is present (not used)"
  done
  start=$(date +%s)

  log "building libtiff ${tiff_version} (static, zlib/JPEG codecs only)"
  cmake -S "$tiff_src" -B "$cache/build/tiff" -G Ninja -Wno-dev "-DCMAKE_INSTALL_PREFIX=$prefix" \
    "${tiff_options[@]}" >"$cache/build/tiff-configure.log"
  nice -n 19 cmake --build "$cache/build/tiff" --target install -j "$jobs" >"$cache/build/tiff-build.log"

  log "building OpenCV ${opencv_version} (static core/imgproc/imgcodecs, nice -n 19, -j${jobs})"
  # Both <LIB>_LIBRARY_RELEASE and <LIB>_LIBRARY: CMake's Find modules rebuild the latter
  # from the former.
  cmake -S "$opencv_src" -B "$cache/build/opencv" -G Ninja -Wno-dev "-DCMAKE_INSTALL_PREFIX=$prefix" \
    "${opencv_options[@]}" \
    "-DZLIB_LIBRARY_RELEASE=$zlib_a" "-DZLIB_LIBRARY=$zlib_a" \
    "-DPNG_LIBRARY_RELEASE=$png_a" "-DPNG_LIBRARY=$png_a" "-DPNG_PNG_INCLUDE_DIR=$png_include" \
    "-DJPEG_LIBRARY_RELEASE=$jpeg_a" "-DJPEG_LIBRARY=$jpeg_a" \
    "-DTIFF_LIBRARY_RELEASE=$prefix/lib/libtiff.a" "-DTIFF_LIBRARY=$prefix/lib/libtiff.a" \
    "-DTIFF_INCLUDE_DIR=$prefix/include" >"$cache/build/opencv-configure.log"
  sed -n '/^--   Media I\/O:/,/^--$/p' "$cache/build/opencv-configure.log" >&2
  nice -n 19 cmake --build "$cache/build/opencv" --target install -j "$jobs" >"$cache/build/opencv-build.log"

  printf '%s\n' "$key" >"$prefix/.gpuconv-key"
  log "libtiff + OpenCV built in $(( $(date +%s) - start )) s"
  rm -rf "$cache/build"
  touch "$stamp"   # last: the cache is complete
fi

opencv_dir=$(dirname "$(find "$prefix" -name OpenCVConfig.cmake -print -quit)")
[ -n "$opencv_dir" ] || { log "no OpenCVConfig.cmake under $prefix"; exit 1; }

# --- gpuconv ---------------------------------------------------------------------------------
cuda_arch=()
[ -n "${CMAKE_CUDA_ARCHITECTURES:-}" ] && cuda_arch=("-DCMAKE_CUDA_ARCHITECTURES=$CMAKE_CUDA_ARCHITECTURES")
# PORTABLE_TESTS=1: also the app-layer tests (gpuconv_app_tests, OpenCV and Catch2 static),
# so that the [app] and [gpu] tests of the application run on a GPU machine without OpenCV
# (there: GPUCONV_CLI_PATH=build-portable/apps/gpuconv build-portable/tests/gpuconv_app_tests).
targets=(gpuconv)
tests=OFF
if [ "${PORTABLE_TESTS:-0}" = 1 ]; then tests=ON; targets+=(gpuconv_app_tests); fi
cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release "${cuda_arch[@]}" \
  "-DOpenCV_DIR=$opencv_dir" -DGPUCONV_WITH_OPENCV=ON -DGPUCONV_STATIC=ON \
  -DGPUCONV_BUILD_TESTS=$tests -DGPUCONV_BUILD_BENCH=OFF
cmake --build "$build" --target "${targets[@]}" -j "$jobs"

# --- the check: only glibc's libraries may remain dynamic ------------------------------------
binary="$build/apps/gpuconv"
ldd "$binary"
unexpected=$(ldd "$binary" | awk '{ print $1 }' \
  | grep -vE '^(linux-vdso\.so|/?.*ld-linux-x86-64\.so|lib(c|m|dl|pthread|rt)\.so)' || true)
if [ -n "$unexpected" ]; then
  log "unexpected dynamic dependencies: $(echo $unexpected)"
  exit 1
fi
log "$binary: $(du -h "$binary" | cut -f1) ($(stat -c %s "$binary") bytes), dynamic deps: glibc only"
