#!/usr/bin/env bash
# Third call: the head kernel with channel vectors in its pool and routing steps.
set -x
SP=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$PWD/.device/lib:$SP/nvidia/cudnn/lib:$SP/nvidia/nccl/lib:$SP/nvidia/cublas/lib:$SP/nvidia/cu13/lib:$SP/nvidia/cuda_cupti/lib:$LD_LIBRARY_PATH
B=.device/bin
O=$OUT/h
mkdir -p $O
timeout 200 $B/tr_tests --gtest_filter='OpsGpu.ClassifierHead*:OpsGpu.FcMatchesCpu:OpsGpu.SoftmaxXent*:OpsGpu.Captured*:FusionGpu.*:GpuTraining.ModesAre*' > $O/tests.log 2>&1
echo rc=$? >> $O/tests.log
C="--device cuda --mode full-capture --precision amp --optimizer sgd"
for r in 1 2; do
  for v in new old; do
    bin=$B/tr-bench
    [ $v = old ] && bin=.device/old/tr-bench
    timeout 150 $bin $C --model cnn --batch 64,256,1024,4096 --warmup 10 --iters 30 --repetitions 5 --json $O/cnn_${v}_$r.json > $O/cnn_${v}_$r.log 2>&1
  done
done
timeout 120 $B/tr-bench $C --model cnn --batch 256,4096 --warmup 10 --iters 20 --repetitions 3 --top-kernels 100 --kernel-trace $O/trace_new.json > $O/trace_new.log 2>&1
timeout 120 .device/old/tr-bench $C --model cnn --batch 4096 --warmup 10 --iters 20 --repetitions 3 --top-kernels 100 > $O/trace_old.log 2>&1
gzip -f $O/trace_new.json
tar czf $OUT/head.tgz -C $OUT h
