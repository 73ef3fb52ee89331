#!/usr/bin/env bash
# StepGraphOverlapGpu on the shipped code (binaries of the commit that added
# it), and on a build with the deep weight gradients joined at DEEP_FWD_BWD's
# end as before (deep_side_may_stay_open_ forced false: it must fail there),
# then the mode-equivalence GPU tests.
SP=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$PWD/.device/lib:$SP/nvidia/cudnn/lib:$SP/nvidia/nccl/lib:$SP/nvidia/cublas/lib:$SP/nvidia/cu13/lib:$SP/nvidia/cuda_cupti/lib:$LD_LIBRARY_PATH
tar xzf .device/bins.tgz -C .device
B=.device/bin
$B/tr_tests --gtest_filter='StepGraphOverlapGpu.*' > $OUT/overlap.log 2>&1; echo "overlap rc=$?"
$B/tr_tests_neg --gtest_filter='StepGraphOverlapGpu.*' > $OUT/overlap_joined_build.log 2>&1; echo "joined build rc=$? (must fail)"
$B/tr_tests --gtest_filter='ZooGpu.ModesAreBitIdenticalOver20Steps:SideStreamsGpu.*:GpuTraining.ModesAreBitIdenticalOver100Steps:StepGraphs*' > $OUT/modes.log 2>&1; echo "modes rc=$?"
