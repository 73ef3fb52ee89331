#!/usr/bin/env bash
# mismatch.sh BIN_DIR: two tr-train processes that disagree on the gradient
# buckets (--bucket-mb), so their collective sequences differ. Both must
# refuse before the first step, each printing the rank and the position, and
# the job must exit non-zero.
set -uo pipefail
bin=$1
source "$(dirname "$0")/mpi_env.sh"
args=(--model cnn --width 0.25 --device cpu --synthetic --train-subset 256 --val-subset 64 --batch 64 --epochs 1
      --watchdog-ms 10000)
out=$(timeout 60 "${MPIRUN[@]}" -np 1 "$bin/tr-train" "${args[@]}" --bucket-mb 25 : \
      -np 1 "$bin/tr-train" "${args[@]}" --bucket-mb 0.01 2>&1)
rc=$?
echo "$out" | grep -E 'mismatch' | head -4
[ $rc -ne 0 ] && [ $rc -ne 124 ] || { echo "mismatch.sh: exit $rc"; echo "$out"; exit 1; }
for p in 0 1; do
  echo "$out" | grep -q "\[process $p of 2\]: internal error: collective sequence mismatch: rank 1 differs from rank 0 at collective #" ||
    { echo "mismatch.sh: process $p did not name the mismatch"; echo "$out"; exit 1; }
done
echo "mismatch.sh: ok (exit $rc)"
