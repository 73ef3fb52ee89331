#!/usr/bin/env bash
# mismatch.sh BIN_DIR: tr-train and tr-bench processes started with different
# flags (an MPMD launch) under mpirun. Every process must refuse before the
# first step, naming the setting and which process holds which value (Note
# [processes agree]), and the job must exit 2 at once: no training apart, no
# wait for the watchdog.
set -uo pipefail
bin=$1
source "$(dirname "$0")/mpi_env.sh"
train=(--model cnn --width 0.25 --device cpu --synthetic --train-subset 256 --val-subset 64 --batch 64
       --watchdog-ms 10000)
bench=(--device cpu --model mlp --width 0.25 --batch 32 --mode eager --variants train_base --warmup 0 --iters 1
       --repetitions 1 --watchdog-ms 10000)
check() {  # check NAME EXPECTED-LINE -- MPIRUN-ARGS...
  local name=$1 want=$2
  shift 3
  local t0 out rc ms
  t0=$(date +%s%N)
  out=$(timeout 60 "${MPIRUN[@]}" "$@" 2>&1)
  rc=$?
  ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  echo "mismatch.sh: $name: exit $rc after $ms ms"
  echo "$out" | grep -m1 'started differently'
  [ $rc -eq 2 ] || { echo "mismatch.sh: $name: exit $rc, want 2"; echo "$out"; exit 1; }
  for p in 0 1; do
    echo "$out" | grep -qF "[process $p of 2]: error: the processes were started differently: $want" ||
      { echo "mismatch.sh: $name: process $p did not name the difference"; echo "$out"; exit 1; }
  done
}
check "tr-train, gradient buckets" "--bucket-mb is '25' on process 0 but '0.01' on process 1" -- \
  -np 1 "$bin/tr-train" "${train[@]}" --bucket-mb 25 : -np 1 "$bin/tr-train" "${train[@]}" --bucket-mb 0.01
check "tr-train, epochs" "--epochs is '1' on process 0 but '2' on process 1" -- \
  -np 1 "$bin/tr-train" "${train[@]}" --epochs 1 : -np 1 "$bin/tr-train" "${train[@]}" --epochs 2
check "tr-train, seed given to one" "--seed is (not given) on process 0 but '5' on process 1" -- \
  -np 1 "$bin/tr-train" "${train[@]}" : -np 1 "$bin/tr-train" "${train[@]}" --seed 5
check "tr-bench, optimizer" "--optimizer is 'sgd' on process 0 but 'adamw' on process 1" -- \
  -np 1 "$bin/tr-bench" "${bench[@]}" --optimizer sgd : -np 1 "$bin/tr-bench" "${bench[@]}" --optimizer adamw
echo "mismatch.sh: ok"
