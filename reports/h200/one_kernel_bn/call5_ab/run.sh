#!/usr/bin/env bash
# Call 5: this build (f09da23's binaries, grid sync off) against 0245232 (the
# build before this work), alternating processes, two rounds: resnet50 at
# 256 and resnet18 at 128 (3 x 20 steps), the cnn at 256 (5 x 30).
SP=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$PWD/.device/lib:$SP/nvidia/cudnn/lib:$SP/nvidia/nccl/lib:$SP/nvidia/cublas/lib:$SP/nvidia/cu13/lib:$SP/nvidia/cuda_cupti/lib:$LD_LIBRARY_PATH
O=$OUT/ab; mkdir -p $O
C="--device cuda --mode full-capture --precision amp --optimizer sgd"
for r in 1 2; do
  for v in new old; do
    bin=.device/bin/tr-bench; [ $v = old ] && bin=.device/old/tr-bench
    timeout 100 $bin $C --warmup 5 --iters 20 --repetitions 3 --model resnet50 --batch 256 > $O/r50_${v}_$r.log 2>&1
    timeout 100 $bin $C --warmup 5 --iters 20 --repetitions 3 --model resnet18 --batch 128 > $O/r18_${v}_$r.log 2>&1
    timeout 100 $bin $C --warmup 10 --iters 30 --repetitions 5 --model cnn --batch 256 > $O/cnn_${v}_$r.log 2>&1
  done
done
for m in r50 r18 cnn; do
  for v in new old; do printf "%-4s %-4s" $m $v; for r in 1 2; do grep -hE "full-capture" $O/${m}_${v}_$r.log | awk '{printf " %s (cv %s)", $6, $7}'; done; echo; done
done
