#!/usr/bin/env bash
# Call 1 (binaries of f5aa9e1: grid sync on by default, flag --no-grid-sync):
# the GPU tests of the grid-synced sums and the one-kernel BatchNorms, the cnn
# and resnet18 with and without grid sync (alternating processes), and a
# kernel trace of the cnn with grid sync.
SP=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$PWD/.device/lib:$SP/nvidia/cudnn/lib:$SP/nvidia/nccl/lib:$SP/nvidia/cublas/lib:$SP/nvidia/cu13/lib:$SP/nvidia/cuda_cupti/lib:$LD_LIBRARY_PATH
B=.device/bin
O=$OUT/c1; mkdir -p $O
timeout 240 $B/tr_tests --gtest_filter='OpsGpuGridSync.*:OpsGpuOneKernel.*:OpsGpuBn.*:OpsGpuPool.*:FusionGpu.*' > $O/tests_ops.log 2>&1; echo "tests_ops rc=$?" >> $O/tests_ops.log
C="--device cuda --mode full-capture --precision amp --optimizer sgd --warmup 10 --iters 30 --repetitions 5"
for r in 1 2; do
  for v in sync nosync; do
    f=""; [ $v = nosync ] && f="--no-grid-sync"
    timeout 100 $B/tr-bench $C $f --model cnn --batch 64,256,1024,4096 --json $O/cnn_${v}_$r.json > $O/cnn_${v}_$r.log 2>&1
    timeout 100 $B/tr-bench --device cuda --mode full-capture --precision amp --optimizer sgd --warmup 5 --iters 20 --repetitions 3 $f --model resnet18 --batch 128 --json $O/r18_${v}_$r.json > $O/r18_${v}_$r.log 2>&1
  done
done
timeout 100 $B/tr-bench --device cuda --mode full-capture --precision amp --optimizer sgd --model cnn --batch 256,4096 --warmup 10 --iters 20 --repetitions 3 --kernel-trace $O/trace.json > $O/trace.log 2>&1
timeout 150 $B/tr_tests --gtest_filter='*Gpu*:-OpsGpuGridSync.*:OpsGpuOneKernel.*:OpsGpuBn.*:OpsGpuPool.*:FusionGpu.*:Nvtx.TrainRangesNestAsPhasesStepsAndGraphs' > $O/tests_rest.log 2>&1; echo "tests_rest rc=$?" >> $O/tests_rest.log
