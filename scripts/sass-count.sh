#!/usr/bin/env bash
# Static SASS counts of the kernels in a CUDA object or cubin, on any machine (no GPU needed):
# for each function whose mangled name matches NAME_REGEX, its instruction count and the count of
# each opcode matching OPCODE_REGEX (all opcodes when omitted), most frequent first. Where the
# toolkit has no cuobjdump (this project's CI machine has nvcc but not cuobjdump/nvdisasm), the
# two come from NVIDIA's PyPI wheels nvidia-cuda-cuobjdump and nvidia-cuda-nvdisasm (13.5.37),
# fetched once into $GPUCONV_SASS_TOOLS (default ~/.cache/gpuconv-sass-tools).
#   scripts/sass-count.sh OBJECT NAME_REGEX [OPCODE_REGEX]
# e.g. scripts/sass-count.sh build/conv/CMakeFiles/gpuconv_conv.dir/direct_run_u8.cu.o 'walkE0ELi3ELi8Ehh' 'F2I|I2F|MUFU'
# Static counts include every path (edge tiles, boundary rules); a loop's instructions count once.
# They say what a change did to the code, not how often each instruction runs (that is ncu's).
set -euo pipefail
[ $# -ge 2 ] || { sed -n 2,11p "$0"; exit 2; }
obj=$1 names=$2 ops=${3:-.}
[ -f "$obj" ] || { echo "sass-count: no such file: $obj" >&2; exit 2; }
if ! command -v cuobjdump > /dev/null || ! command -v nvdisasm > /dev/null; then
  tools=${GPUCONV_SASS_TOOLS:-$HOME/.cache/gpuconv-sass-tools}
  if [ ! -x "$tools/bin/cuobjdump" ] || [ ! -x "$tools/bin/nvdisasm" ]; then
    mkdir -p "$tools/wheels" "$tools/bin"
    python3 -m pip download --quiet --no-deps -d "$tools/wheels" nvidia-cuda-cuobjdump==13.5.37 nvidia-cuda-nvdisasm==13.5.37 >&2
    for w in "$tools"/wheels/*.whl; do
      python3 -c 'import sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
for n in z.namelist():
    if n.endswith(("/bin/cuobjdump", "/bin/nvdisasm")):
        open(sys.argv[2] + "/" + n.rsplit("/", 1)[1], "wb").write(z.read(n))' "$w" "$tools/bin"
    done
    chmod +x "$tools/bin/cuobjdump" "$tools/bin/nvdisasm"
  fi
  export PATH="$tools/bin:$PATH"
fi
cuobjdump -sass "$obj" | python3 -c '
import collections, re, sys
names, ops = re.compile(sys.argv[1]), re.compile(sys.argv[2])
found = 0
for f in re.split(r"\n\s*Function : ", sys.stdin.read())[1:]:
    name = f.split("\n", 1)[0].strip()
    if not names.search(name):
        continue
    found += 1
    code = re.findall(r"/\*[0-9a-f]{4,6}\*/\s+(.*?);", f)
    count = collections.Counter(re.sub(r"^@!?U?P[T0-9]\s+", "", c).split()[0] for c in code)
    picked = " ".join(f"{k}:{v}" for k, v in count.most_common() if ops.search(k))
    print(f"{len(code):7d}  {name}\n         {picked}")
if not found:
    sys.exit("sass-count: no function matches " + sys.argv[1])
' "$names" "$ops"
