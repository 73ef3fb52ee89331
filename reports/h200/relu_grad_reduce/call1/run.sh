#!/usr/bin/env bash
# Call 1 (binaries of the ReLU-gradient-in-the-reduce work, against ca2bef5,
# the build before it, in .device/old): the GPU check's tests (its filter), the new op
# beside the two it replaces (tr_bench_ops), resnet50 at 256 and resnet18 at
# 128 new against old in alternating processes, two rounds, the top kernels of
# resnet50 with the new build, then torch.compile's resnet50 at 256.
SP=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$PWD/.device/lib:$SP/nvidia/cudnn/lib:$SP/nvidia/nccl/lib:$SP/nvidia/cublas/lib:$SP/nvidia/cu13/lib:$SP/nvidia/cuda_cupti/lib:$LD_LIBRARY_PATH
tar xzf .device/bins.tgz -C .device && B=.device/bin
t0=$(date +%s)
timeout 300 $B/tr_tests --gtest_filter='*-CpuTraining.*:ZooTraining.*:GradBuckets.*:TtaTask.*:DataParallel.*:AugmentTraining.*:Fusion.*:BnSync.*:TrBenchTtaCli.*:GradientsOverwritten.*:TrTrainCli.*:Nvtx.TrainRangesNestAsPhasesStepsAndGraphs' > $OUT/tests.log 2>&1
echo "tests rc $?" >> $OUT/tests.log
echo "tests done at $(( $(date +%s) - t0 )) s" >> $OUT/times.txt
O=$OUT/ab; mkdir -p $O
C="--device cuda --mode full-capture --precision amp --optimizer sgd --warmup 5 --iters 20 --repetitions 3"
for r in 1 2; do
  for v in new old; do
    bin=$B/tr-bench; [ $v = old ] && bin=.device/old/tr-bench
    timeout 100 $bin $C --model resnet50 --batch 256 --json $O/r50_${v}_$r.json > $O/r50_${v}_$r.log 2>&1
    timeout 60 $bin $C --model resnet18 --batch 128 > $O/r18_${v}_$r.log 2>&1
  done
done
echo "ab done at $(( $(date +%s) - t0 )) s" >> $OUT/times.txt
timeout 60 $B/tr_bench_ops --benchmark_filter='resnet50/b256/(relu_bwd_two_grads|bn_bwd_reduce_relu_grad|bn_relu_bwd_reduce|bn_relu_bwd_apply)/' --benchmark_repetitions=3 --benchmark_report_aggregates_only=true > $OUT/ops.log 2>&1
timeout 100 $B/tr-bench $C --model resnet50 --batch 256 --top-kernels 25 > $O/top_r50_new.log 2>&1
echo "ops, top done at $(( $(date +%s) - t0 )) s" >> $OUT/times.txt
for f in $O/r*_*.log; do printf "%-12s" $(basename $f .log); grep -hE "full-capture" $f | awk '{printf " %s ms (cv %s) %s/s", $6, $7, $8}'; echo; done > $OUT/summary.txt
cat $OUT/summary.txt $OUT/times.txt; grep -E "^\[  (PASSED|FAILED)|tests rc|relu grad\].*grid sync" $OUT/tests.log | head -30
PY=/opt/torch/.venv/bin/python
timeout 170 $PY peers/torch_step.py --model resnet50 --batch 256 --mode full-capture --compile-largest --warmup 5 --iters 20 --repetitions 3 --json $O/torch_r50.json > $O/torch_r50.log 2>&1
echo "torch done at $(( $(date +%s) - t0 )) s" >> $OUT/times.txt
tail -4 $O/torch_r50.log; cat $OUT/times.txt
