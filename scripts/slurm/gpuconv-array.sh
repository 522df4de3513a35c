#!/usr/bin/env bash
# A Slurm job array over one directory: task I of N convolves the files of shard I
# (gpuconv batch --shard auto reads SLURM_ARRAY_TASK_ID and SLURM_ARRAY_TASK_COUNT), writes
# its outputs atomically into OUT_DIR and a JSON summary per task; a rerun of a failed task
# finishes its share without redoing the rest (--skip-existing).
#   sbatch --array=0-3 scripts/slurm/gpuconv-array.sh IN_DIR KERNEL OUT_DIR [gpuconv options]
# Rerunning some tasks of an array of N: a new array of those tasks alone has another task
# count, so --shard auto would split the set differently; name N instead:
#   sbatch --array=2,5 --export=ALL,GPUCONV_SHARDS=4 scripts/slurm/gpuconv-array.sh ...
# (task I then takes shard I/N; sbatch --array=0-3 again, without it, also works: the tasks
# whose share is done skip every file).
# Environment: GPUCONV (the binary, default: gpuconv on PATH), GPUCONV_SHARDS (above).
# scripts/slurm/test-slurm.sh runs this script on a one-node Slurm cluster (CI).
#SBATCH --job-name=gpuconv
#SBATCH --output=gpuconv-%A_%a.log
set -euo pipefail
in_dir=${1:?usage: sbatch --array=0-N gpuconv-array.sh IN_DIR KERNEL OUT_DIR [options]}
kernel=${2:?kernel}
out_dir=${3:?OUT_DIR}
shift 3
task=${SLURM_ARRAY_TASK_ID:?not in a job array}
shard=(--shard auto)
if [ -n "${GPUCONV_SHARDS:-}" ]; then shard=(--shard "$task/$GPUCONV_SHARDS"); fi
mkdir -p "$out_dir/.summaries"
exec "${GPUCONV:-gpuconv}" batch "$in_dir" "$kernel" "$out_dir" --recursive --skip-existing "${shard[@]}" -q \
  --summary "$out_dir/.summaries/task-$task.json" "$@"
