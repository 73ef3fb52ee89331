#!/usr/bin/env bash
# The deep weight gradients left running beside FIRST_LAYER_BWD in the step
# graph (Note [the deep weight gradients finish beside the first layer's
# backward]). The GPU check's tests part on the new build, then the new build
# (tr-bench) against the one before it (tr-bench-old, a86d307) in alternating
# processes, two rounds, and a kernel trace of the cnn at 256 with each.
SP=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$PWD/.device/lib:$SP/nvidia/cudnn/lib:$SP/nvidia/nccl/lib:$SP/nvidia/cublas/lib:$SP/nvidia/cu13/lib:$SP/nvidia/cuda_cupti/lib:$LD_LIBRARY_PATH
tar xzf .device/bins.tgz -C .device
B=.device/bin
O=$OUT/r; mkdir -p $O
TR_CHECK_PARTS=tests TR_TEST_FILTER='*-CpuTraining.*:ZooTraining.*:GradBuckets.*:TtaTask.*:DataParallel.*:AugmentTraining.*:Fusion.*:BnSync.*:TrBenchTtaCli.*:GradientsOverwritten.*:TrTrainCli.*:Nvtx.TrainRangesNestAsPhasesStepsAndGraphs' OUT=$O/tests bash ci/gpu_check.sh > $O/tests_call.log 2>&1
echo "tests rc=$?" >> $O/summary.txt
C="--device cuda --mode full-capture --precision amp --optimizer sgd"
for r in 1 2; do
  for v in old new; do
    x=$B/tr-bench; [ $v = old ] && x=$B/tr-bench-old
    timeout 100 $x $C --warmup 10 --iters 30 --repetitions 5 --model cnn --batch 64,256,1024,4096 --json $O/cnn_${v}_$r.json > $O/cnn_${v}_$r.log 2>&1
    timeout 100 $x $C --warmup 5 --iters 20 --repetitions 3 --model resnet18 --batch 128,512 --json $O/r18_${v}_$r.json > $O/r18_${v}_$r.log 2>&1
    timeout 150 $x $C --warmup 5 --iters 20 --repetitions 3 --model resnet50 --batch 32,256 --json $O/r50_${v}_$r.json > $O/r50_${v}_$r.log 2>&1
    timeout 100 $x $C --warmup 5 --iters 20 --repetitions 3 --model vgg16bn --batch 128 --json $O/vgg_${v}_$r.json > $O/vgg_${v}_$r.log 2>&1
  done
done
for v in old new; do
  x=$B/tr-bench; [ $v = old ] && x=$B/tr-bench-old
  timeout 100 $x $C --model cnn --batch 256 --warmup 10 --iters 20 --repetitions 3 --kernel-trace $O/trace_$v.json > $O/trace_$v.log 2>&1
done
python3 - <<'PY' >> $O/summary.txt
import json,glob,os
for f in sorted(glob.glob(os.environ['OUT']+'/r/*_[12].json')):
    try: d=json.load(open(f))
    except Exception as e: print(os.path.basename(f), 'bad', e); continue
    for r in d['benchmarks']:
        if r.get('aggregate_name')=='median':
            print(os.path.basename(f), r.get('batch'), round(r['real_time'],4), r.get('gpu_kernels_per_step'), round(r.get('gpu_busy_fraction',0),3))
PY
grep -h -E "differ|passed|failed|PASSED|FAILED" $O/tests/*.log 2>/dev/null | sort | uniq -c | sort -rn | head -40 >> $O/summary.txt
cd $OUT && tar czf all.tgz r && rm -rf r
