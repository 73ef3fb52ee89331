#!/usr/bin/env bash
# Two device calls on one warm H200 (binaries of 2874a82): the forward probe at
# batch 256 through the fusion-probe part (memcheck first), then at 1024 alone.
tar xzf .device/bins.tgz -C .device
TR_CHECK_PARTS=fusion-probe TR_PROBE_FILTER='BM_ConvBnFused/.*/batch:256/' TR_PROBE_MIN_TIME=0.1 TR_T_PROBE=330 \
  OUT=$OUT timeout 560 bash ci/gpu_check.sh > $OUT/call.log 2>&1
# second call
SP=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$PWD/.device/lib:$SP/nvidia/cudnn/lib:$SP/nvidia/nccl/lib:$SP/nvidia/cublas/lib:$SP/nvidia/cu13/lib:$SP/nvidia/cuda_cupti/lib
timeout 400 .device/bin/tr_bench_ops --benchmark_min_time=0.1 --benchmark_filter='BM_ConvBnFused/.*/batch:1024/' \
  --benchmark_out=$OUT/fusion_probe_1024.json --benchmark_out_format=json > $OUT/fusion_probe_1024.log 2>&1
