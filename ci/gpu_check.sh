#!/usr/bin/env bash
# The whole GPU check in one call (on a machine with an NVIDIA GPU): GPU and CPU
# tests, op micro-benchmarks, the probes of experiments/ (where tr_experiments
# is built), tr-bench over the three modes, and the accuracy run; logs and JSON
# go to $OUT (default ./gpu-check-out). Uses .device/ from
# ci/pack_device.sh when present, else build/bin. Each part is a file of
# ci/gpu_check/, sourced in the order below; ci/gpu_check/lib.sh holds the
# helpers they share. tests/gpu_check_dry_run.sh runs them all without a GPU.
#   TR_CHECK_PARTS="tests ops fusion-probe bench zoo gpt fusion schedule conv-plans train tta text-tta interleave
#   sanitize mpi scaling scaling-zoo" selects parts (default: all; scaling and scaling-zoo need 2 or more GPUs
#   and say so otherwise; TR_ZOO_SCALING picks scaling-zoo's models and batches per GPU, default
#   "resnet50:32,256 resnet18:128,512").
set -uo pipefail
cd "$(dirname "$0")/.."
ORDER="tests ops fusion-probe bench fusion schedule conv-plans zoo gpt train tta text-tta interleave sanitize mpi scaling scaling-zoo"
PARTS=${TR_CHECK_PARTS:-$ORDER}
for p in $PARTS; do
  [[ " $ORDER " == *" $p "* ]] || { echo "gpu_check.sh: unknown part '$p' in TR_CHECK_PARTS (known: $ORDER)" >&2; exit 2; }
done
OUT=${OUT:-$PWD/gpu-check-out}
SUMMARY_DIR=$OUT
OUT=$SUMMARY_DIR/detail  # every log and JSON; packed into detail.tgz at the end
mkdir -p "$OUT"
BIN=build/bin
[ -d .device/bin ] && BIN=.device/bin
DATA=${TR_DATA_DIR:-/usr/share/datasets/fashion-mnist}
[ -d .device/data ] && [ -n "$(ls .device/data)" ] && DATA=$PWD/.device/data
export TR_DATA_DIR=$DATA  # the real-data tests read it
SP=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH="$PWD/.device/lib:$SP/nvidia/cudnn/lib:$SP/nvidia/nccl/lib:$SP/nvidia/cublas/lib:$SP/nvidia/cu13/lib:$SP/nvidia/cuda_cupti/lib:/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64:${LD_LIBRARY_PATH:-}"
export NCCL_NVLS_ENABLE=0
# A GPU test that finds no GPU here fails instead of skipping (Note [GPU test
# skips], tests/gpu_test_util.h); only those needing more GPUs still skip.
export TR_REQUIRE_GPU=1
status=0
source ci/gpu_check/lib.sh
trap pack EXIT

nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv > "$OUT/nvidia-smi.csv" 2>&1
note "GPU: $(tail -1 "$OUT/nvidia-smi.csv")"

for p in $ORDER; do
  [[ " $PARTS " == *" $p "* ]] && source "ci/gpu_check/$p.sh"
done
exit $status
