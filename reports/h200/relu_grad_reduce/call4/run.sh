#!/usr/bin/env bash
# Call 4 (binaries of 8e03d9a, the landed code: the op tests share the
# fixture's counted run): the GPU op tests of the BatchNorm sums and phases
# and the fusion tests, which print the ReLU-gradient pairs too.
SP=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$PWD/.device/lib:$SP/nvidia/cudnn/lib:$SP/nvidia/nccl/lib:$SP/nvidia/cublas/lib:$SP/nvidia/cu13/lib:$SP/nvidia/cuda_cupti/lib:$LD_LIBRARY_PATH
tar xzf .device/bins.tgz -C .device && B=.device/bin
timeout 200 $B/tr_tests --gtest_filter='OpsGpuReluGrad.*:OpsGpuGridSync.*:OpsGpuOneKernel.*:OpsGpuBn.*:OpsGpuPool.*:FusionGpu.*' > $OUT/tests.log 2>&1
echo "tests rc $?" >> $OUT/tests.log
grep -E "fusion gpu|^\[  (PASSED|FAILED)|tests rc" $OUT/tests.log
