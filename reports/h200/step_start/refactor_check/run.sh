#!/usr/bin/env bash
SP=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$PWD/.device/lib:$SP/nvidia/cudnn/lib:$SP/nvidia/nccl/lib:$SP/nvidia/cublas/lib:$SP/nvidia/cu13/lib:$SP/nvidia/cuda_cupti/lib:$LD_LIBRARY_PATH
O=$OUT/v; mkdir -p $O
B=.device/bin
timeout 200 $B/tr_tests --gtest_filter='RangeOpsGpu*:FusionGpu.*:GpuTraining.ModesAre*:GradientsOverwrittenGpu.*' > $O/tests.log 2>&1
echo "tests rc=$?" >> $O/tests.log
timeout 60 stdbuf -oL $B/tr_bench_ops --benchmark_filter='BM_StepGraphShape/shape:(0|1|3)/' --benchmark_min_time=0.2 > $O/probe.log 2>&1
grep -E "^\[ fusion gpu|^\[  (PASSED|FAILED)|tests rc|Failure" $O/tests.log | head -30
grep StepGraph $O/probe.log
