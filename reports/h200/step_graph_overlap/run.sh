#!/usr/bin/env bash
# StepGraphOverlapGpu on the shipped code (tr_tests), and on a build with
# deep_side_may_stay_open_ forced false (tr_tests_neg: DEEP_FWD_BWD spliced as
# one child node again), which must fail.
SP=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$PWD/.device/lib:$SP/nvidia/cudnn/lib:$SP/nvidia/nccl/lib:$SP/nvidia/cublas/lib:$SP/nvidia/cu13/lib:$SP/nvidia/cuda_cupti/lib:$LD_LIBRARY_PATH
tar xzf .device/bins.tgz -C .device
.device/bin/tr_tests --gtest_filter='StepGraphOverlapGpu.*' > $OUT/overlap.log 2>&1; echo "overlap rc=$?"
.device/bin/tr_tests_neg --gtest_filter='StepGraphOverlapGpu.*' > $OUT/overlap_joined_build.log 2>&1; echo "joined build rc=$? (must fail)"
