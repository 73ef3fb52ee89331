#!/usr/bin/env bash
# One device call on the H200 (binaries of 2874a82): the GPU check's tests part
# (every test but the long CPU ones, as in ../final_2026-12-04/run.sh), then its
# conv-plans part (resnet18 at 128 trained with timed plans alone twice,
# recorded once, replayed twice; tr-bench with the heuristic's and the replayed
# plans, alternating).
tar xzf .device/bins.tgz -C .device
TR_CHECK_PARTS=tests TR_TEST_FILTER='*-CpuTraining.*:ZooTraining.*:GradBuckets.*:TtaTask.*:DataParallel.*:AugmentTraining.*:Fusion.*:BnSync.*:TrBenchTtaCli.*:GradientsOverwritten.*:TrTrainCli.*:Nvtx.TrainRangesNestAsPhasesStepsAndGraphs' \
  OUT=$OUT/tests timeout 300 bash ci/gpu_check.sh > $OUT/tests_call.log 2>&1
TR_CHECK_PARTS=conv-plans OUT=$OUT/plans timeout 270 bash ci/gpu_check.sh > $OUT/plans_call.log 2>&1
