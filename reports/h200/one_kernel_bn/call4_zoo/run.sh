#!/usr/bin/env bash
# Call 4: the zoo's targets on the shipped code (binaries of f09da23):
# resnet50 at 256 and vgg16bn at 128, full capture, AMP, SGD, beside
# torch.compile in the same call (peers/torch_step.py --compile-largest), and
# both with --grid-sync.
set -x
SP=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$PWD/.device/lib:$SP/nvidia/cudnn/lib:$SP/nvidia/nccl/lib:$SP/nvidia/cublas/lib:$SP/nvidia/cu13/lib:$SP/nvidia/cuda_cupti/lib:$LD_LIBRARY_PATH
B=.device/bin
PY=/opt/torch/.venv/bin/python
O=$OUT/z; mkdir -p $O
C="--device cuda --mode full-capture --precision amp --optimizer sgd --warmup 5 --iters 20 --repetitions 3"
timeout 100 $B/tr-bench $C --model resnet50 --batch 256 --json $O/tr_r50_1.json > $O/tr_r50_1.log 2>&1
timeout 100 $B/tr-bench $C --model vgg16bn --batch 128 --json $O/tr_vgg_1.json > $O/tr_vgg_1.log 2>&1
timeout 200 $PY peers/torch_step.py --model resnet50 --batch 256 --mode full-capture --compile-largest --warmup 5 --iters 20 --repetitions 3 --json $O/torch_r50.json > $O/torch_r50.log 2>&1
timeout 200 $PY peers/torch_step.py --model vgg16bn --batch 128 --mode full-capture --compile-largest --warmup 5 --iters 20 --repetitions 3 --json $O/torch_vgg.json > $O/torch_vgg.log 2>&1
timeout 100 $B/tr-bench $C --model resnet50 --batch 256 --json $O/tr_r50_2.json > $O/tr_r50_2.log 2>&1
timeout 100 $B/tr-bench $C --model vgg16bn --batch 128 --json $O/tr_vgg_2.json > $O/tr_vgg_2.log 2>&1
timeout 100 $B/tr-bench $C --grid-sync --model resnet50 --batch 256 --json $O/tr_r50_gridsync.json > $O/tr_r50_gridsync.log 2>&1
timeout 100 $B/tr-bench $C --grid-sync --model vgg16bn --batch 128 --json $O/tr_vgg_gridsync.json > $O/tr_vgg_gridsync.log 2>&1
