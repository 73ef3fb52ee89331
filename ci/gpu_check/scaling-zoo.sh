# ci/gpu_check.sh's `scaling-zoo` part (sourced by it, with its helpers and variables).
# The zoo's weak scaling (issue: multi-GPU runs of the zoo): tr-bench over 1,
# 2, 4 ... GPUs in every mode, with both --bn-sync choices, beside PyTorch DDP
# on the same models and batches per GPU; the first model's smaller batch also
# as one process per GPU. A model's sweep takes minutes: TR_ZOO_SCALING picks
# the models of one call ("model:batch,batch ...").
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
if [ "$gpus" -lt 2 ]; then
  note "scaling-zoo skipped: $gpus GPU visible (needs 2 or more)"
else
  export NCCL_DEBUG=${NCCL_DEBUG:-WARN}
  PY=${TR_TORCH_PYTHON:-/opt/torch/.venv/bin/python}
  zcommon="--device cuda --mode all --gpus auto --optimizer sgd --precision amp --warmup 5 --iters 20 --repetitions 3"
  reports=()
  for spec in ${TR_ZOO_SCALING:-resnet50:32,256 resnet18:128,512}; do
    m=${spec%%:*} batches=${spec##*:}
    for sync in batch running; do
      probe ${TR_T_SCALING:-400} "$OUT/scaling_${m}_bn_$sync.log" "$BIN/tr-bench" $zcommon --model $m \
        --batch-per-gpu $batches --bn-sync $sync --json "$OUT/scaling_${m}_bn_$sync.json" || status=1
      reports+=("$OUT/scaling_${m}_bn_$sync.json")
      note "tr-bench weak scaling, $m, BN sync $sync, on $gpus GPUs"
      grep -v '^\[tr ' "$OUT/scaling_${m}_bn_$sync.log" | tee -a "$OUT/summary.txt"
    done
    if [ -x "$PY" ]; then
      for bn in sync local; do
        probe ${TR_T_TORCH:-400} "$OUT/torch_ddp_${m}_bn_$bn.log" "$PY" peers/torch_ddp.py --model $m \
          --batch-per-gpu $batches --bn $bn --warmup 5 --iters 20 --repetitions 3 \
          --json "$OUT/torch_ddp_${m}_bn_$bn.json" || status=1
        note "PyTorch DDP, $m, BN $bn"
        grep -E '^(torch_ddp|model|'$m') ' "$OUT/torch_ddp_${m}_bn_$bn.log" | tee -a "$OUT/summary.txt"
      done
    fi
  done
  # Processes against threads: the first model's smaller batch per GPU.
  find_mpirun
  first=${TR_ZOO_SCALING:-resnet50:32}
  first=${first%% *}
  m=${first%%:*} b=${first##*:}
  b=${b%%,*}
  if [ -n "$MPIRUN" ]; then
    probe ${TR_T_SCALING:-400} "$OUT/scaling_${m}_mpi.log" "$MPIRUN" --bind-to none -np $gpus "$BIN/tr-bench" \
      $zcommon --model $m --batch-per-gpu $b --json "$OUT/scaling_${m}_mpi.json" || status=1
    note "$m at $b per GPU as $gpus processes (mpirun), beside the rank threads above"
    grep -v '^\[tr ' "$OUT/scaling_${m}_mpi.log" | tee -a "$OUT/summary.txt"
  else
    note "no mpirun: processes against threads not measured (ci/pack_mpi.sh packs one)"
  fi
  "$BIN/tr-bench" report "${reports[@]}" -o "$OUT/scaling_zoo.html" > /dev/null 2>&1 || status=1
fi
