#!/usr/bin/env bash
# Call 4: both cuDNN probes after they share cudnn_probe_env.h (handle, stream,
# events, device buffers): the engine probe's cnn cases and the fusion
# probe's cases at batch 256.
SP=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$PWD/.device/lib:$SP/nvidia/cudnn/lib:$SP/nvidia/nccl/lib:$SP/nvidia/cublas/lib:$SP/nvidia/cu13/lib:$SP/nvidia/cuda_cupti/lib:$LD_LIBRARY_PATH
B=.device/bin
timeout 300 $B/tr_bench_ops --benchmark_filter='cudnn_engine/cnn|cudnn_fusion/cnn/b256' > $OUT/probes.log 2>&1
echo "exit $?" >> $OUT/probes.log
grep -E "legacy .* in |\[ cudnn fusion \].*configs|ERROR|exit" $OUT/probes.log
