#!/usr/bin/env bash
# gpu_check_dry_run.sh: ci/gpu_check.sh, every part, on this GPU-less machine
# with stand-ins for nvidia-smi, mpirun, compute-sanitizer, the PyTorch interpreter and our tools
# (each logs its command line and prints what the script greps for). Device
# time is scarce and multi-GPU machines are rare, so a typo in a part that only
# runs there must fail here: the script must exit 0 with 1, 2 and 4 stand-in
# GPUs, print no shell error, and launch the multi-GPU parts' commands with the
# arguments they promise (the zoo's weak scaling, the GPU tests as processes).
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/repo/build/bin" "$work/stub"
cp -r "$src/ci" "$src/peers" "$work/repo/"
calls=$work/calls.log

stub() {  # stub NAME BODY: an executable stand-in that logs its command line first
  printf '#!/usr/bin/env bash\necho "%s $*" >> %s\n%s\n' "$1" "$calls" "$2" > "$3/$1"
  chmod +x "$3/$1"
}
for t in tr-train tr-bench tr_tests tr_bench_ops tr_experiments tr_mpi_tests; do
  stub "$t" 'echo "tr-train: state hash 0x0123456789abcdef (80 tensors, 222184 floats)"; echo "[  PASSED  ] 1 test."' \
    "$work/repo/build/bin"
done
stub nvidia-smi 'if [ "${1:-}" = -L ]; then for i in $(seq 0 $((STUB_GPUS - 1))); do echo "GPU $i: NVIDIA H200"; done; fi' \
  "$work/stub"
# mpirun: drop its own options, export -x VAR=VALUE, run the program once.
stub mpirun 'while [ $# -gt 0 ]; do case $1 in --bind-to|-np) shift 2;; -x) export "$2"; shift 2;; *) break;; esac; done
exec "$@"' "$work/stub"
stub python 'echo "resnet50 eager 1.0"' "$work/stub"
# compute-sanitizer: drop its options, run the program, report no error.
stub compute-sanitizer 'while [ $# -gt 0 ]; do case $1 in --tool|--leak-check|--error-exitcode|--kernel-name) shift 2;; --*) shift;; *) break;; esac; done
"$@"; echo "========= ERROR SUMMARY: 0 errors"' "$work/stub"

run_check() {  # run_check GPUS PARTS: the script's stderr and summary under $work/gpus$GPUS
  local out=$work/out$1
  rm -f "$calls"
  if ! (cd "$work/repo" && PATH="$work/stub:$PATH" STUB_GPUS=$1 TR_TORCH_PYTHON="$work/stub/python" OUT="$out" \
          TR_CHECK_PARTS="$2" bash ci/gpu_check.sh > "$out.stdout" 2> "$out.stderr"); then
    echo "gpu_check_dry_run: ci/gpu_check.sh failed with $1 stand-in GPU(s):"; tail -n 20 "$out.stdout" "$out.stderr"
    exit 1
  fi
  if grep -E "command not found|syntax error|unbound variable|bad substitution|integer expression|No such file" \
       "$out.stderr" "$out.stdout"; then
    echo "gpu_check_dry_run: shell errors with $1 stand-in GPU(s)"; exit 1
  fi
  cp "$calls" "$out.calls"
}
expect_call() {  # expect_call GPUS PATTERN: some logged command line matches
  grep -qE -- "$2" "$work/out$1.calls" || { echo "gpu_check_dry_run: with $1 GPU(s), no call matches: $2"; exit 1; }
}
expect_summary() {
  grep -qF -- "$2" "$work/out$1/summary.txt" || { echo "gpu_check_dry_run: with $1 GPU(s), the summary lacks: $2"; exit 1; }
}

all="tests ops fusion-probe bench zoo gpt fusion schedule conv-plans train tta text-tta interleave"
all+=" sanitize mpi scaling scaling-zoo"
# The pack's data: the text part looks for tr-data's manifest.
mkdir -p "$work/repo/.device/data/text"
echo '{}' > "$work/repo/.device/data/text/manifest.json"
run_check 1 "$all"
expect_call 1 "^tr-bench tta --device cuda --model gpt2-d6 --runs 5 --data-dir .*/.device/data/text --json "
expect_summary 1 "PyTorch text peer skipped: no python with torch and CUDA"
# The interleave part hands ci/interleave.py each headline workload (the stand-in python runs nothing).
expect_call 1 "^python ci/interleave.py --rounds 3 --out .*/interleave/cnn --tr timeout 200 build/bin/tr-bench --device cuda \
--optimizer sgd --precision amp --model cnn --batch 256 --mode full-capture .*--json \{json\} --peer .*peers/torch_step.py \
--model cnn --batch 256 --mode compile-full-capture .*--peer-case torch_step/model:cnn/mode:compile-full-capture/batch:256 "
expect_call 1 "^python ci/interleave.py .* --out .*/interleave/vgg16bn .*--model vgg16bn --batch 128 --mode full-capture .*\
peers/torch_step.py --model vgg16bn --batch 128 --mode compile-full-capture "
expect_call 1 "^python ci/interleave.py .* --out .*/interleave/tta-cnn --tr timeout 200 build/bin/tr-bench tta --device cuda \
--model cnn --runs 5 .*peers/torch_tta.py --model cnn --mode full-capture .* --tr-tta cnn --peer-case torch_tta "
expect_summary 1 "tr and its peer in turns: resnet50"
expect_summary 1 "interleave gpt2 skipped: no .device-llmc/train_gpt2cu"
expect_summary 1 "scaling skipped: 1 GPU visible (needs 2 or more)"
expect_summary 1 "scaling-zoo skipped: 1 GPU visible (needs 2 or more)"
expect_call 1 "^tr_mpi_tests --gtest_filter=GpuProcesses\*"
expect_call 1 "^tr_bench_ops .*--benchmark_filter=\. "
expect_call 1 "^tr-train --device cuda --model resnet18 .*--state-hash --cudnn-benchmark --conv-plans .*conv_plans_resnet18.json"
expect_call 1 "^tr-bench --device cuda --model gpt2 --batch 1,4,16,64 --precision amp --mode eager,partial-capture,full-capture "
expect_call 1 "^tr-bench --device cuda --model gpt2 --batch 1,4,16,64 --precision bf16 --mode eager,partial-capture,full-capture "
expect_call 1 "peers/torch_gpt.py --model gpt2 --batch 1,4,16,64 .*--precision amp "
expect_call 1 "peers/torch_gpt.py --model gpt2 --batch 1,4,16,64 .*--precision bf16 "
expect_call 1 "^tr-bench --device cuda --mode full-capture .*--conv-plans .*conv_plans_resnet18.json --json"
expect_summary 1 "conv plans: resnet18 b128 state hashes: timed alone 0x0123456789abcdef and 0x0123456789abcdef; recorded"
# The fusion-probe part: the probes from tr_experiments, then the unfused ops of their shapes from tr_bench_ops.
expect_call 1 "^tr_experiments .*--benchmark_filter=cudnn_fusion\|BM_BnChain "
expect_call 1 "^tr_bench_ops .*--benchmark_filter=cnn/b\(256\|1024\)/\(conv_fwd"
# The sanitize part: every tool, model and precision, in parallel; each run's summary line.
expect_call 1 "^compute-sanitizer --tool memcheck --leak-check full --error-exitcode 9 .*tr-train --device cuda --model resnet50 .*--mode full-capture --precision bf16 --side-streams"
expect_call 1 "^compute-sanitizer --tool racecheck --error-exitcode 9 .*tr-train --device cuda --model vgg16bn .*--grid-sync"
expect_call 1 "^compute-sanitizer --tool synccheck --kernel-name kns=tr:: --kernel-name kns=2tr --error-exitcode 9 .*tr-train --device cuda --model gpt2-d6 .*--precision bf16"
expect_call 1 "^compute-sanitizer --tool synccheck --error-exitcode 9 .*tr_tests --gtest_filter=OpsGpu.OpTableEveryCaseMatchesTheCpu"
expect_summary 1 "compute-sanitizer: 164 of 164 runs clean"
expect_summary 1 "initcheck_gpt2-d6_full-capture_amp_no-pdl (exit 0): ERROR SUMMARY: 0 errors"
# TR_SAN_ONLY: the runs its expression names, and a part that names none fails.
TR_SAN_ONLY='racecheck_resnet50_.*_(amp|bf16)' run_check 1 "sanitize"
expect_summary 1 "compute-sanitizer: 6 of 6 runs clean"
if (cd "$work/repo" && PATH="$work/stub:$PATH" STUB_GPUS=1 OUT="$work/none" TR_SAN_ONLY=no_such_run \
      TR_CHECK_PARTS=sanitize bash ci/gpu_check.sh > "$work/none.out" 2>&1); then
  echo "gpu_check_dry_run: TR_SAN_ONLY matching no run passed"; exit 1
fi
# The fused-convolution probes: a memcheck of their kernels first, then all of them.
export TR_PROBE_FILTER=BM_ConvBn
run_check 1 "fusion-probe"
unset TR_PROBE_FILTER
expect_call 1 "^compute-sanitizer --tool memcheck --error-exitcode 9 .*tr_experiments .*--benchmark_filter=BM_ConvBn\(Bwd\)\?Fused/"
expect_call 1 "^tr_experiments .*--benchmark_filter=BM_ConvBn "
expect_summary 1 "compute-sanitizer memcheck of the fused-convolution probes (exit 0): ERROR SUMMARY: 0 errors"
if grep -q "^tr_bench_ops " "$work/out1.calls"; then
  echo "gpu_check_dry_run: with TR_PROBE_FILTER, the fusion-probe part ran tr_bench_ops's unfused ops"; exit 1
fi
# A build without -DTR_EXPERIMENTS=ON has no tr_experiments: the part says so and skips.
rm "$work/repo/build/bin/tr_experiments"
run_check 1 "fusion-probe"
expect_summary 1 "fusion-probe part skipped: no tr_experiments in build/bin"

run_check 2 "mpi scaling scaling-zoo"
expect_summary 2 "mpi: GPU equivalence tests as 2 process(es) x 1 GPU(s) (exit 0)"
for m in "resnet50 --batch-per-gpu 32,256" "resnet18 --batch-per-gpu 128,512"; do
  for sync in batch running; do expect_call 2 "^tr-bench --device cuda --mode all --gpus auto .*--model $m --bn-sync $sync "; done
  for bn in sync local; do expect_call 2 "^python peers/torch_ddp.py --model $m --bn $bn "; done
done
expect_call 2 "^tr-bench --device cuda --mode all --gpus auto .*--model resnet50 --batch-per-gpu 32 --json .*scaling_resnet50_mpi.json"
expect_call 2 "^tr-bench report .*scaling_resnet50_bn_batch.json .*scaling_resnet18_bn_running.json -o .*scaling_zoo.html"

run_check 4 "mpi"
expect_summary 4 "mpi: GPU equivalence tests as 4 process(es) x 1 GPU(s) (exit 0)"
expect_summary 4 "mpi: GPU equivalence tests as 2 process(es) x 2 GPU(s) (exit 0)"
# A misspelt part is refused, not skipped in silence.
if (cd "$work/repo" && PATH="$work/stub:$PATH" STUB_GPUS=1 OUT="$work/bad" TR_CHECK_PARTS="tests scalng" \
      bash ci/gpu_check.sh > "$work/bad.out" 2>&1); then
  echo "gpu_check_dry_run: TR_CHECK_PARTS='tests scalng' was accepted"; exit 1
fi
grep -q "unknown part 'scalng'" "$work/bad.out" || { echo "gpu_check_dry_run: no error naming the part:"; cat "$work/bad.out"; exit 1; }
echo "gpu_check_dry_run: ok (every part with 1 stand-in GPU, the multi-GPU parts with 2 and 4, a misspelt part refused)"
