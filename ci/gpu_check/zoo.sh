# ci/gpu_check.sh's `zoo` part (sourced by it, with its helpers and variables).
# The zoo (resnet18, resnet50, vgg16bn) in every mode at its default batches,
# AMP, SGD, beside the PyTorch peer (channels-last, AMP; torch.compile at each
# model's largest batch) in the same call. TR_ZOO narrows the models.
zoo=${TR_ZOO:-resnet18,resnet50,vgg16bn}
timeout ${TR_T_ZOO:-300} "$BIN/tr-bench" --device cuda --optimizer sgd --precision amp --model "$zoo" \
  --warmup 5 --iters 20 --repetitions 3 --json "$OUT/bench_zoo_amp.json" > "$OUT/bench_zoo_amp.log" 2>&1 || status=1
note "tr-bench zoo (amp): $zoo"
tee -a "$OUT/summary.txt" < "$OUT/bench_zoo_amp.log"
"$BIN/tr-bench" report "$OUT/bench_zoo_amp.json" -o "$OUT/bench_zoo_amp.html" > /dev/null 2>&1 || status=1
PY=${TR_TORCH_PYTHON:-/opt/torch/.venv/bin/python}
if [ -x "$PY" ] && "$PY" -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
  timeout ${TR_T_ZOO_TORCH:-280} "$PY" peers/torch_step.py --model "$zoo" --compile-largest --warmup 5 --iters 20 \
    --repetitions 3 --json "$OUT/torch_zoo_amp.json" > "$OUT/torch_zoo_amp.log" 2>&1 || status=1
  note "PyTorch peer, zoo (amp)"
  grep -v -i warn "$OUT/torch_zoo_amp.log" | tee -a "$OUT/summary.txt"
  note "tr vs PyTorch, zoo (median step time; torch/tr above 1: tr is faster)"
  "$PY" peers/compare.py "$OUT/torch_zoo_amp.json" "$OUT/bench_zoo_amp.json" 2>&1 | tee -a "$OUT/summary.txt"
else
  note "PyTorch peer skipped: no python with torch and CUDA at $PY"
fi
