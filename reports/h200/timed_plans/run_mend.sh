#!/usr/bin/env bash
# Call 5 (binaries of 78201ff, one function running engine plans): the
# convolution GPU tests.
SP=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$PWD/.device/lib:$SP/nvidia/cudnn/lib:$SP/nvidia/nccl/lib:$SP/nvidia/cublas/lib:$SP/nvidia/cu13/lib:$SP/nvidia/cuda_cupti/lib:$LD_LIBRARY_PATH
tar xzf .device/bins.tgz -C .device && B=.device/bin
timeout 200 $B/tr_tests --gtest_filter='OpsGpu.Conv*' > $OUT/tests.log 2>&1; echo "tests exit $?" >> $OUT/tests.log
grep -E "^\[ (conv engines|timed plans) \]|PASSED|FAILED|exit" $OUT/tests.log
