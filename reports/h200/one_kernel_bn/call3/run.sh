#!/usr/bin/env bash
# Call 3 (binaries of f09da23, the shipped code: grid sync off by default,
# --grid-sync turns it on): the GPU check's bench part (kept in
# ../../gpu_check/) and tests part, then the cnn and resnet18 with and without
# --grid-sync in alternating processes, and kernel traces of the cnn both ways.
SP=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$PWD/.device/lib:$SP/nvidia/cudnn/lib:$SP/nvidia/nccl/lib:$SP/nvidia/cublas/lib:$SP/nvidia/cu13/lib:$SP/nvidia/cuda_cupti/lib:$LD_LIBRARY_PATH
TR_CHECK_PARTS=bench OUT=$OUT/check bash ci/gpu_check.sh > $OUT/check_call.log 2>&1
TR_CHECK_PARTS=tests TR_TEST_FILTER='*-CpuTraining.*:ZooTraining.*:GradBuckets.*:TtaTask.*:DataParallel.*:AugmentTraining.*:Fusion.*:BnSync.*:TrBenchTtaCli.*:GradientsOverwritten.*:TrTrainCli.*:Nvtx.TrainRangesNestAsPhasesStepsAndGraphs' OUT=$OUT/tests bash ci/gpu_check.sh > $OUT/tests_call.log 2>&1
O=$OUT/ab; mkdir -p $O
B=.device/bin
C="--device cuda --mode full-capture --precision amp --optimizer sgd --warmup 10 --iters 30 --repetitions 5"
for r in 1 2; do
  for v in default gridsync; do
    f=""; [ $v = gridsync ] && f="--grid-sync"
    timeout 100 $B/tr-bench $C $f --model cnn --batch 64,256,1024,4096 --json $O/cnn_${v}_$r.json > $O/cnn_${v}_$r.log 2>&1
    timeout 100 $B/tr-bench --device cuda --mode full-capture --precision amp --optimizer sgd --warmup 5 --iters 20 --repetitions 3 $f --model resnet18 --batch 128 --json $O/r18_${v}_$r.json > $O/r18_${v}_$r.log 2>&1
  done
done
for v in default gridsync; do
  f=""; [ $v = gridsync ] && f="--grid-sync"
  timeout 100 $B/tr-bench --device cuda --mode full-capture --precision amp --optimizer sgd --model cnn --batch 256,4096 --warmup 10 --iters 20 --repetitions 3 $f --kernel-trace $O/trace_$v.json > $O/trace_$v.log 2>&1
done
