#!/usr/bin/env bash
SP=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$PWD/.device/lib:$SP/nvidia/cudnn/lib:$SP/nvidia/nccl/lib:$SP/nvidia/cublas/lib:$SP/nvidia/cu13/lib:$SP/nvidia/cuda_cupti/lib:$LD_LIBRARY_PATH
O=$OUT/tail; mkdir -p $O
B=.device/bin
timeout 300 $B/tr_tests --gtest_filter='RangeOpsGpu*:FusionGpu.*:GpuTraining.*:GradientsOverwrittenGpu.*:ZooGpu.ModesAre*:StepGraphs.*:MemsetNodes*:AmpGpu*:*Skip*:*Overflow*' > $O/tests.log 2>&1
echo "tests rc=$?" >> $O/tests.log
timeout 100 $B/tr-bench --device cuda --mode full-capture --precision amp --optimizer sgd --model cnn --batch 256,4096 --warmup 10 --iters 20 --repetitions 3 --kernel-trace $O/trace.json > $O/trace.log 2>&1
timeout 120 $B/tr-bench --device cuda --mode full-capture --precision amp --optimizer sgd --warmup 10 --iters 30 --repetitions 5 --model cnn --batch 64,256,1024,4096 --json $O/cnn.json > $O/cnn.log 2>&1
gzip -f $O/*.json
tar czf $OUT/tail.tgz -C $OUT tail
grep -E "^\[ fusion gpu|^\[ modes|^\[ zoo modes|^\[ gradients|^\[  (PASSED|FAILED|SKIPPED)|tests rc|Failure" $O/tests.log | head -40
tail -6 $O/trace.log; tail -6 $O/cnn.log
