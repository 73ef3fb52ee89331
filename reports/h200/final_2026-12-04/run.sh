#!/usr/bin/env bash
# The shipped code of 2026-12-04 evening (binaries of f4aa9d0; their JSON says
# 6edb9ea-dirty, the tree that became f4aa9d0): the GPU checks tests part, then its bench part
# (kept in ../gpu_check/).
tar xzf .device/bins.tgz -C .device
git log --oneline -1 > $OUT/commit.txt 2>/dev/null
TR_CHECK_PARTS=tests TR_TEST_FILTER='*-CpuTraining.*:ZooTraining.*:GradBuckets.*:TtaTask.*:DataParallel.*:AugmentTraining.*:Fusion.*:BnSync.*:TrBenchTtaCli.*:GradientsOverwritten.*:TrTrainCli.*:Nvtx.TrainRangesNestAsPhasesStepsAndGraphs' OUT=$OUT/tests bash ci/gpu_check.sh > $OUT/tests_call.log 2>&1
echo "tests rc=$?"
TR_CHECK_PARTS=bench OUT=$OUT/bench bash ci/gpu_check.sh > $OUT/bench_call.log 2>&1
echo "bench rc=$?"
