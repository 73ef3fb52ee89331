# ci/gpu_check.sh's `conv-plans` part (sourced by it, with its helpers and variables).
# Plan files (Note [convolution plan books], docs/user-guide.md, "Plan files"): resnet18 at
# 128 (AMP, SGD, synthetic data) trained by two tr-train processes with
# --cudnn-benchmark alone, whose timed plans and so state hashes may differ;
# then once recording its plans into a file and twice replaying it, which must
# give one state hash; then tr-bench's full-capture step with the heuristic's
# plans and with the replayed ones, alternating, the replays with one digest.
plans=$OUT/conv_plans_resnet18.json
rm -f "$plans"
train=(--device cuda --model resnet18 --synthetic --train-subset 1024 --val-subset 256 --epochs 1 --batch 128
       --amp --optimizer sgd --state-hash)
hash_of() { grep -ho 'state hash [0-9a-fx]*' "$1" | head -1 | awk '{print $3}'; }
for run in timed_1=--cudnn-benchmark timed_2=--cudnn-benchmark record="--cudnn-benchmark --conv-plans $plans" \
           replay_1="--conv-plans $plans" replay_2="--conv-plans $plans"; do
  label=${run%%=*}
  # shellcheck disable=SC2086  # the flags split on purpose
  timeout ${TR_T_PLANS:-300} "$BIN/tr-train" "${train[@]}" ${run#*=} > "$OUT/conv_plans_train_$label.log" 2>&1 || status=1
done
note "conv plans: resnet18 b128 state hashes: timed alone $(hash_of "$OUT/conv_plans_train_timed_1.log") and" \
  "$(hash_of "$OUT/conv_plans_train_timed_2.log"); recorded $(hash_of "$OUT/conv_plans_train_record.log");" \
  "replayed $(hash_of "$OUT/conv_plans_train_replay_1.log") and $(hash_of "$OUT/conv_plans_train_replay_2.log")"
if [ "$(hash_of "$OUT/conv_plans_train_replay_1.log")" != "$(hash_of "$OUT/conv_plans_train_record.log")" ] ||
   [ "$(hash_of "$OUT/conv_plans_train_replay_2.log")" != "$(hash_of "$OUT/conv_plans_train_record.log")" ]; then
  note "conv plans: FAILED: a replay trained to other bits than the recording"; status=1
fi
bench=(--device cuda --mode full-capture --optimizer sgd --precision amp --model resnet18 --batch 128 --warmup 5
       --iters 20 --repetitions 3)
for round in 1 2; do
  for run in heuristic= replay="--conv-plans $plans"; do
    label=${run%%=*}_$round
    # shellcheck disable=SC2086
    timeout ${TR_T_PLANS:-300} "$BIN/tr-bench" "${bench[@]}" ${run#*=} --json "$OUT/conv_plans_bench_$label.json" \
      > "$OUT/conv_plans_bench_$label.log" 2>&1 || status=1
    note "conv plans: tr-bench resnet18 b128 full capture, $label:" \
      "$(grep -ho '"conv_plans_digest": "[0-9a-f]*"' "$OUT/conv_plans_bench_$label.json" 2>/dev/null)"
    grep "full-capture" "$OUT/conv_plans_bench_$label.log" | tee -a "$OUT/summary.txt"
  done
done
