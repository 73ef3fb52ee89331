#!/usr/bin/env bash
SP=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$PWD/.device/lib:$SP/nvidia/cudnn/lib:$SP/nvidia/nccl/lib:$SP/nvidia/cublas/lib:$SP/nvidia/cu13/lib:$SP/nvidia/cuda_cupti/lib:$LD_LIBRARY_PATH
O=$OUT/tail2; mkdir -p $O
B=.device/bin
timeout 300 $B/tr_tests --gtest_filter='RangeOps*:FusionGpu.*:GpuTraining.*:GradientsOverwrittenGpu.*:ZooGpu.ModesAre*:StepGraphs.*:MemsetNodes*:OpsGpu.Fc*:*ClassifierHead*' > $O/tests.log 2>&1
echo "tests rc=$?" >> $O/tests.log
timeout 100 $B/tr-bench --device cuda --mode full-capture --precision amp --optimizer sgd --model cnn --batch 256,4096 --warmup 10 --iters 20 --repetitions 3 --kernel-trace $O/trace.json > $O/trace.log 2>&1
C="--device cuda --mode full-capture --precision amp --optimizer sgd --warmup 10 --iters 30 --repetitions 5"
for r in 1 2; do
  for v in new old; do
    bin=$B/tr-bench; [ $v = old ] && bin=.device/old/tr-bench
    timeout 100 $bin $C --model cnn --batch 64,256,1024,4096 --json $O/cnn_${v}_$r.json > $O/cnn_${v}_$r.log 2>&1
    timeout 100 $bin --device cuda --mode full-capture --precision amp --optimizer sgd --warmup 5 --iters 20 --repetitions 3 --model resnet18 --batch 128 --json $O/r18_${v}_$r.json > $O/r18_${v}_$r.log 2>&1
  done
done
gzip -f $O/*.json
tar czf $OUT/tail2.tgz -C $OUT tail2
grep -E "^\[ fusion gpu|^\[ optimizer tail|^\[  (PASSED|FAILED|SKIPPED)|tests rc|Failure" $O/tests.log | head -30
tail -3 $O/trace.log
for f in $O/cnn_*.log $O/r18_*.log; do echo "== $f"; grep -E "full-capture" $f | head -4; done
