#!/usr/bin/env bash
# The cnn's time to accuracy with the shipped code (binaries of f4aa9d0: side
# streams now on at its recipe's batch of 512), 5 seeds, then the PyTorch peer
# with the same recipe in the same call (ci/gpu_check/tta.sh's cnn lines).
SP=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$PWD/.device/lib:$SP/nvidia/cudnn/lib:$SP/nvidia/nccl/lib:$SP/nvidia/cublas/lib:$SP/nvidia/cu13/lib:$SP/nvidia/cuda_cupti/lib:$LD_LIBRARY_PATH
tar xzf .device/bins.tgz -C .device
O=$OUT/r; mkdir -p $O
DATA=$PWD/.device/data
timeout 300 .device/bin/tr-bench tta --device cuda --model cnn --runs 5 --data-dir $DATA --json $O/tta_cnn.json --mllog $O/tta_cnn.mllog > $O/tta_cnn.log 2>&1
echo "tr rc=$?"
timeout 300 /opt/torch/.venv/bin/python peers/torch_tta.py --model cnn --epochs 7 --batch 512 --lr 0.4 --warmup 0.2 --amp --flip --tta flip --target-acc 0.94 --runs 5 --data-dir $DATA --json $O/tta_torch_cnn.json > $O/tta_torch_cnn.log 2>&1
echo "torch rc=$?"
cd $OUT && tar czf all.tgz r && rm -rf r
