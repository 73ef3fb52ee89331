#!/usr/bin/env bash
# Call 2 (the binaries of call 1: 0a6d4b5 against ca2bef5 in .device/old):
# resnet50 at 256 new against old again, alternating, two rounds, with their
# JSON; vgg16bn at 128; both beside torch.compile in the same call; the cnn at
# 64 and 256 new against old (it has no residual block: its default kernels
# must cost what they did); the new op beside the two it replaces
# (tr_bench_ops); resnet50's top kernels. Everything comes back in all.tgz.
# As run, the cnn's arguments were in a variable named CC, which
# torch.compile's inductor takes for the C compiler: both torch.compile runs
# failed (torch_*.log), so call 3 measured them. tr_bench_ops stopped at its
# time limit after two of its four cases (each case fills 822 MB of inputs on
# the host first).
SP=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$PWD/.device/lib:$SP/nvidia/cudnn/lib:$SP/nvidia/nccl/lib:$SP/nvidia/cublas/lib:$SP/nvidia/cu13/lib:$SP/nvidia/cuda_cupti/lib:$LD_LIBRARY_PATH
tar xzf .device/bins.tgz -C .device && B=.device/bin
PY=/opt/torch/.venv/bin/python
t0=$(date +%s); stamp() { echo "$1 at $(( $(date +%s) - t0 )) s" >> $OUT/r/times.txt; }
O=$OUT/r; mkdir -p $O
C="--device cuda --mode full-capture --precision amp --optimizer sgd --warmup 5 --iters 20 --repetitions 3"
CNN_ARGS="--device cuda --mode full-capture --precision amp --optimizer sgd --warmup 10 --iters 30 --repetitions 5"
for r in 1 2; do
  for v in new old; do
    bin=$B/tr-bench; [ $v = old ] && bin=.device/old/tr-bench
    timeout 100 $bin $C --model resnet50 --batch 256 --json $O/r50_${v}_$r.json > $O/r50_${v}_$r.log 2>&1
    timeout 60 $bin $CNN_ARGS --model cnn --batch 64,256 --json $O/cnn_${v}_$r.json > $O/cnn_${v}_$r.log 2>&1
  done
done
stamp "resnet50 and cnn A/B done"
timeout 200 $PY peers/torch_step.py --model resnet50 --batch 256 --mode full-capture --compile-largest --warmup 5 --iters 20 --repetitions 3 --json $O/torch_r50.json > $O/torch_r50.log 2>&1
timeout 200 $PY peers/torch_step.py --model vgg16bn --batch 128 --mode full-capture --compile-largest --warmup 5 --iters 20 --repetitions 3 --json $O/torch_vgg.json > $O/torch_vgg.log 2>&1
stamp "torch done"
for r in 1 2; do
  timeout 100 $B/tr-bench $C --model resnet50 --batch 256 --json $O/r50_new_after_torch_$r.json > $O/r50_new_after_torch_$r.log 2>&1
  timeout 100 $B/tr-bench $C --model vgg16bn --batch 128 --json $O/vgg_new_$r.json > $O/vgg_new_$r.log 2>&1
done
stamp "after torch done"
timeout 150 $B/tr_bench_ops --benchmark_filter='resnet50/b256/(relu_bwd_two_grads|bn_bwd_reduce_relu_grad|bn_relu_bwd_reduce|bn_relu_bwd_apply)/' --benchmark_min_time=0.05 --benchmark_repetitions=3 --benchmark_report_aggregates_only=true --benchmark_out=$O/ops.json --benchmark_out_format=json > $O/ops.log 2>&1
stamp "ops done (exit $?)"
timeout 100 $B/tr-bench $C --model resnet50 --batch 256 --top-kernels 25 > $O/top_r50_new.log 2>&1
timeout 100 .device/old/tr-bench $C --model resnet50 --batch 256 --top-kernels 25 > $O/top_r50_old.log 2>&1
stamp "top done"
for f in $O/r50_*.log $O/vgg_*.log $O/cnn_*.log; do printf "%-22s" $(basename $f .log); grep -hE "full-capture" $f | awk '{printf " %s ms (cv %s) %s/s", $6, $7, $8}'; echo; done > $O/summary.txt
tail -2 $O/torch_r50.log $O/torch_vgg.log >> $O/summary.txt
grep -E "mean|median" $O/ops.log | head -12 >> $O/summary.txt
cat $O/summary.txt $O/times.txt
tar czf $OUT/all.tgz -C $OUT r
