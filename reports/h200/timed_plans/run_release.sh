#!/usr/bin/env bash
# Call 4: the plan timer that frees what it made on every way out (binaries
# of dcdf760): the convolution GPU tests, and tr-bench with
# --cudnn-benchmark on the cnn and resnet18.
SP=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$PWD/.device/lib:$SP/nvidia/cudnn/lib:$SP/nvidia/nccl/lib:$SP/nvidia/cublas/lib:$SP/nvidia/cu13/lib:$SP/nvidia/cuda_cupti/lib:$LD_LIBRARY_PATH
tar xzf .device/bins.tgz -C .device && B=.device/bin
timeout 200 $B/tr_tests --gtest_filter='OpsGpu.Conv*' > $OUT/tests.log 2>&1; echo "tests exit $?" >> $OUT/tests.log
grep -E "^\[ conv engines \]|PASSED|FAILED|exit" $OUT/tests.log
TRARGS="--device cuda --mode full-capture --precision amp --optimizer sgd --warmup 5 --iters 20 --repetitions 3"
timeout 150 $B/tr-bench $TRARGS --model cnn,resnet18 --batch 256 --cudnn-benchmark --json $OUT/bench.json > $OUT/bench.log 2>&1
echo "tr-bench exit $?" >> $OUT/bench.log
grep -E "full-capture|exit" $OUT/bench.log
