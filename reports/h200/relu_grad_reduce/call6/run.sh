#!/usr/bin/env bash
# Call 6 (binaries of the commit that moves the pool kernels' block and grid
# into pool_vec_cuda.h): every GPU test of the pool kernels, and the op tests
# of this work again.
SP=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$PWD/.device/lib:$SP/nvidia/cudnn/lib:$SP/nvidia/nccl/lib:$SP/nvidia/cublas/lib:$SP/nvidia/cu13/lib:$SP/nvidia/cuda_cupti/lib:$LD_LIBRARY_PATH
tar xzf .device/bins.tgz -C .device && B=.device/bin
timeout 200 $B/tr_tests --gtest_filter='*Pool*:OpsGpuReluGrad.*:OpsGpuOneKernel.*:FusionGpu.PoolFusionsChangeNoBitWithAmp' > $OUT/tests.log 2>&1
echo "tests rc $?" >> $OUT/tests.log
grep -E "^\[ *(OK|FAILED|SKIPPED) |^\[  (PASSED|FAILED)|tests rc" $OUT/tests.log
