#!/usr/bin/env bash
# Call 2: an experiment build (not kept) of 7cac026 plus two environment
# knobs: TR_EXP_COOP, which one-kernel BatchNorms run cooperatively (1 the
# forward's BnStats + BnReluApply, 2 the pool's, 4 the backward's; 0 none, but
# the sums still finished behind a grid barrier), and TR_EXP_BPS, the blocks
# per SM of the statistics' and the reduce's grids (4 shipped). "nosync" is
# --no-grid-sync (the kernels apart). cnn at 64, 256 and 1024 and resnet18 at
# 128, full capture, AMP, SGD; two rounds, alternating processes.
SP=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$PWD/.device/lib:$SP/nvidia/cudnn/lib:$SP/nvidia/nccl/lib:$SP/nvidia/cublas/lib:$SP/nvidia/cu13/lib:$SP/nvidia/cuda_cupti/lib:$LD_LIBRARY_PATH
B=.device/bin
O=$OUT/c2; mkdir -p $O
C="--device cuda --mode full-capture --precision amp --optimizer sgd --warmup 10 --iters 30 --repetitions 5"
for r in 1 2; do
  for v in "7 4" "7 2" "3 4" "4 4" "0 4" "nosync 4" "nosync 2" "1 4" "2 4"; do
    set -- $v; f=""; m=$1; [ $m = nosync ] && { f="--no-grid-sync"; m=7; }
    tag="${1}_$2"
    TR_EXP_COOP=$m TR_EXP_BPS=$2 timeout 60 $B/tr-bench $C $f --model cnn --batch 64,256,1024 > $O/cnn_${tag}_$r.log 2>&1
    TR_EXP_COOP=$m TR_EXP_BPS=$2 timeout 60 $B/tr-bench --device cuda --mode full-capture --precision amp --optimizer sgd --warmup 5 --iters 20 --repetitions 3 $f --model resnet18 --batch 128 > $O/r18_${tag}_$r.log 2>&1
  done
done
