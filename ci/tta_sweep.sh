#!/usr/bin/env bash
# The recipe search behind the models' time-to-accuracy recipes (docs/design.md,
# "Time-to-accuracy recipes"): tr-bench tta over a grid of settings, 2 seeds each, on the GPU.
# Each line of $OUT/sweep.txt is one setting's summary. Run on the GPU machine
# after ci/pack_device.sh (TR_PACK_SKIP="tr_bench_ops tr_tests").
#   TR_SWEEP="cnn mlp resnet18 gpt2-d6" selects the models of the built-in grid (gpt2-d6 on
#   tr-data's text shards, DATA/text; a high --target-loss keeps every run to its end);
#   ci/tta_sweep.sh FILE runs FILE's settings instead, one line of flags each.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/sweep-out}
mkdir -p "$OUT"
BIN=build/bin
[ -d .device/bin ] && BIN=.device/bin
DATA=${TR_DATA_DIR:-/usr/share/datasets/fashion-mnist}
[ -d .device/data ] && DATA=$PWD/.device/data
SP=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH="$PWD/.device/lib:$SP/nvidia/cudnn/lib:$SP/nvidia/nccl/lib:$SP/nvidia/cublas/lib:$SP/nvidia/cu13/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
SEEDS=${TR_SWEEP_SEEDS:-2}
one() {  # one setting: tr-bench tta --model M FLAGS...
  local tag; tag=$(echo "$*" | tr -c 'a-zA-Z0-9.\n' '_')
  local runs=(--runs "$SEEDS")
  [[ " $* " == *" --runs "* ]] && runs=()
  local data=$DATA
  [[ " $* " == *" --model gpt2-d6 "* ]] && data=$DATA/text
  timeout "${TR_SWEEP_TIMEOUT:-120}" "$BIN/tr-bench" tta --device cuda --data-dir "$data" "${runs[@]}" "$@" \
    > "$OUT/$tag.log" 2>&1
  echo "$* :: $(grep -E '^(time to|final accuracy|final validation loss)' "$OUT/$tag.log" | tr '\n' ' ' | cut -c1-260)" |
    tee -a "$OUT/sweep.txt"
}
if (($# == 1)); then
  while read -r line; do [ -n "$line" ] && one $line; done < "$1"
  exit 0
fi
for m in ${TR_SWEEP:-cnn mlp}; do
  case $m in
    cnn)
      one --model cnn
      for e in 6 10; do one --model cnn --epochs $e; done
      for b in 256 1024; do one --model cnn --batch $b; done
      for lr in 0.1 0.4; do one --model cnn --lr $lr; done
      one --model cnn --translate 0
      one --model cnn --translate 1
      one --model cnn --no-augment
      one --model cnn --tta none
      one --model cnn --cutout 8
      one --model cnn --label-smoothing 0.2
      one --model cnn --eval ema
      one --model cnn --epochs 10 --batch 1024 --lr 0.4
      ;;
    mlp)
      one --model mlp
      for e in 6 15; do one --model mlp --epochs $e; done
      for b in 500 1000; do one --model mlp --batch $b; done
      one --model mlp --lr 2e-3
      one --model mlp --batch 1000 --lr 3e-3
      one --model mlp --no-augment
      one --model mlp --translate 1
      one --model mlp --tta none
      one --model mlp --eval ema
      ;;
    resnet18)
      one --model resnet18
      ;;
    gpt2-d6)  # the loss curve of each setting: its validations every 250 steps are in its log
      t="--model gpt2-d6 --target-loss 0.01"
      one $t
      for lr in 1e-3 4e-3; do one $t --lr $lr; done
      for e in 1 3; do one $t --epochs $e; done
      one $t --batch 64 --lr 3e-3
      one $t --schedule linear
      ;;
  esac
done
