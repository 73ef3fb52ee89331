# ci/gpu_check.sh's `sanitize` part (sourced by it, with its helpers and variables).
# compute-sanitizer on short runs of every model in every mode: memcheck with
# leak checking and initcheck on 64 synthetic images (zoo models at 1/8 width,
# 32x32), synccheck and racecheck on sizes they finish (mlp, cnn at 1/4 width,
# 128 images); gpt2-d6 under every tool at full width in AMP and in bf16
# (gpt2-d6-bf16: the tensor-core attention in either type) on 32 windows of
# 128 tokens; and the op table's sequence-model cases under each tool.
# TR_SAN_TOOLS picks tools, TR_SAN_MODELS models (each part of a
# 10-minute call). A tool's "ERROR SUMMARY" line goes to the summary; any
# error fails the check.
CS=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null || true)
if [ -z "$CS" ]; then
  note "compute-sanitizer not found: sanitize part skipped"
else
  san() {  # san TOOL LOG ARGS...: tr-train under one tool
    local tool=$1 log=$2; shift 2
    local extra=()
    [ "$tool" = memcheck ] && extra=(--leak-check full)
    timeout ${TR_T_SAN:-300} "$CS" --tool "$tool" "${extra[@]}" --error-exitcode 9 "$BIN/tr-train" --device cuda \
      "$@" > "$OUT/$log" 2>&1
    local rc=$?
    [ $rc -ne 0 ] && status=1
    # memcheck adds a LEAK SUMMARY, racecheck says RACECHECK SUMMARY instead.
    note "compute-sanitizer $tool $* (exit $rc): $(grep -E 'ERROR SUMMARY|LEAK SUMMARY|RACECHECK SUMMARY' "$OUT/$log" | sed 's/^========= //' | paste -sd';' -)"
  }
  for tool in ${TR_SAN_TOOLS:-memcheck initcheck synccheck racecheck}; do
    for m in ${TR_SAN_MODELS:-mlp cnn resnet18 resnet50 vgg16bn gpt2-d6 gpt2-d6-bf16}; do
      size=(--synthetic --train-subset 64 --val-subset 32 --batch 32 --epochs 1)
      case $m in
        resnet18|resnet50|vgg16bn) size+=(--width 0.125 --image-size 32) ;;
        cnn) size+=(--width 0.25) ;;
        gpt2-d6) size=(--synthetic --seq 128 --amp --train-subset 32 --val-subset 16 --batch 16 --epochs 1) ;;
        gpt2-d6-bf16) size=(--synthetic --seq 128 --precision bf16 --train-subset 32 --val-subset 16 --batch 16 --epochs 1) ;;
      esac
      if [ "${m%-bf16}" != gpt2-d6 ] && { [ "$tool" = synccheck ] || [ "$tool" = racecheck ]; }; then
        [ "$m" = mlp ] || [ "$m" = cnn ] || continue
        size=(--synthetic --train-subset 128 --val-subset 32 --batch 64 --epochs 1)
        [ "$m" = cnn ] && size+=(--width 0.25)
      fi
      for mode in eager partial-capture full-capture; do
        san "$tool" "san_${tool}_${m}_${mode}.log" --model "${m%-bf16}" --mode "$mode" "${size[@]}"
      done
    done
    # The sequence models' kernels in every dtype and shape the op table has: its
    # attention, token and per-token loss cases (TR_OP_CASES picks them).
    for cases in attention token_prep "per token"; do
      log="san_${tool}_ops_${cases// /_}.log"
      TR_OP_CASES="$cases" timeout ${TR_T_SAN:-300} "$CS" --tool "$tool" --error-exitcode 9 "$BIN/tr_tests" \
        --gtest_filter=OpsGpu.OpTableEveryCaseMatchesTheCpu > "$OUT/$log" 2>&1
      rc=$?
      [ $rc -ne 0 ] && status=1
      note "compute-sanitizer $tool op table '$cases' (exit $rc): $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/$log" | sed 's/^========= //' | paste -sd';' -)"
    done
  done
fi
