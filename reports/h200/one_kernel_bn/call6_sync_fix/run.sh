#!/usr/bin/env bash
# Call 6 (binaries of a625c56: 92c6c13 put the sums' grid-sync code only in the kernels
# launched cooperatively): the op and fusion GPU tests that cover the
# BatchNorm and pool kernels, then the cnn at 64 and 256 against 0245232 (the
# build before the one-kernel work), alternating processes, two rounds, and
# once with --grid-sync.
SP=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$PWD/.device/lib:$SP/nvidia/cudnn/lib:$SP/nvidia/nccl/lib:$SP/nvidia/cublas/lib:$SP/nvidia/cu13/lib:$SP/nvidia/cuda_cupti/lib:$LD_LIBRARY_PATH
O=$OUT/ab; mkdir -p $O
timeout 60 .device/bin/tr_tests --gtest_filter='OpsGpuGridSync.*:OpsGpuOneKernel.*:OpsGpuBn.*:OpsGpuPool.*:FusionGpu.PoolFusionsChangeNoBitWithAmp' > $OUT/tests.log 2>&1
echo "tests rc $?" >> $OUT/tests.log
C="--device cuda --mode full-capture --precision amp --optimizer sgd --warmup 10 --iters 30 --repetitions 5 --model cnn --batch 64,256"
for r in 1 2; do
  for v in new old; do
    bin=.device/bin/tr-bench; [ $v = old ] && bin=.device/old/tr-bench
    timeout 40 $bin $C > $O/cnn_${v}_$r.log 2>&1
  done
done
timeout 40 .device/bin/tr-bench $C --grid-sync > $O/cnn_gridsync.log 2>&1
for f in $O/cnn_*.log; do printf "%-16s" $(basename $f .log); grep -hE "full-capture" $f | awk '{printf " %s (cv %s)", $6, $7}'; echo; done > $OUT/summary.txt
cat $OUT/summary.txt; tail -3 $OUT/tests.log
