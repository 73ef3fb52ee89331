# ci/gpu_check.sh's `interleave` part (sourced by it, with its helpers and variables).
# tr-bench and the PyTorch peer's whole-step graph in turns (tr, peer, tr, peer,
# ...) through ci/interleave.py, TR_INTERLEAVE_ROUNDS rounds (default 3): the
# bench part times them in two blocks of the call, so a drift of the machine
# between the blocks goes into their ratio; in turns it falls on both alike, and
# the paired rounds give the ratio a 95 % confidence interval. The cnn at batch
# 256 in full capture, AMP, with SGD (the optimizer the peer trains it with),
# timed as the bench part times it, beside peers/torch_step.py in mode
# TR_INTERLEAVE_PEER_MODE (default full-capture: the whole-step graph, GradScaler
# and the fused optimizer on the device; compile-full-capture adds Inductor's
# kernels, compiled again each round from Inductor's caches). One line per call goes to $OUT/history.jsonl
# (reports/schema.md, "The history of the headline figures"); when the call's
# reports are committed, its lines are appended to reports/history.jsonl, their
# source then naming the committed interleave.json as PATH@COMMIT.
PY=${TR_TORCH_PYTHON:-/opt/torch/.venv/bin/python}
if [ -x "$PY" ] && "$PY" -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
  timing="--warmup 10 --iters 30 --repetitions 5"
  limit="timeout ${TR_T_INTERLEAVE:-200}"  # each run
  tr_cmd="$limit $(printf %q "$BIN/tr-bench") --device cuda --optimizer sgd --precision amp --model cnn --batch 256"
  tr_cmd+=" --mode full-capture $timing --json {json}"
  pmode=${TR_INTERLEAVE_PEER_MODE:-full-capture}
  peer_cmd="$limit $(printf %q "$PY") peers/torch_step.py --model cnn --batch 256 --mode $pmode $timing"
  peer_cmd+=" --json {json}"
  # The driver needs only the standard library; it runs on the torch python, as peers/compare.py does in the
  # bench part: a lent machine may have no other.
  "$PY" ci/interleave.py --rounds "${TR_INTERLEAVE_ROUNDS:-3}" --out "$OUT/interleave" --tr "$tr_cmd" \
    --peer "$peer_cmd" --tr-case model=cnn,mode=full-capture,batch=256 \
    --peer-case "torch_step/model:cnn/mode:$pmode/batch:256" \
    --figure "cnn amp b256 full capture vs PyTorch $pmode (ms)" --history "$OUT/history.jsonl" \
    > "$OUT/interleave.log" 2>&1 || status=1
  note "tr and PyTorch ($pmode) in turns (cnn, AMP, batch 256, full capture; tr/peer below 1: tr is faster)"
  tee -a "$OUT/summary.txt" < "$OUT/interleave.log"
else
  note "interleave skipped: no python with torch and CUDA at $PY"
fi
