#!/usr/bin/env bash
# Every deterministic cuDNN engine for each convolution cuDNN runs in the cnn's,
# resnet50's and vgg16bn's steps (tests/bench/cudnn_engine_probe.cu): kernels and
# memsets per execution
# and time, against the legacy plan tr ships. Everything comes back in all.tgz.
SP=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$PWD/.device/lib:$SP/nvidia/cudnn/lib:$SP/nvidia/nccl/lib:$SP/nvidia/cublas/lib:$SP/nvidia/cu13/lib:$SP/nvidia/cuda_cupti/lib:$LD_LIBRARY_PATH
tar xzf .device/bins.tgz -C .device && B=.device/bin
O=$OUT/r; mkdir -p $O
timeout 560 $B/tr_bench_ops --benchmark_filter='cudnn_engine' --benchmark_format=json --benchmark_out=$O/engines.json > $O/engines.log 2>&1
echo "exit $?" >> $O/engines.log
grep -E "legacy .* in|does not" $O/engines.log
tar czf $OUT/all.tgz -C $OUT r
