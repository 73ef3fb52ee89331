# ci/gpu_check.sh's `tta` part (sourced by it, with its helpers and variables).
# Time to accuracy: tr-bench tta with each model's recipe (5 seeds; resnet18
# ${TR_TTA_RESNET_RUNS:-5}), then the same recipe in PyTorch in the same call.
for m in cnn mlp resnet18; do
  runs=5
  [ $m = resnet18 ] && runs=${TR_TTA_RESNET_RUNS:-5}
  timeout ${TR_T_TTA:-300} "$BIN/tr-bench" tta --device cuda --model $m --runs $runs --data-dir "$DATA" \
    --json "$OUT/tta_$m.json" --mllog "$OUT/tta_$m.mllog" > "$OUT/tta_$m.log" 2>&1 || status=1
  note "tr-bench tta --model $m:"
  grep -A20 '^tta:' "$OUT/tta_$m.log" | tee -a "$OUT/summary.txt"
done
"$BIN/tr-bench" report "$OUT"/tta_*.json -o "$OUT/tta.html" >> "$OUT/summary.txt" 2>&1 || status=1
PY=${TR_TORCH_PYTHON:-/opt/torch/.venv/bin/python}
if [ -x "$PY" ] && "$PY" -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
  # The recipes of framework/graph/model_registry.cpp, flag for flag.
  declare -A recipe=(
    [cnn]="--epochs 7 --batch 512 --lr 0.4 --warmup 0.2 --amp --flip --tta flip --target-acc 0.94 --runs 5"
    [mlp]="--epochs 10 --batch 500 --lr 1.5e-3 --warmup 0 --amp --flip --tta flip --target-acc 0.895 --runs 5"
    [resnet18]="--epochs 12 --batch 512 --lr 0.1 --warmup 0.2 --amp --flip --translate 1 --tta flip --target-acc 0.95 --runs ${TR_TTA_TORCH_RESNET_RUNS:-2}")
  for m in cnn mlp resnet18; do
    timeout ${TR_T_TTA_TORCH:-300} "$PY" peers/torch_tta.py --model $m ${recipe[$m]} --data-dir "$DATA" \
      --json "$OUT/tta_torch_$m.json" > "$OUT/tta_torch_$m.log" 2>&1 || status=1
    note "peers/torch_tta.py --model $m:"
    tail -4 "$OUT/tta_torch_$m.log" | tee -a "$OUT/summary.txt"
  done
else
  note "PyTorch peer skipped: no python with torch and CUDA at $PY"
fi
