# ci/gpu_check.sh's `bench` part (sourced by it, with its helpers and variables).
# cnn trains with SGD here, the optimizer the PyTorch peer uses too.
common="--device cuda --optimizer sgd --warmup 10 --iters 30 --repetitions 5"
for prec in amp fp32; do
  # AMP also names each case's top kernels: the report carries kernels per step and their time.
  top=()
  [ $prec = amp ] && top=(--top-kernels 10)
  timeout ${TR_T_BENCH:-200} "$BIN/tr-bench" $common --precision $prec --model cnn --batch 64,256,1024,4096 \
    "${top[@]}" --json "$OUT/bench_cnn_$prec.json" > "$OUT/bench_cnn_$prec.log" 2>&1 || status=1
  timeout ${TR_T_MLP:-100} "$BIN/tr-bench" $common --precision $prec --model mlp --batch 200 \
    --json "$OUT/bench_mlp_$prec.json" > "$OUT/bench_mlp_$prec.log" 2>&1 || status=1
  note "tr-bench ($prec)"
  cat "$OUT/bench_cnn_$prec.log" "$OUT/bench_mlp_$prec.log" | tee -a "$OUT/summary.txt"
done
# The cnn with each BatchNorm in one cooperative kernel (--grid-sync), full
# capture, AMP: the kernel count the roofline issue targets (58 at batch 256),
# measured beside the default in the same call.
timeout ${TR_T_MLP:-100} "$BIN/tr-bench" $common --precision amp --model cnn --batch 64,256,1024,4096 \
  --mode full-capture --grid-sync --json "$OUT/bench_cnn_amp_gridsync.json" > "$OUT/bench_cnn_amp_gridsync.log" 2>&1 || status=1
note "tr-bench (amp, full capture with --grid-sync)"
tee -a "$OUT/summary.txt" < "$OUT/bench_cnn_amp_gridsync.log"
# Full capture launching the dozen sub-graphs of a step instead of one step graph.
timeout ${TR_T_MLP:-100} "$BIN/tr-bench" $common --precision amp --model cnn,mlp --batch 64,200,256 \
  --mode full-capture --split-steps --json "$OUT/bench_amp_split.json" > "$OUT/bench_amp_split.log" 2>&1 || status=1
note "tr-bench (amp, full capture with --split-steps)"
tee -a "$OUT/summary.txt" < "$OUT/bench_amp_split.log"
"$BIN/tr-bench" report "$OUT/bench_cnn_amp.json" "$OUT/bench_mlp_amp.json" -o "$OUT/bench_amp.html" > /dev/null 2>&1 || status=1
# The same steps in PyTorch (peers/torch_step.py), where a PyTorch with CUDA is installed.
PY=${TR_TORCH_PYTHON:-/opt/torch/.venv/bin/python}
if [ -x "$PY" ] && "$PY" -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
  timeout ${TR_T_TORCH:-200} "$PY" peers/torch_step.py --model cnn,mlp --json "$OUT/torch_amp.json" \
    > "$OUT/torch_amp.log" 2>&1 || status=1
  note "PyTorch peer (amp)"
  grep -v -i warn "$OUT/torch_amp.log" | grep -v "return Variable" | tee -a "$OUT/summary.txt"
  note "tr vs PyTorch (median step time; torch/tr above 1: tr is faster)"
  "$PY" peers/compare.py "$OUT/torch_amp.json" "$OUT/bench_cnn_amp.json" "$OUT/bench_mlp_amp.json" 2>&1 | tee -a "$OUT/summary.txt"
else
  note "PyTorch peer skipped: no python with torch and CUDA at $PY"
fi
