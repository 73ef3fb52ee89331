#!/usr/bin/env bash
# --grid-sync with and without side streams, against the default, cnn at
# 64/256/1024 (binaries of f2816c0), alternating processes, three rounds, and
# kernel traces at 256.
SP=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$PWD/.device/lib:$SP/nvidia/cudnn/lib:$SP/nvidia/nccl/lib:$SP/nvidia/cublas/lib:$SP/nvidia/cu13/lib:$SP/nvidia/cuda_cupti/lib:$LD_LIBRARY_PATH
tar xzf .device/bins.tgz -C .device
B=.device/bin
O=$OUT/r; mkdir -p $O
C="--device cuda --mode full-capture --precision amp --optimizer sgd --warmup 10 --iters 30 --repetitions 5 --model cnn --batch 64,256,1024"
for r in 1 2 3; do
  for v in default gs gs1 one; do
    case $v in default) f="";; gs) f="--grid-sync";; gs1) f="--grid-sync --no-side-streams";; one) f="--no-side-streams";; esac
    timeout 100 $B/tr-bench $C $f --json $O/cnn_${v}_$r.json > $O/cnn_${v}_$r.log 2>&1
  done
done
for v in default gs1; do
  case $v in default) f="";; gs1) f="--grid-sync --no-side-streams";; esac
  timeout 100 $B/tr-bench --device cuda --mode full-capture --precision amp --optimizer sgd --model cnn --batch 256 --warmup 10 --iters 20 --repetitions 3 $f --kernel-trace $O/trace_$v.json > $O/trace_$v.log 2>&1
done
python3 - <<'PY' >> $O/summary.txt
import json,glob,os
for f in sorted(glob.glob(os.environ['OUT']+'/r/*_[123].json')):
    try: d=json.load(open(f))
    except Exception as e: print(os.path.basename(f), 'bad', e); continue
    for r in d['benchmarks']:
        if r.get('aggregate_name')=='median':
            print(os.path.basename(f), r.get('batch'), round(r['real_time'],4), r.get('gpu_kernels_per_step'), round(r.get('gpu_busy_fraction',0),3))
PY
cd $OUT && tar czf all.tgz r && rm -rf r
