#!/usr/bin/env bash
# resnet50 at 256 and vgg16bn at 128 on the code of 2026-12-05 (binaries of
# 2874a82), tr before and after
# torch.compile in the same call, and
# the cnn at 256 by default and with --grid-sync in alternating processes.
SP=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$PWD/.device/lib:$SP/nvidia/cudnn/lib:$SP/nvidia/nccl/lib:$SP/nvidia/cublas/lib:$SP/nvidia/cu13/lib:$SP/nvidia/cuda_cupti/lib:$LD_LIBRARY_PATH
tar xzf .device/bins.tgz -C .device && B=.device/bin
PY=/opt/torch/.venv/bin/python
O=$OUT/r; mkdir -p $O
t0=$(date +%s); stamp() { echo "$1 at $(( $(date +%s) - t0 )) s" >> $O/times.txt; }
TRARGS="--device cuda --mode full-capture --precision amp --optimizer sgd --warmup 5 --iters 20 --repetitions 3"
timeout 100 $B/tr-bench $TRARGS --model resnet50 --batch 256 --json $O/tr_r50_1.json > $O/tr_r50_1.log 2>&1
timeout 100 $B/tr-bench $TRARGS --model vgg16bn --batch 128 --json $O/tr_vgg_1.json > $O/tr_vgg_1.log 2>&1
stamp "tr 1 done"
timeout 200 $PY peers/torch_step.py --model resnet50 --batch 256 --mode full-capture --compile-largest --warmup 5 --iters 20 --repetitions 3 --json $O/torch_r50.json > $O/torch_r50.log 2>&1
timeout 200 $PY peers/torch_step.py --model vgg16bn --batch 128 --mode full-capture --compile-largest --warmup 5 --iters 20 --repetitions 3 --json $O/torch_vgg.json > $O/torch_vgg.log 2>&1
stamp "torch done"
timeout 100 $B/tr-bench $TRARGS --model resnet50 --batch 256 --json $O/tr_r50_2.json > $O/tr_r50_2.log 2>&1
timeout 100 $B/tr-bench $TRARGS --model vgg16bn --batch 128 --json $O/tr_vgg_2.json > $O/tr_vgg_2.log 2>&1
stamp "tr 2 done"
for r in 1 2; do
  timeout 60 $B/tr-bench $TRARGS --model cnn --batch 256 --top-kernels 1 --json $O/tr_cnn_$r.json > $O/tr_cnn_$r.log 2>&1
  timeout 60 $B/tr-bench $TRARGS --model cnn --batch 256 --top-kernels 1 --grid-sync --json $O/tr_cnn_gs_$r.json > $O/tr_cnn_gs_$r.log 2>&1
done
stamp "cnn done"
for f in $O/tr_*.log; do printf "%-12s" $(basename $f .log); grep -hE "full-capture" $f | head -1 | awk '{printf " %s ms (cv %s) %s/s busy %s", $6, $7, $8, $NF}'; grep -ho "in [0-9]* kernels" $f | head -1; echo; done > $O/summary.txt
for f in $O/torch_*.log; do grep -hE "full-capture|torch-compile" $f; done >> $O/summary.txt
cat $O/summary.txt; cat $O/times.txt
tar czf $OUT/all.tgz -C $OUT r
