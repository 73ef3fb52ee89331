#!/usr/bin/env bash
# The final commit's GPU tests: training, fusion, modes, poisoned gradients,
# range ops, step graphs (warm-up and capture with the check's new home).
SP=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$PWD/.device/lib:$SP/nvidia/cudnn/lib:$SP/nvidia/nccl/lib:$SP/nvidia/cublas/lib:$SP/nvidia/cu13/lib:$SP/nvidia/cuda_cupti/lib:$LD_LIBRARY_PATH
O=$OUT/final; mkdir -p $O
timeout 400 .device/bin/tr_tests --gtest_filter='GpuTraining.*:FusionGpu.*:ZooGpu.ModesAre*:GradientsOverwrittenGpu.*:RangeOps*:StepGraphs.*:OpsGpu.Classifier*:OpsGpu.Fc*:OpsGpu.Bn*' > $O/tests.log 2>&1
echo "tests rc=$?" >> $O/tests.log
timeout 60 .device/bin/tr-bench --device cuda --mode full-capture --precision amp --optimizer sgd --model cnn,mlp --warmup 10 --iters 30 --repetitions 3 > $O/bench.log 2>&1
tar czf $OUT/final.tgz -C $OUT final
grep -E "^\[  (PASSED|FAILED)|^\[  FAILED|tests rc" $O/tests.log | head
grep -E "full-capture" $O/bench.log
