#!/usr/bin/env bash
# Call 3: the GPU check's tests part (its long CPU-only suites left out) on
# the binaries of c732dd4, whose convolution launchers run every cuDNN plan
# through run_cudnn_plan.
TR_CHECK_PARTS=tests TR_TEST_FILTER='*-CpuTraining.*:ZooTraining.*:GradBuckets.*:TtaTask.*:DataParallel.*:AugmentTraining.*:Fusion.*:BnSync.*:TrBenchTtaCli.*:GradientsOverwritten.*:TrTrainCli.*:Nvtx.TrainRangesNestAsPhasesStepsAndGraphs' bash ci/gpu_check.sh
