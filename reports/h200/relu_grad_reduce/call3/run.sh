#!/usr/bin/env bash
# Call 3 (the binaries of calls 1 and 2: 0a6d4b5): resnet50 at 256 and vgg16bn
# at 128 beside torch.compile in the same call (tr before and after it), then
# the new op beside ReluBwd of two gradients (tr_bench_ops, one repetition).
# Everything comes back in all.tgz.
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
for f in $O/tr_*.log; do printf "%-12s" $(basename $f .log); grep -hE "full-capture" $f | awk '{printf " %s ms (cv %s) %s/s", $6, $7, $8}'; echo; done > $O/summary.txt
for f in $O/torch_*.log; do grep -hE "full-capture|torch-compile" $f; done >> $O/summary.txt
cat $O/summary.txt
tar czf $OUT/all.tgz -C $OUT r
timeout 200 $B/tr_bench_ops --benchmark_filter='resnet50/b256/(relu_bwd_two_grads|bn_bwd_reduce_relu_grad)/' --benchmark_min_time=0.05 > $O/ops.log 2>&1
stamp "ops done (exit $?)"
cat $O/ops.log | tail -4; cat $O/times.txt
tar czf $OUT/all.tgz -C $OUT r
