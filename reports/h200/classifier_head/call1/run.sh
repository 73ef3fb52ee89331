#!/usr/bin/env bash
# One device call: GPU tests of the head fusion, then the new build against the
# shipped one (alternating processes), a kernel trace, and the PyTorch peer.
set -x
SP=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$PWD/.device/lib:$SP/nvidia/cudnn/lib:$SP/nvidia/nccl/lib:$SP/nvidia/cublas/lib:$SP/nvidia/cu13/lib:$SP/nvidia/cuda_cupti/lib:$LD_LIBRARY_PATH
B=.device/bin
O=$OUT/h
mkdir -p $O
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $O/nvidia-smi.csv 2>&1
timeout 240 $B/tr_tests --gtest_filter='OpsGpu.*:FusionGpu.*:GpuTraining.*:ZooGpu.ModesAre*:MemsetNodes*:PdlGpu*' > $O/tests.log 2>&1
echo rc=$? >> $O/tests.log
C="--device cuda --mode full-capture --precision amp --optimizer sgd"
for r in 1 2; do
  for v in new old; do
    bin=$B/tr-bench
    [ $v = old ] && bin=.device/old/tr-bench
    timeout 150 $bin $C --model cnn --batch 64,256,1024,4096 --warmup 10 --iters 30 --repetitions 5 --json $O/cnn_${v}_$r.json > $O/cnn_${v}_$r.log 2>&1
    timeout 100 $bin $C --model resnet18 --batch 128 --warmup 5 --iters 20 --repetitions 3 --json $O/r18_${v}_$r.json > $O/r18_${v}_$r.log 2>&1
  done
done
timeout 120 $B/tr-bench $C --model cnn --batch 64,256 --warmup 10 --iters 20 --repetitions 3 --top-kernels 100 --kernel-trace $O/trace_new.json > $O/trace_new.log 2>&1
gzip -f $O/trace_new.json
timeout 200 /opt/torch/.venv/bin/python peers/torch_step.py --model cnn --json $O/torch_cnn.json > $O/torch_cnn.log 2>&1
tar czf $OUT/head.tgz -C $OUT h
