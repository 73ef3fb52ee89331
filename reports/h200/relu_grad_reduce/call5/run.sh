#!/usr/bin/env bash
# Call 5 (binaries of the commit that adds OpsGpuReluGrad.MisalignedReluOutputRunsTheOpsApart):
# the fused reduce's op tests, the fallback to the two ops apart among them.
SP=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$PWD/.device/lib:$SP/nvidia/cudnn/lib:$SP/nvidia/nccl/lib:$SP/nvidia/cublas/lib:$SP/nvidia/cu13/lib:$SP/nvidia/cuda_cupti/lib:$LD_LIBRARY_PATH
tar xzf .device/bins.tgz -C .device && B=.device/bin
timeout 120 $B/tr_tests --gtest_filter='OpsGpuReluGrad.*' > $OUT/tests.log 2>&1
echo "tests rc $?" >> $OUT/tests.log
grep -E "misaligned|OK \]|FAILED|Failure|^\[  (PASSED|FAILED)|tests rc" $OUT/tests.log
