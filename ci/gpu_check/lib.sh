# ci/gpu_check.sh's helpers (sourced by it): note, pack (on exit), probe,
# find_mpirun, beside_peer. They use its variables: OUT, SUMMARY_DIR, BIN, status.
note() { echo "== $*" | tee -a "$OUT/summary.txt"; }
pack() {  # few files travel back from a lent machine: one summary and one archive
  cp "$OUT/summary.txt" "$SUMMARY_DIR/summary.txt" 2>/dev/null
  tar czf "$SUMMARY_DIR/detail.tgz" -C "$SUMMARY_DIR" detail && rm -rf "$OUT"
}
# probe LIMIT LOG CMD...: runs CMD with output to LOG; past LIMIT seconds it
# writes every thread's backtrace (gdb, where the machine has one) and the GPUs'
# state to LOG.hang, then kills CMD and returns 124. A hang then names its wait.
probe() {
  local limit=$1 log=$2; shift 2
  "$@" > "$log" 2>&1 &
  local pid=$! waited=0
  while kill -0 $pid 2>/dev/null && [ $waited -lt $limit ]; do sleep 1; waited=$((waited + 1)); done
  if kill -0 $pid 2>/dev/null; then
    {
      echo "still running after ${limit} s: $*"
      nvidia-smi --query-gpu=index,utilization.gpu,memory.used --format=csv
      local dbg; dbg=$(command -v gdb || command -v cuda-gdb || ls /usr/local/cuda/bin/cuda-gdb 2>/dev/null)
      if [ -n "$dbg" ]; then timeout 120 "$dbg" -p $pid -batch -ex "thread apply all bt" 2>&1 | grep -vE '^\[New LWP|^$'
      else echo "no gdb here: no backtraces"; fi
    } > "$log.hang" 2>&1
    kill -9 $pid 2>/dev/null; wait $pid 2>/dev/null
    return 124
  fi
  wait $pid
}

# find_mpirun: sets MPIRUN to Open MPI's launcher (the one ci/pack_mpi.sh packed
# under .device/mpi, relocated, else the machine's own; empty when neither) and
# the environment it needs as root in a container.
find_mpirun() {
  MPIRUN=$(command -v mpirun || true)
  if [ -x .device/mpi/usr/bin/mpirun ]; then
    export OPAL_PREFIX=$PWD/.device/mpi/usr PMIX_INSTALL_PREFIX=$PWD/.device/mpi/usr
    MPIRUN=$PWD/.device/mpi/usr/bin/mpirun
  fi
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
}

# beside_peer NAME MODELS VARIANT...: tr-bench in full capture (AMP, SGD) of
# MODELS once per VARIANT ("label", or "label=--flag" to run with that flag),
# then the PyTorch peer's whole-step graph of the same models in the same call,
# and each variant's ratio to it. Writes NAME_label.{json,log} and torch_NAME.*.
beside_peer() {
  local name=$1 models=$2 v label
  shift 2
  for v in "$@"; do
    label=${v%%=*}
    local flag=()
    [[ $v == *=* ]] && flag=("${v#*=}")
    timeout ${TR_T_BESIDE:-200} "$BIN/tr-bench" --device cuda --mode full-capture --optimizer sgd --precision amp \
      --model "$models" --warmup 5 --iters 20 --repetitions 3 "${flag[@]}" --json "$OUT/${name}_$label.json" \
      > "$OUT/${name}_$label.log" 2>&1 || status=1
    note "tr-bench $models, full capture, $name: $label"
    tee -a "$OUT/summary.txt" < "$OUT/${name}_$label.log"
  done
  local PY=${TR_TORCH_PYTHON:-/opt/torch/.venv/bin/python}
  if [ -x "$PY" ] && "$PY" -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
    timeout ${TR_T_BESIDE_TORCH:-200} "$PY" peers/torch_step.py --model "$models" --mode full-capture --warmup 5 \
      --iters 20 --repetitions 3 --json "$OUT/torch_$name.json" > "$OUT/torch_$name.log" 2>&1 || status=1
    for v in "$@"; do
      label=${v%%=*}
      note "tr ($name: $label) vs PyTorch's whole-step graph (torch/tr above 1: tr is faster)"
      "$PY" peers/compare.py "$OUT/torch_$name.json" "$OUT/${name}_$label.json" 2>&1 | tee -a "$OUT/summary.txt"
    done
  else
    note "PyTorch peer skipped: no python with torch and CUDA at $PY"
  fi
}
