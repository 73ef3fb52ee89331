#!/usr/bin/env bash
# Side streams forced on (--side-streams) against the registry's choice (off
# above side_streams_max_batch) at the batches where they were measured to
# hurt, with the shipped code (binaries of f2816c0). Alternating processes,
# two rounds.
SP=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$PWD/.device/lib:$SP/nvidia/cudnn/lib:$SP/nvidia/nccl/lib:$SP/nvidia/cublas/lib:$SP/nvidia/cu13/lib:$SP/nvidia/cuda_cupti/lib:$LD_LIBRARY_PATH
tar xzf .device/bins.tgz -C .device
B=.device/bin
O=$OUT/r; mkdir -p $O
C="--device cuda --mode full-capture --precision amp --optimizer sgd"
for r in 1 2; do
  for v in auto on; do
    f=""; [ $v = on ] && f="--side-streams"
    timeout 100 $B/tr-bench $C --warmup 10 --iters 30 --repetitions 5 $f --model cnn --batch 512,1024,2048,4096 --json $O/cnn_${v}_$r.json > $O/cnn_${v}_$r.log 2>&1
    timeout 100 $B/tr-bench $C --warmup 5 --iters 20 --repetitions 3 $f --model resnet18 --batch 1024,2048 --json $O/r18_${v}_$r.json > $O/r18_${v}_$r.log 2>&1
    timeout 150 $B/tr-bench $C --warmup 5 --iters 20 --repetitions 3 $f --model resnet50 --batch 128,256 --json $O/r50_${v}_$r.json > $O/r50_${v}_$r.log 2>&1
    timeout 100 $B/tr-bench $C --warmup 5 --iters 20 --repetitions 3 $f --model vgg16bn --batch 32,128 --json $O/vgg_${v}_$r.json > $O/vgg_${v}_$r.log 2>&1
  done
done
python3 - <<'PY' >> $O/summary.txt
import json,glob,os
for f in sorted(glob.glob(os.environ['OUT']+'/r/*_[12].json')):
    try: d=json.load(open(f))
    except Exception as e: print(os.path.basename(f), 'bad', e); continue
    for r in d['benchmarks']:
        if r.get('aggregate_name')=='median':
            print(os.path.basename(f), r.get('batch'), round(r['real_time'],4), r.get('side_streams'), r.get('gpu_kernels_per_step'), round(r.get('gpu_busy_fraction',0),3))
PY
cd $OUT && tar czf all.tgz r && rm -rf r
