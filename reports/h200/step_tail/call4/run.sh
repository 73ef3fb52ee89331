#!/usr/bin/env bash
# Verification of the last commits' GPU code (op checks, head tests), where a
# step's time goes (--top-kernels), and resnet50 at 256 against c5935ee.
SP=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$PWD/.device/lib:$SP/nvidia/cudnn/lib:$SP/nvidia/nccl/lib:$SP/nvidia/cublas/lib:$SP/nvidia/cu13/lib:$SP/nvidia/cuda_cupti/lib:$LD_LIBRARY_PATH
O=$OUT/v4; mkdir -p $O
B=.device/bin
timeout 300 $B/tr_tests --gtest_filter='OpsGpu*:RangeOps*:FusionGpu.*:GpuTraining.*:ZooGpu.ModesAre*:StepGraphs.*' > $O/tests.log 2>&1
echo "tests rc=$?" >> $O/tests.log
timeout 100 $B/tr-bench --device cuda --mode full-capture --model cnn --batch 256,4096 --precision amp --optimizer sgd --warmup 10 --iters 30 --repetitions 3 --top-kernels 40 > $O/top_cnn.log 2>&1
timeout 120 $B/tr-bench --device cuda --mode full-capture --model resnet50 --batch 256 --precision amp --optimizer sgd --warmup 5 --iters 20 --repetitions 3 --top-kernels 15 > $O/top_resnet50.log 2>&1
for r in 1 2; do
  for v in new old; do
    bin=$B/tr-bench; [ $v = old ] && bin=.device/old/tr-bench
    timeout 120 $bin --device cuda --mode full-capture --precision amp --optimizer sgd --warmup 5 --iters 20 --repetitions 3 --model resnet50 --batch 256 --json $O/r50_${v}_$r.json > $O/r50_${v}_$r.log 2>&1
  done
done
gzip -f $O/*.json
tar czf $OUT/v4.tgz -C $OUT v4
grep -E "^\[  (PASSED|FAILED)|^\[  FAILED|tests rc" $O/tests.log | head -10
grep -E "full-capture" $O/top_cnn.log $O/top_resnet50.log | head
for f in $O/r50_*.log; do echo "== $f"; grep -E "full-capture" $f | head -2; done
