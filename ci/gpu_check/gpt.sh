# ci/gpu_check.sh's `gpt` part (sourced by it, with its helpers and variables).
# GPT-2 124M at T = 1024 in every mode at its default micro-batches (TR_GPT_BATCHES
# narrows them), in fp16 AMP and bf16 (TR_GPT_PRECISIONS narrows them), AdamW
# with the gradient norm clipped to 1, beside the PyTorch peer in the same
# precision (eager, whole-step CUDA graph, torch.compile default and
# max-autotune; TR_GPT_TORCH_MODES narrows them) and llm.c (bf16), in the same call.
gpt_batches=${TR_GPT_BATCHES:-1,4,16,64}
gpt_precisions=${TR_GPT_PRECISIONS:-amp,bf16}
gpt_torch_modes=${TR_GPT_TORCH_MODES:-eager,full-capture,torch-compile,compile-max-autotune}
PY=${TR_TORCH_PYTHON:-/opt/torch/.venv/bin/python}
torch_ok=0
if [ -x "$PY" ] && "$PY" -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then torch_ok=1; fi
for prec in ${gpt_precisions//,/ }; do
  timeout ${TR_T_GPT:-420} "$BIN/tr-bench" --device cuda --model gpt2 --batch "$gpt_batches" --precision "$prec" \
    --mode eager,partial-capture,full-capture --warmup 2 --iters 5 --repetitions 3 --top-kernels 12 \
    --json "$OUT/bench_gpt2_$prec.json" \
    > "$OUT/bench_gpt2_$prec.log" 2>&1 || status=1
  note "tr-bench gpt2 ($prec, T 1024): batches $gpt_batches"
  tee -a "$OUT/summary.txt" < "$OUT/bench_gpt2_$prec.log"
  if [ "$torch_ok" = 1 ]; then
    timeout ${TR_T_GPT_TORCH:-420} "$PY" peers/torch_gpt.py --model gpt2 --batch "$gpt_batches" --mode "$gpt_torch_modes" \
      --precision "$prec" --warmup 3 --iters 5 --repetitions 3 --json "$OUT/torch_gpt2_$prec.json" \
      > "$OUT/torch_gpt2_$prec.log" 2>&1 || status=1
    note "PyTorch peer, gpt2 ($prec, T 1024)"
    grep -v -i warn "$OUT/torch_gpt2_$prec.log" | tee -a "$OUT/summary.txt"
  else
    note "PyTorch peer skipped: no python with torch and CUDA at $PY"
  fi
done
# llm.c at the same batches (ci/llmc/build.sh made the binary here and the pack carried it).
if [ -x .device-llmc/train_gpt2cu ] || [ -f .device-llmc/train_gpt2cu.xz ]; then
  OUT=$OUT LLMC_BATCHES=$gpt_batches timeout ${TR_T_GPT_LLMC:-200} bash ci/llmc/run.sh > "$OUT/llmc_gpt2_run.log" 2>&1 ||
    status=1
  note "llm.c peer, gpt2 (bf16, T 1024)"
  tail -n 8 "$OUT/llmc_gpt2_run.log" | tee -a "$OUT/summary.txt"
else
  note "llm.c peer skipped: no .device-llmc/train_gpt2cu (bash ci/llmc/build.sh LLMC_SRC)"
fi
