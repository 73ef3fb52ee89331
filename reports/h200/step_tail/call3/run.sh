#!/usr/bin/env bash
# One call: the GPU check's bench part, then its tests part, then this build
# against c5935ee (A/B, alternating processes) and a kernel trace.
SP=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$PWD/.device/lib:$SP/nvidia/cudnn/lib:$SP/nvidia/nccl/lib:$SP/nvidia/cublas/lib:$SP/nvidia/cu13/lib:$SP/nvidia/cuda_cupti/lib:$LD_LIBRARY_PATH
TR_CHECK_PARTS=bench OUT=$OUT/check bash ci/gpu_check.sh > $OUT/check_call.log 2>&1
TR_CHECK_PARTS=tests TR_TEST_FILTER='*-CpuTraining.*:ZooTraining.*:GradBuckets.*:TtaTask.*:DataParallel.*:AugmentTraining.*:Fusion.*:BnSync.*:TrBenchTtaCli.*:GradientsOverwritten.*:TrTrainCli.*' OUT=$OUT/tests bash ci/gpu_check.sh > $OUT/tests_call.log 2>&1
O=$OUT/ab; mkdir -p $O
B=.device/bin
C="--device cuda --mode full-capture --precision amp --optimizer sgd --warmup 10 --iters 30 --repetitions 5"
for r in 1 2; do
  for v in new old; do
    bin=$B/tr-bench; [ $v = old ] && bin=.device/old/tr-bench
    timeout 100 $bin $C --model cnn --batch 64,256,1024,4096 --json $O/cnn_${v}_$r.json > $O/cnn_${v}_$r.log 2>&1
    timeout 100 $bin --device cuda --mode full-capture --precision amp --optimizer sgd --warmup 5 --iters 20 --repetitions 3 --model resnet18 --batch 128 --json $O/r18_${v}_$r.json > $O/r18_${v}_$r.log 2>&1
  done
done
timeout 100 $B/tr-bench --device cuda --mode full-capture --precision amp --optimizer sgd --model cnn --batch 256,4096 --warmup 10 --iters 20 --repetitions 3 --kernel-trace $O/trace.json > $O/trace.log 2>&1
gzip -f $O/*.json
tar czf $OUT/all.tgz -C $OUT check tests ab check_call.log tests_call.log
tail -25 $OUT/check_call.log
grep -E "^\[  (PASSED|FAILED)|^\[  FAILED|tests rc|passed|failed" $OUT/tests_call.log | head -20
grep -h -E "^\[ head \+ bn|^\[ fusion gpu \] cnn" $OUT/tests/detail/*.log 2>/dev/null | head -16
for f in $O/cnn_*.log $O/r18_*.log; do echo "== $f"; grep -E "full-capture" $f | head -4; done
tail -3 $O/trace.log
