# ci/gpu_check.sh's `scaling` part (sourced by it, with its helpers and variables).
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
if [ "$gpus" -lt 2 ]; then
  note "scaling skipped: $gpus GPU visible (needs 2 or more)"
else
  # Phase markers (TR_TRACE) and NCCL's warnings go to the logs: where a
  # multi-GPU run stops is the first thing to know.
  export TR_TRACE=1 NCCL_DEBUG=${NCCL_DEBUG:-WARN}
  nvidia-smi topo -m > "$OUT/topology.txt" 2>&1
  probe ${TR_T_NCCL:-90} "$OUT/nccl_tests.log" "$BIN/tr_tests" --gtest_filter='NcclGpu*'
  rc=$?
  [ $rc -ne 0 ] && status=1
  note "NCCL alone on $gpus GPUs (exit $rc; 124: the time limit, backtraces in nccl_tests.log.hang)"
  grep -E '^\[ nccl \]|PASSED|FAILED|Failure' "$OUT/nccl_tests.log" | tee -a "$OUT/summary.txt"
  probe ${TR_T_DP:-300} "$OUT/dp_tests.log" "$BIN/tr_tests" --gtest_filter='GpuDataParallel*'
  rc=$?
  [ $rc -ne 0 ] && status=1
  note "data-parallel tests on $gpus GPUs (exit $rc; 124: the time limit, backtraces in dp_tests.log.hang)"
  grep -E '^\[ (gpu dp|allreduce|nccl) \]|PASSED|FAILED|Failure' "$OUT/dp_tests.log" | tee -a "$OUT/summary.txt"
  [ $rc -ne 0 ] && tail -20 "$OUT/dp_tests.log" | tee -a "$OUT/summary.txt"  # the last phase markers
  dp_rc=$rc
  [ $rc -eq 124 ] && grep -A12 -E '^Thread' "$OUT/dp_tests.log.hang" | grep -E '^Thread|^#[0-9] ' | head -80 | tee -a "$OUT/summary.txt"
  # Weak scaling over 1, 2, 4, ... GPUs at a fixed batch per GPU, all modes,
  # with the gradient all-reduce inside the step beside NCCL alone. Not run
  # after a hang: it would hang the same way and spend the call's time.
  if [ $dp_rc -eq 124 ]; then
    note "weak scaling not run: the data-parallel tests hung"
    exit 1
  fi
  common="--device cuda --mode all --gpus auto --optimizer sgd --warmup 10 --iters 30 --repetitions 5"
  probe ${TR_T_SCALING:-400} "$OUT/scaling_cnn.log" "$BIN/tr-bench" $common --model cnn --batch-per-gpu 256,1024 \
    --json "$OUT/scaling_cnn.json" || status=1
  # The same with per-GPU BN: one small collective per step instead of two
  # per BN layer on the critical path.
  probe ${TR_T_SCALING:-400} "$OUT/scaling_cnn_bn_running.log" "$BIN/tr-bench" $common --model cnn \
    --batch-per-gpu 256,1024 --bn-sync running --json "$OUT/scaling_cnn_bn_running.json" || status=1
  probe ${TR_T_SCALING:-400} "$OUT/scaling_mlp.log" "$BIN/tr-bench" $common --model mlp --batch-per-gpu 200 \
    --json "$OUT/scaling_mlp.json" || status=1
  # The same sweep launched as one process per GPU (Note [processes and
  # ranks]), against the rank threads above: mpirun -np N, first 1, 2, 4 ...
  # processes. Packed Open MPI (ci/pack_mpi.sh) when the machine has none.
  find_mpirun
  if [ -n "$MPIRUN" ]; then
    probe ${TR_T_SCALING:-400} "$OUT/scaling_cnn_mpi.log" "$MPIRUN" --bind-to none -np $gpus "$BIN/tr-bench" \
      $common --model cnn --batch-per-gpu 256,1024 --json "$OUT/scaling_cnn_mpi.json" || status=1
    note "the cnn sweep as $gpus processes (mpirun), beside the rank threads"
    grep -v '^\[tr ' "$OUT/scaling_cnn_mpi.log" | tee -a "$OUT/summary.txt"
  else
    note "no mpirun: processes against threads not measured (ci/pack_mpi.sh packs one)"
  fi
  "$BIN/tr-bench" report "$OUT/scaling_cnn.json" "$OUT/scaling_cnn_bn_running.json" "$OUT/scaling_mlp.json" \
    -o "$OUT/scaling.html" > /dev/null 2>&1 || status=1
  # PyTorch DDP on the same GPUs and batches per GPU (peers/torch_ddp.py).
  PY=${TR_TORCH_PYTHON:-/opt/torch/.venv/bin/python}
  if [ -x "$PY" ] && "$PY" -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
    for bn in sync local; do
      probe ${TR_T_TORCH:-200} "$OUT/torch_ddp_bn_$bn.log" "$PY" peers/torch_ddp.py --model cnn \
        --batch-per-gpu 256,1024 --bn $bn --json "$OUT/torch_ddp_bn_$bn.json" || status=1
    done
  fi
  # Accuracy on every GPU: the same 10 epochs as the train part's AMP run,
  # with synchronised and with per-GPU BN.
  for sync in batch running; do
    probe ${TR_T_TRAIN:-240} "$OUT/train_cnn_${gpus}gpu_bn_$sync.log" "$BIN/tr-train" --device cuda --model cnn \
      --amp --epochs 10 --gpus $gpus --bn-sync $sync --data-dir "$DATA" || status=1
  done
  note "tr-bench weak scaling on $gpus GPUs"
  cat "$OUT/scaling_cnn.log" "$OUT/scaling_cnn_bn_running.log" "$OUT/scaling_mlp.log" | grep -v '^\[tr ' \
    | tee -a "$OUT/summary.txt"
  for bn in sync local; do
    [ -f "$OUT/torch_ddp_bn_$bn.log" ] || continue
    note "PyTorch DDP, BN $bn"
    grep -E '^(torch_ddp|model|cnn|mlp) ' "$OUT/torch_ddp_bn_$bn.log" | tee -a "$OUT/summary.txt"
  done
  for sync in batch running; do
    note "cnn on Fashion-MNIST on $gpus GPUs, 10 epochs, full capture, AMP, BN sync $sync:"
    grep -v '^\[tr ' "$OUT/train_cnn_${gpus}gpu_bn_$sync.log" | tee -a "$OUT/summary.txt"
  done
fi
