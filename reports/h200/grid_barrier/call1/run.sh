#!/usr/bin/env bash
# Grid barriers of our own (Note [grid barrier slots]) against cooperative_groups':
# TR_GRID_BARRIER=cg (cooperative launch, grid.sync), coop (cooperative launch,
# our barrier), plain (plain launch, our barrier). The grid-sync GPU tests under
# plain and coop, then the cnn and resnet18 by default and with --grid-sync in
# the three forms, alternating processes, two rounds, and kernel traces.
SP=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$PWD/.device/lib:$SP/nvidia/cudnn/lib:$SP/nvidia/nccl/lib:$SP/nvidia/cublas/lib:$SP/nvidia/cu13/lib:$SP/nvidia/cuda_cupti/lib:$LD_LIBRARY_PATH
tar xzf .device/bins.tgz -C .device
B=.device/bin
O=$OUT/r; mkdir -p $O
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv > $O/gpu.txt 2>&1
for v in plain coop; do
  TR_GRID_BARRIER=$v timeout 200 $B/tr_tests --gtest_filter='OpsGpuGridSync.*:OpsGpuOneKernel.*:FusionGpu.*' > $O/tests_$v.log 2>&1
  echo "tests $v rc=$?" >> $O/summary.txt
done
C="--device cuda --mode full-capture --precision amp --optimizer sgd"
for r in 1 2; do
  for v in default cg coop plain; do
    f="--grid-sync"; [ $v = default ] && f=""
    TR_GRID_BARRIER=$v timeout 100 $B/tr-bench $C --warmup 10 --iters 30 --repetitions 5 $f --model cnn --batch 64,256,1024 --json $O/cnn_${v}_$r.json > $O/cnn_${v}_$r.log 2>&1
    TR_GRID_BARRIER=$v timeout 100 $B/tr-bench $C --warmup 5 --iters 20 --repetitions 3 $f --model resnet18 --batch 128 --json $O/r18_${v}_$r.json > $O/r18_${v}_$r.log 2>&1
  done
done
for v in default plain; do
  f="--grid-sync"; [ $v = default ] && f=""
  TR_GRID_BARRIER=$v timeout 100 $B/tr-bench $C --model cnn --batch 256 --warmup 10 --iters 20 --repetitions 3 $f --kernel-trace $O/trace_$v.json > $O/trace_$v.log 2>&1
done
python3 - <<'PY' >> $O/summary.txt
import json,glob,os
for f in sorted(glob.glob(os.environ['OUT']+'/r/*.json')):
    if 'trace' in f: continue
    try: d=json.load(open(f))
    except Exception as e: print(f, 'bad', e); continue
    for r in d['benchmarks']:
        if r.get('aggregate_name')=='median':
            print(os.path.basename(f), r.get('batch'), round(r['real_time'],4), r.get('gpu_kernels_per_step'), round(r.get('gpu_busy_fraction',0),3))
PY
cd $OUT && tar czf all.tgz r && rm -rf r
