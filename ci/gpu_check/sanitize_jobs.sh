#!/usr/bin/env bash
# The sanitize part's runs, one a line: NAME TOOL PROGRAM ARGS... for every tool
# of TR_SAN_TOOLS and model of TR_SAN_MODELS (ci/gpu_check/sanitize.sh says
# which cases and why). The slowest tools and models come first, so that the
# parallel runs finish close together.
set -euo pipefail
for tool in $TR_SAN_TOOLS; do
  # racecheck and synccheck cost minutes a run (every shared-memory access of every kernel is tracked): one
  # training step, which runs every kernel a step has, and a short validation; the others two steps.
  steps=2
  [[ $tool == racecheck || $tool == synccheck ]] && steps=1
  # A batch of 32 images, or 16 windows of 128 tokens. racecheck tracks every shared-memory access of every
  # kernel, cuBLAS's and cuDNN's too (sanitize_one.sh says why it takes no filter): at those sizes one gpt2-d6
  # run took over 200 s alone on an H100, and resnet18's and resnet50's did not end within 390 s six at a time.
  # Its model runs are smaller: 8 images (a quarter), or 4 windows of 64 tokens (an eighth of the tokens): the
  # same kernels at the same widths and head size, row loops with tails, a fraction of the accesses. The op
  # table's run keeps its shapes.
  images=32 windows=16 seq=128
  [[ $tool == racecheck ]] && images=8 windows=4 seq=64
  for m in $TR_SAN_MODELS; do
    subsets="--train-subset $((images * steps)) --val-subset $((images / 2 * steps)) --batch $images --epochs 1"
    case $m in
      mlp) size="--synthetic $subsets" ;;
      cnn) size="--synthetic $subsets --width 0.25" ;;
      resnet18|resnet50|vgg16bn) size="--synthetic $subsets --width 0.125 --image-size 32" ;;
      gpt2-d6)
        size="--synthetic --seq $seq --train-subset $((windows * steps)) --val-subset $((windows / 2 * steps))"
        size+=" --batch $windows --epochs 1" ;;
      *) echo "sanitize_jobs.sh: unknown model '$m'" >&2; exit 2 ;;
    esac
    run="tr-train --device cuda --model $m $size"
    for p in fp32 amp bf16; do
      echo "${tool}_${m}_full-capture_$p $tool $run --mode full-capture --precision $p --side-streams"
    done
    for mode in eager partial-capture; do
      echo "${tool}_${m}_${mode}_amp $tool $run --mode $mode --precision amp"
    done
    echo "${tool}_${m}_full-capture_amp_no-pdl $tool $run --mode full-capture --precision amp --no-pdl"
    case $m in
      cnn|resnet18|resnet50|vgg16bn)
        echo "${tool}_${m}_full-capture_amp_grid-sync $tool $run --mode full-capture --precision amp --grid-sync" ;;
    esac
  done
  # Every op's kernels at the op table's shapes, in every dtype it has (the op table's GPU test, all cases:
  # under racecheck about 25 s on an H100).
  echo "${tool}_ops_table $tool ops all"
done | awk '{ w = ($2 == "racecheck" || $2 == "memcheck") ? 0 : 1; m = ($0 ~ /resnet50|vgg16bn|gpt2/) ? 0 : 1
              print w m "\t" NR "\t" $0 }' | sort -k1,1 -k2,2n | cut -f3-
