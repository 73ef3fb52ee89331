# ci/gpu_check.sh's `interleave` part (sourced by it, with its helpers and variables).
# The headline figures, tr and its strongest peer in turns (tr, peer, tr, peer,
# ...) through ci/interleave.py, TR_INTERLEAVE_ROUNDS rounds (default 3): timed
# in two blocks of one call, a drift of the machine between the blocks goes into
# their ratio; in turns it falls on both alike, and the paired rounds give the
# ratio a 95 % confidence interval. TR_INTERLEAVE_WORKLOADS picks them (default:
# all, in this order):
#   cnn       batch 256, AMP, SGD, full capture, beside peers/torch_step.py in
#             mode TR_INTERLEAVE_CNN_MODE (default compile-full-capture, the
#             fastest of its modes on the H100: Inductor's max-autotune kernels
#             inside the whole-step graph, GradScaler and the fused optimizer on the device)
#   resnet50  batch 256, and
#   vgg16bn   batch 128, the same, beside mode TR_INTERLEAVE_ZOO_MODE (default
#             compile-full-capture: Inductor's kernels inside the whole-step
#             graph; compiled again each round, from Inductor's caches after the
#             first), its convolutions from the backends TR_INTERLEAVE_ZOO_CONV
#             (default ATEN: cuDNN, as tr's; Inductor's search of Triton conv
#             templates for resnet50 ran past 200 s on an H100, and "ATEN,TRITON"
#             restores it); the peer's report records the setting (inductor_env)
#   gpt2      batch 4, T 1024, bf16, full capture, beside llm.c (ci/llmc/run.sh,
#             the binary in .device-llmc) at micro-batch 4
#   tta-cnn   the cnn's recipe to 94 % over 5 seeds, beside peers/torch_tta.py in
#             its whole-step graph on the same recipe (needs Fashion-MNIST in $DATA)
# Inductor's caches live in .inductor-cache/ of the working tree (git-ignored;
# TORCHINDUCTOR_CACHE_DIR overrides): a lent machine keeps ignored files from
# call to call while it stays warm, so a call whose first max-autotune compile
# ran out of time leaves its work to the next call's rounds.
# Each workload's rounds go to $OUT/interleave/NAME; one line per workload to
# $OUT/history.jsonl (reports/schema.md, "The history of the headline figures");
# when the call's reports are committed, those lines are appended to
# reports/history.jsonl, their source then naming the committed interleave.json as PATH@COMMIT.
PY=${TR_TORCH_PYTHON:-/opt/torch/.venv/bin/python}
if [ -x "$PY" ] && "$PY" -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
  limit="timeout ${TR_T_INTERLEAVE:-200}"  # each run
  export TORCHINDUCTOR_CACHE_DIR=${TORCHINDUCTOR_CACHE_DIR:-$PWD/.inductor-cache}
  tr_bench="$limit $(printf %q "$BIN/tr-bench")"
  timing="--warmup 10 --iters 30 --repetitions 5"
  cnn_mode=${TR_INTERLEAVE_CNN_MODE:-compile-full-capture}
  zoo_mode=${TR_INTERLEAVE_ZOO_MODE:-compile-full-capture}
  for w in ${TR_INTERLEAVE_WORKLOADS:-cnn resnet50 vgg16bn gpt2 tta-cnn}; do
    case $w in
      cnn | resnet50 | vgg16bn)
        batch=256 pmode=$zoo_mode
        [ $w = vgg16bn ] && batch=128
        [ $w = cnn ] && pmode=$cnn_mode
        tr_cmd="$tr_bench --device cuda --optimizer sgd --precision amp --model $w --batch $batch --mode full-capture $timing --json {json}"
        peer_limit=$limit
        # Inductor's max-autotune compile of resnet50 took more than 200 s (H100); its cache shortens later rounds.
        [[ $pmode == compile* ]] && peer_limit="timeout ${TR_T_INTERLEAVE_COMPILE:-900}"
        conv_env=""
        [ $w != cnn ] && conv_env="TORCHINDUCTOR_MAX_AUTOTUNE_CONV_BACKENDS=$(printf %q "${TR_INTERLEAVE_ZOO_CONV:-ATEN}") "
        peer_cmd="$peer_limit env $conv_env$(printf %q "$PY") peers/torch_step.py --model $w --batch $batch --mode $pmode $timing --json {json}"
        what=(--tr-case "model=$w,mode=full-capture,batch=$batch" --peer-case "torch_step/model:$w/mode:$pmode/batch:$batch"
          --figure "$w amp b$batch full capture vs PyTorch $pmode (ms)") ;;
      gpt2)
        if [ ! -x .device-llmc/train_gpt2cu ] && [ ! -f .device-llmc/train_gpt2cu.xz ]; then
          note "interleave gpt2 skipped: no .device-llmc/train_gpt2cu (bash ci/llmc/build.sh LLMC_SRC)"
          continue
        fi
        tr_cmd="$tr_bench --device cuda --model gpt2 --batch 4 --precision bf16 --mode full-capture --warmup 2 --iters 5 --repetitions 3 --json {json}"
        # run.sh writes OUT/llmc_gpt2.json: a folder per round, the report then moved to {json}.
        peer_cmd="d=\$(mktemp -d) && OUT=\$d LLMC_BATCHES=4 $limit bash ci/llmc/run.sh > \$d/run.log 2>&1"
        peer_cmd+=" && mv \$d/llmc_gpt2.json {json}"
        what=(--tr-case "model=gpt2,mode=full-capture,batch=4" --peer-case "llmc/batch:4"
          --figure "gpt2 bf16 b4 T1024 full capture vs llm.c (ms)") ;;
      tta-cnn)
        if [ -z "${DATA:-}" ] || [ ! -d "$DATA" ]; then
          note "interleave tta-cnn skipped: no Fashion-MNIST folder (DATA)"
          continue
        fi
        tr_cmd="$tr_bench tta --device cuda --model cnn --runs 5 --data-dir $(printf %q "$DATA") --json {json}"
        # The recipe of framework/graph/model_registry.cpp, flag for flag (as the tta part runs it).
        peer_cmd="$limit $(printf %q "$PY") peers/torch_tta.py --model cnn --mode full-capture --epochs 7 --batch 512"
        peer_cmd+=" --lr 0.4 --warmup 0.2 --amp --flip --tta flip --target-acc 0.94 --runs 5 --data-dir $(printf %q "$DATA") --json {json}"
        what=(--tr-tta cnn --peer-case torch_tta --figure "cnn to 94 % on Fashion-MNIST, mean of 5 seeds, vs PyTorch whole-step graph (s)") ;;
      *)
        note "interleave: unknown workload '$w' (cnn resnet50 vgg16bn gpt2 tta-cnn)"
        status=1
        continue ;;
    esac
    # The driver needs only the standard library; it runs on the torch python, as peers/compare.py does in the
    # bench part: a lent machine may have no other.
    "$PY" ci/interleave.py --rounds "${TR_INTERLEAVE_ROUNDS:-3}" --out "$OUT/interleave/$w" --tr "$tr_cmd" \
      --peer "$peer_cmd" "${what[@]}" --history "$OUT/history.jsonl" \
      > "$OUT/interleave_$w.log" 2>&1 || status=1
    note "tr and its peer in turns: $w (tr/peer below 1: tr is faster)"
    tee -a "$OUT/summary.txt" < "$OUT/interleave_$w.log"
  done
else
  note "interleave skipped: no python with torch and CUDA at $PY"
fi
