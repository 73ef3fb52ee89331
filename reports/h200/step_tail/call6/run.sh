#!/usr/bin/env bash
SP=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$PWD/.device/lib:$SP/nvidia/cudnn/lib:$SP/nvidia/nccl/lib:$SP/nvidia/cublas/lib:$SP/nvidia/cu13/lib:$SP/nvidia/cuda_cupti/lib:$LD_LIBRARY_PATH
timeout 300 .device/bin/tr_tests --gtest_filter='RangeOpsGpu*:FusionGpu.*:GpuTraining.*:GradientsOverwrittenGpu.*' > $OUT/tests.log 2>&1
echo "tests rc=$?" >> $OUT/tests.log
grep -E "^\[ optimizer tail|^\[  (PASSED|FAILED)|^\[  FAILED|tests rc" $OUT/tests.log
