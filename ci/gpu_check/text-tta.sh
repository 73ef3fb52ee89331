# ci/gpu_check.sh's `text-tta` part (sourced by it, with its helpers and variables).
# Time to a target validation loss on text (Note [tta targets]): tr-bench tta
# --model gpt2-d6 with its recipe on tr-data's linux-doc shards (the pack
# carries them), TR_TEXT_TTA_RUNS seeds (default 5; TR_TEXT_TTA_FLAGS adds
# tta flags, e.g. another --target-loss); then the PyTorch peer
# (peers/torch_text_tta.py) with the recipe tr's report records, flag for
# flag, in its fastest mode, and the peer's step in every mode at the
# recipe's batch (TR_TEXT_TTA_TORCH_MODES narrows them), the evidence for
# which mode is fastest.
text_dir=$DATA/text
text_runs=${TR_TEXT_TTA_RUNS:-5}
if [ ! -f "$text_dir/manifest.json" ]; then
  note "text-tta skipped: no $text_dir/manifest.json (ci/pack_device.sh makes the shards with tr-data)"
else
  timeout ${TR_T_TEXT_TTA:-600} "$BIN/tr-bench" tta --device cuda --model gpt2-d6 --runs "$text_runs" \
    --data-dir "$text_dir" ${TR_TEXT_TTA_FLAGS:-} --json "$OUT/tta_gpt2-d6.json" --mllog "$OUT/tta_gpt2-d6.mllog" \
    > "$OUT/tta_gpt2-d6.log" 2>&1 || status=1
  note "tr-bench tta --model gpt2-d6:"
  grep -A12 '^tta:' "$OUT/tta_gpt2-d6.log" | tee -a "$OUT/summary.txt"
  "$BIN/tr-bench" report "$OUT/tta_gpt2-d6.json" -o "$OUT/tta_gpt2-d6.html" >> "$OUT/summary.txt" 2>&1 || status=1
  PY=${TR_TORCH_PYTHON:-/opt/torch/.venv/bin/python}
  if [ -x "$PY" ] && "$PY" -c "import torch; assert torch.cuda.is_available()" 2>/dev/null &&
    [ -f "$OUT/tta_gpt2-d6.json" ]; then
    # The recipe as tr ran it, from its report: the two cannot drift apart.
    peer_flags=$("$PY" - "$OUT/tta_gpt2-d6.json" <<'PYEOF'
import json, sys
t = json.load(open(sys.argv[1]))["tta"]
r = t["recipe"]
print(f"--epochs {r['epochs']} --batch {r['batch']} --lr {r['lr']} --schedule {r['schedule']} "
      f"--warmup {r['warmup']} --weight-decay {r['weight_decay']} --clip-grad-norm {r['clip_grad_norm']} "
      f"--ema-decay {r['ema_decay']} --val-every {r['val_every']} --precision {r['precision']} --seq {r['seq']} "
      f"--target-loss {t['target_loss']} --eval {t['eval']}")
PYEOF
    )
    timeout ${TR_T_TEXT_TTA_TORCH:-900} "$PY" peers/torch_text_tta.py --data-dir "$text_dir" $peer_flags \
      --runs "${TR_TEXT_TTA_TORCH_RUNS:-$text_runs}" --json "$OUT/tta_torch_gpt2-d6.json" \
      > "$OUT/tta_torch_gpt2-d6.log" 2>&1 || status=1
    note "peers/torch_text_tta.py $peer_flags:"
    tail -4 "$OUT/tta_torch_gpt2-d6.log" | tee -a "$OUT/summary.txt"
    batch=$(echo "$peer_flags" | sed -E 's/.*--batch ([0-9]+).*/\1/')
    timeout ${TR_T_GPT_TORCH:-420} "$PY" peers/torch_gpt.py --model gpt2-d6 --batch "$batch" --precision bf16 \
      --mode "${TR_TEXT_TTA_TORCH_MODES:-eager,full-capture,torch-compile,compile-max-autotune}" \
      --warmup 10 --iters 50 --repetitions 3 \
      --json "$OUT/torch_gpt2-d6_step.json" > "$OUT/torch_gpt2-d6_step.log" 2>&1 || status=1
    note "PyTorch peer's step, gpt2-d6 at batch $batch (bf16, T 256), every mode:"
    grep -v -i warn "$OUT/torch_gpt2-d6_step.log" | tee -a "$OUT/summary.txt"
  else
    note "PyTorch text peer skipped: no python with torch and CUDA at $PY, or no tr report"
  fi
fi
