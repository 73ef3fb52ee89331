#!/usr/bin/env bash
# --cudnn-benchmark timing the heuristic's plan against cuDNN's engine
# configs (Note [timed convolution plans]). The convolution GPU tests, then
# tr-bench with and without the flag in alternating processes (full capture,
# AMP, SGD), the timed choices printed with TR_TRACE=1. Everything comes back
# in all.tgz.
SP=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH=$PWD/.device/lib:$SP/nvidia/cudnn/lib:$SP/nvidia/nccl/lib:$SP/nvidia/cublas/lib:$SP/nvidia/cu13/lib:$SP/nvidia/cuda_cupti/lib:$LD_LIBRARY_PATH
tar xzf .device/bins.tgz -C .device && B=.device/bin
O=$OUT/r; mkdir -p $O
t0=$(date +%s); stamp() { echo "$1 at $(( $(date +%s) - t0 )) s" >> $O/times.txt; }
timeout 200 $B/tr_tests --gtest_filter='OpsGpu.Conv*:OpsGpu.*Filter*' > $O/tests.log 2>&1
echo "tests exit $?" >> $O/tests.log; stamp tests
grep -E "^\[ (conv engines|timed plans) \]|PASSED|FAILED|SKIPPED \]" $O/tests.log | head -60
pack() { tar czf $OUT/all.tgz -C $OUT r; }
pack
TRARGS="--device cuda --mode full-capture --precision amp --optimizer sgd --warmup 5 --iters 20 --repetitions 3"
run() {  # name, then tr-bench arguments
  local n=$1; shift
  TR_TRACE=1 timeout 150 $B/tr-bench $TRARGS "$@" --json $O/$n.json > $O/$n.log 2> $O/$n.err
  echo "$n exit $?" >> $O/times.txt
  grep -c "timed plan" $O/$n.err > /dev/null && grep "timed plan" $O/$n.err | sed 's/.*timed plan: //' > $O/$n.plans
}
for r in 1 2; do
  run cnn_default_$r --model cnn --batch 64,256,1024
  run cnn_bench_$r --model cnn --batch 64,256,1024 --cudnn-benchmark
done
stamp cnn; pack
for r in 1 2; do
  run r50_default_$r --model resnet50 --batch 32,256
  run r50_bench_$r --model resnet50 --batch 32,256 --cudnn-benchmark
  run r18_default_$r --model resnet18 --batch 128,512
  run r18_bench_$r --model resnet18 --batch 128,512 --cudnn-benchmark
  run vgg_default_$r --model vgg16bn --batch 128
  run vgg_bench_$r --model vgg16bn --batch 128 --cudnn-benchmark
done
stamp zoo
python3 - $O/*.json > $O/summary.txt <<'PY'
import json, sys
for f in sorted(sys.argv[1:]):
    d = json.load(open(f))
    cells = []
    for b in d["benchmarks"]:
        if b.get("aggregate_name") == "median":
            k = [x.get("gpu_kernels_per_step") for x in d["benchmarks"] if x.get("run_name") == b["run_name"] and "gpu_kernels_per_step" in x]
            cells.append(f"b{b['batch']} {b['real_time']:.4f} ms, {k[0] if k else '?'} kernels")
    print(f"{f.split('/')[-1][:-5]:<16} " + "; ".join(cells))
PY
gzip $O/*.err
for f in $O/*.plans; do echo "$(basename $f .plans): $(grep -c 'cuDNN engine' $f) of $(wc -l < $f) timed keys on an engine config"; done >> $O/summary.txt
cat $O/summary.txt $O/times.txt
pack
