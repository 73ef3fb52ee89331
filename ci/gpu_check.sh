#!/usr/bin/env bash
# The whole GPU check in one call (on a machine with an NVIDIA GPU): GPU and CPU
# tests, op micro-benchmarks, tr-bench over the three modes, and the accuracy
# run; logs and JSON go to $OUT (default ./gpu-check-out). Uses .device/ from
# ci/pack_device.sh when present, else build/bin.
#   TR_CHECK_PARTS="tests ops fusion-probe bench zoo fusion schedule train tta sanitize mpi scaling scaling-zoo" selects parts
#   (default: all; scaling and scaling-zoo need 2 or more GPUs and say so otherwise; TR_ZOO_SCALING picks
#   scaling-zoo's models and batches per GPU, default "resnet50:32,256 resnet18:128,512").
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-check-out}
SUMMARY_DIR=$OUT
OUT=$SUMMARY_DIR/detail  # every log and JSON; packed into detail.tgz at the end
mkdir -p "$OUT"
PARTS=${TR_CHECK_PARTS:-"tests ops fusion-probe bench zoo fusion schedule train tta sanitize mpi scaling scaling-zoo"}
BIN=build/bin
[ -d .device/bin ] && BIN=.device/bin
DATA=${TR_DATA_DIR:-/usr/share/datasets/fashion-mnist}
[ -d .device/data ] && [ -n "$(ls .device/data)" ] && DATA=$PWD/.device/data
export TR_DATA_DIR=$DATA  # the real-data tests read it
SP=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH="$PWD/.device/lib:$SP/nvidia/cudnn/lib:$SP/nvidia/nccl/lib:$SP/nvidia/cublas/lib:$SP/nvidia/cu13/lib:$SP/nvidia/cuda_cupti/lib:/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64:${LD_LIBRARY_PATH:-}"
export NCCL_NVLS_ENABLE=0
status=0
note() { echo "== $*" | tee -a "$OUT/summary.txt"; }
pack() {  # few files travel back from a lent machine: one summary and one archive
  cp "$OUT/summary.txt" "$SUMMARY_DIR/summary.txt" 2>/dev/null
  tar czf "$SUMMARY_DIR/detail.tgz" -C "$SUMMARY_DIR" detail && rm -rf "$OUT"
}
trap pack EXIT
# probe LIMIT LOG CMD...: runs CMD with output to LOG; past LIMIT seconds it
# writes every thread's backtrace (gdb, where the machine has one) and the GPUs'
# state to LOG.hang, then kills CMD and returns 124. A hang then names its wait.
probe() {
  local limit=$1 log=$2; shift 2
  "$@" > "$log" 2>&1 &
  local pid=$! waited=0
  while kill -0 $pid 2>/dev/null && [ $waited -lt $limit ]; do sleep 1; waited=$((waited + 1)); done
  if kill -0 $pid 2>/dev/null; then
    {
      echo "still running after ${limit} s: $*"
      nvidia-smi --query-gpu=index,utilization.gpu,memory.used --format=csv
      local dbg; dbg=$(command -v gdb || command -v cuda-gdb || ls /usr/local/cuda/bin/cuda-gdb 2>/dev/null)
      if [ -n "$dbg" ]; then timeout 120 "$dbg" -p $pid -batch -ex "thread apply all bt" 2>&1 | grep -vE '^\[New LWP|^$'
      else echo "no gdb here: no backtraces"; fi
    } > "$log.hang" 2>&1
    kill -9 $pid 2>/dev/null; wait $pid 2>/dev/null
    return 124
  fi
  wait $pid
}

# find_mpirun: sets MPIRUN to Open MPI's launcher (the one ci/pack_mpi.sh packed
# under .device/mpi, relocated, else the machine's own; empty when neither) and
# the environment it needs as root in a container.
find_mpirun() {
  MPIRUN=$(command -v mpirun || true)
  if [ -x .device/mpi/usr/bin/mpirun ]; then
    export OPAL_PREFIX=$PWD/.device/mpi/usr PMIX_INSTALL_PREFIX=$PWD/.device/mpi/usr
    MPIRUN=$PWD/.device/mpi/usr/bin/mpirun
  fi
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
}

# beside_peer NAME MODELS VARIANT...: tr-bench in full capture (AMP, SGD) of
# MODELS once per VARIANT ("label", or "label=--flag" to run with that flag),
# then the PyTorch peer's whole-step graph of the same models in the same call,
# and each variant's ratio to it. Writes NAME_label.{json,log} and torch_NAME.*.
beside_peer() {
  local name=$1 models=$2 v label
  shift 2
  for v in "$@"; do
    label=${v%%=*}
    local flag=()
    [[ $v == *=* ]] && flag=("${v#*=}")
    timeout ${TR_T_BESIDE:-200} "$BIN/tr-bench" --device cuda --mode full-capture --optimizer sgd --precision amp \
      --model "$models" --warmup 5 --iters 20 --repetitions 3 "${flag[@]}" --json "$OUT/${name}_$label.json" \
      > "$OUT/${name}_$label.log" 2>&1 || status=1
    note "tr-bench $models, full capture, $name: $label"
    tee -a "$OUT/summary.txt" < "$OUT/${name}_$label.log"
  done
  local PY=${TR_TORCH_PYTHON:-/opt/torch/.venv/bin/python}
  if [ -x "$PY" ] && "$PY" -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
    timeout ${TR_T_BESIDE_TORCH:-200} "$PY" peers/torch_step.py --model "$models" --mode full-capture --warmup 5 \
      --iters 20 --repetitions 3 --json "$OUT/torch_$name.json" > "$OUT/torch_$name.log" 2>&1 || status=1
    for v in "$@"; do
      label=${v%%=*}
      note "tr ($name: $label) vs PyTorch's whole-step graph (torch/tr above 1: tr is faster)"
      "$PY" peers/compare.py "$OUT/torch_$name.json" "$OUT/${name}_$label.json" 2>&1 | tee -a "$OUT/summary.txt"
    done
  else
    note "PyTorch peer skipped: no python with torch and CUDA at $PY"
  fi
}

nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv > "$OUT/nvidia-smi.csv" 2>&1
note "GPU: $(tail -1 "$OUT/nvidia-smi.csv")"

if [[ " $PARTS " == *" tests "* ]]; then
  timeout ${TR_T_TESTS:-400} "$BIN/tr_tests" --gtest_brief=0 --gtest_filter="${TR_TEST_FILTER:-*}" > "$OUT/tests.log" 2>&1; rc=$?
  [ $rc -ne 0 ] && status=1
  note "tests (exit $rc): $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$OUT/tests.log" | tr '\n' ' ')"
  grep -E '^\[ (gpu vs cpu|amp|modes|launches|dp|gpu dp|plan|atlas|mlp|diag|nccl|allreduce|zoo[a-z ]*|pdl gpu|side streams gpu|fusion gpu|buckets|augment[a-z ]*|tta) \]|FAILED|Failure' "$OUT/tests.log" | head -120 | tee -a "$OUT/summary.txt"
fi
if [[ " $PARTS " == *" ops "* ]] && [ -x "$BIN/tr_bench_ops" ]; then
  timeout ${TR_T_OPS:-300} "$BIN/tr_bench_ops" --benchmark_min_time=0.01 --benchmark_format=console \
    --benchmark_filter="${TR_OPS_FILTER:--cudnn_fusion}" \
    --benchmark_out="$OUT/ops_bench.json" --benchmark_out_format=json > "$OUT/ops_bench.log" 2>&1
  note "op micro-benchmarks (exit $?): $OUT/ops_bench.json"
  grep -E "^BM_(Launch|OneGraph)" "$OUT/ops_bench.log" | tee -a "$OUT/summary.txt"
fi
if [[ " $PARTS " == *" fusion-probe "* ]] && [ -x "$BIN/tr_bench_ops" ]; then
  # cuDNN's runtime fusion of the BN + ReLU before the cnn's convolutions (and
  # of the BN statistics after them) against the unfused ops of the same shapes
  # (tests/bench/cudnn_fusion_probe.cu), in one run.
  timeout ${TR_T_PROBE:-400} "$BIN/tr_bench_ops" --benchmark_format=console \
    --benchmark_filter="${TR_PROBE_FILTER:-cudnn_fusion|cnn/b(256|1024)/(conv_fwd|conv_bwd_filter|bn_relu_apply|bn_stats)/.*/f16}" \
    --benchmark_out="$OUT/fusion_probe.json" --benchmark_out_format=json > "$OUT/fusion_probe.log" 2>&1
  rc=$?
  [ $rc -ne 0 ] && status=1
  note "cuDNN runtime fusion probe (exit $rc): $OUT/fusion_probe.json"
  grep -E '^\[ cudnn fusion \].*(configs|graph with)|^cnn/b' "$OUT/fusion_probe.log" | tee -a "$OUT/summary.txt"
fi
if [[ " $PARTS " == *" bench "* ]]; then
  # cnn trains with SGD here, the optimizer the PyTorch peer uses too.
  common="--device cuda --optimizer sgd --warmup 10 --iters 30 --repetitions 5"
  for prec in amp fp32; do
    # AMP also names each case's top kernels: the report carries kernels per step and their time.
    top=()
    [ $prec = amp ] && top=(--top-kernels 10)
    timeout ${TR_T_BENCH:-200} "$BIN/tr-bench" $common --precision $prec --model cnn --batch 64,256,1024,4096 \
      "${top[@]}" --json "$OUT/bench_cnn_$prec.json" > "$OUT/bench_cnn_$prec.log" 2>&1 || status=1
    timeout ${TR_T_MLP:-100} "$BIN/tr-bench" $common --precision $prec --model mlp --batch 200 \
      --json "$OUT/bench_mlp_$prec.json" > "$OUT/bench_mlp_$prec.log" 2>&1 || status=1
    note "tr-bench ($prec)"
    cat "$OUT/bench_cnn_$prec.log" "$OUT/bench_mlp_$prec.log" | tee -a "$OUT/summary.txt"
  done
  # Full capture launching the dozen sub-graphs of a step instead of one step graph.
  timeout ${TR_T_MLP:-100} "$BIN/tr-bench" $common --precision amp --model cnn,mlp --batch 64,200,256 \
    --mode full-capture --split-steps --json "$OUT/bench_amp_split.json" > "$OUT/bench_amp_split.log" 2>&1 || status=1
  note "tr-bench (amp, full capture with --split-steps)"
  tee -a "$OUT/summary.txt" < "$OUT/bench_amp_split.log"
  "$BIN/tr-bench" report "$OUT/bench_cnn_amp.json" "$OUT/bench_mlp_amp.json" -o "$OUT/bench_amp.html" > /dev/null 2>&1 || status=1
  # The same steps in PyTorch (peers/torch_step.py), where a PyTorch with CUDA is installed.
  PY=${TR_TORCH_PYTHON:-/opt/torch/.venv/bin/python}
  if [ -x "$PY" ] && "$PY" -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
    timeout ${TR_T_TORCH:-200} "$PY" peers/torch_step.py --model cnn,mlp --json "$OUT/torch_amp.json" \
      > "$OUT/torch_amp.log" 2>&1 || status=1
    note "PyTorch peer (amp)"
    grep -v -i warn "$OUT/torch_amp.log" | grep -v "return Variable" | tee -a "$OUT/summary.txt"
    note "tr vs PyTorch (median step time; torch/tr above 1: tr is faster)"
    "$PY" peers/compare.py "$OUT/torch_amp.json" "$OUT/bench_cnn_amp.json" "$OUT/bench_mlp_amp.json" 2>&1 | tee -a "$OUT/summary.txt"
  else
    note "PyTorch peer skipped: no python with torch and CUDA at $PY"
  fi
fi
if [[ " $PARTS " == *" fusion "* ]]; then
  # Fusion's gain measured in one call (Note [fusion] in framework/graph/fusion.h):
  # the ResNets in full capture with fusion on and off (--no-fusion), beside the
  # PyTorch peer's whole-step graph; then where resnet50's fused step goes.
  beside_peer fusion "${TR_FUSION_MODELS:-resnet50,resnet18}" on off=--no-fusion
  timeout ${TR_T_FUSION_TOP:-100} "$BIN/tr-bench" --device cuda --mode full-capture --optimizer sgd --precision amp \
    --model resnet50 --batch 256 --warmup 5 --iters 20 --repetitions 3 --top-kernels 15 \
    --json "$OUT/fusion_top_resnet50.json" > "$OUT/fusion_top_resnet50.log" 2>&1 || status=1
  note "resnet50 b256 fused, top kernels"
  tee -a "$OUT/summary.txt" < "$OUT/fusion_top_resnet50.log"
fi
if [[ " $PARTS " == *" schedule "* ]]; then
  # How the GPU schedules a step, each choice's gain measured in one call:
  # full capture as shipped (programmatic dependent launch, side streams,
  # stream priorities), then without programmatic launch (--no-pdl, Note
  # [programmatic dependent launch]) and without side streams
  # (--no-side-streams, Note [streams inside a graph]), beside the PyTorch
  # peer's whole-step graph; the launch gap between dependent kernels with and
  # without programmatic launch; where resnet18 b128 goes (with --no-pdl, so
  # that each kernel's time excludes its wait for the one before).
  beside_peer schedule "${TR_SCHEDULE_MODELS:-resnet18,resnet50,cnn}" default no-pdl=--no-pdl \
    no-side-streams=--no-side-streams
  timeout 60 "$BIN/tr_bench_ops" --benchmark_filter='BM_GraphChain|BM_OneGraphLaunch/100' \
    --benchmark_out="$OUT/schedule_chain.json" > "$OUT/schedule_chain.log" 2>&1 || status=1
  note "dependent kernels in one graph, with and without programmatic launch"
  grep "^BM_" "$OUT/schedule_chain.log" | tee -a "$OUT/summary.txt"
  timeout ${TR_T_SCHEDULE_TOP:-100} "$BIN/tr-bench" --device cuda --mode full-capture --optimizer sgd --precision amp \
    --model resnet18 --batch 128 --warmup 5 --iters 20 --repetitions 3 --no-pdl --top-kernels 25 \
    --json "$OUT/schedule_top_resnet18.json" > "$OUT/schedule_top_resnet18.log" 2>&1 || status=1
  note "resnet18 b128 (--no-pdl), top kernels"
  tee -a "$OUT/summary.txt" < "$OUT/schedule_top_resnet18.log"
fi
if [[ " $PARTS " == *" zoo "* ]]; then
  # The zoo (resnet18, resnet50, vgg16bn) in every mode at its default batches,
  # AMP, SGD, beside the PyTorch peer (channels-last, AMP; torch.compile at each
  # model's largest batch) in the same call. TR_ZOO narrows the models.
  zoo=${TR_ZOO:-resnet18,resnet50,vgg16bn}
  timeout ${TR_T_ZOO:-300} "$BIN/tr-bench" --device cuda --optimizer sgd --precision amp --model "$zoo" \
    --warmup 5 --iters 20 --repetitions 3 --json "$OUT/bench_zoo_amp.json" > "$OUT/bench_zoo_amp.log" 2>&1 || status=1
  note "tr-bench zoo (amp): $zoo"
  tee -a "$OUT/summary.txt" < "$OUT/bench_zoo_amp.log"
  "$BIN/tr-bench" report "$OUT/bench_zoo_amp.json" -o "$OUT/bench_zoo_amp.html" > /dev/null 2>&1 || status=1
  PY=${TR_TORCH_PYTHON:-/opt/torch/.venv/bin/python}
  if [ -x "$PY" ] && "$PY" -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
    timeout ${TR_T_ZOO_TORCH:-280} "$PY" peers/torch_step.py --model "$zoo" --compile-largest --warmup 5 --iters 20 \
      --repetitions 3 --json "$OUT/torch_zoo_amp.json" > "$OUT/torch_zoo_amp.log" 2>&1 || status=1
    note "PyTorch peer, zoo (amp)"
    grep -v -i warn "$OUT/torch_zoo_amp.log" | tee -a "$OUT/summary.txt"
    note "tr vs PyTorch, zoo (median step time; torch/tr above 1: tr is faster)"
    "$PY" peers/compare.py "$OUT/torch_zoo_amp.json" "$OUT/bench_zoo_amp.json" 2>&1 | tee -a "$OUT/summary.txt"
  else
    note "PyTorch peer skipped: no python with torch and CUDA at $PY"
  fi
fi
if [[ " $PARTS " == *" train "* ]]; then
  # The eager baseline must train as well as the captured modes (they are bit-identical).
  timeout ${TR_T_TRAIN:-240} "$BIN/tr-train" --device cuda --model cnn --mode eager --epochs 10 --data-dir "$DATA" \
    > "$OUT/train_cnn_eager.log" 2>&1 || status=1
  note "cnn on Fashion-MNIST, 10 epochs on the GPU, eager, fp32:"
  tee -a "$OUT/summary.txt" < "$OUT/train_cnn_eager.log"
  timeout ${TR_T_TRAIN:-240} "$BIN/tr-train" --device cuda --model cnn --amp --epochs 10 --data-dir "$DATA" \
    > "$OUT/train_cnn_full_amp.log" 2>&1 || status=1
  note "cnn on Fashion-MNIST, 10 epochs on the GPU, full capture, AMP:"
  tee -a "$OUT/summary.txt" < "$OUT/train_cnn_full_amp.log"
  # resnet18 on Fashion-MNIST padded to 32x32, with its default recipe.
  timeout ${TR_T_TRAIN:-240} "$BIN/tr-train" --device cuda --model resnet18 --amp --epochs 10 --data-dir "$DATA" \
    > "$OUT/train_resnet18_full_amp.log" 2>&1 || status=1
  note "resnet18 on Fashion-MNIST (padded to 32x32), 10 epochs on the GPU, full capture, AMP:"
  tee -a "$OUT/summary.txt" < "$OUT/train_resnet18_full_amp.log"
  # The same 10 epochs with flips and flip-TTA (the time-to-accuracy recipe's lr 0.1).
  timeout ${TR_T_TRAIN:-240} "$BIN/tr-train" --device cuda --model resnet18 --amp --epochs 10 --lr 0.1 --flip \
    --tta flip --data-dir "$DATA" > "$OUT/train_resnet18_flip_tta.log" 2>&1 || status=1
  note "resnet18, 10 epochs, flips and flip-TTA, lr 0.1:"
  tee -a "$OUT/summary.txt" < "$OUT/train_resnet18_flip_tta.log"
fi
if [[ " $PARTS " == *" tta "* ]]; then
  # Time to accuracy: tr-bench tta with each model's recipe (5 seeds; resnet18
  # ${TR_TTA_RESNET_RUNS:-5}), then the same recipe in PyTorch in the same call.
  for m in cnn mlp resnet18; do
    runs=5
    [ $m = resnet18 ] && runs=${TR_TTA_RESNET_RUNS:-5}
    timeout ${TR_T_TTA:-300} "$BIN/tr-bench" tta --device cuda --model $m --runs $runs --data-dir "$DATA" \
      --json "$OUT/tta_$m.json" --mllog "$OUT/tta_$m.mllog" > "$OUT/tta_$m.log" 2>&1 || status=1
    note "tr-bench tta --model $m:"
    grep -A20 '^tta:' "$OUT/tta_$m.log" | tee -a "$OUT/summary.txt"
  done
  "$BIN/tr-bench" report "$OUT"/tta_*.json -o "$OUT/tta.html" >> "$OUT/summary.txt" 2>&1 || status=1
  PY=${TR_TORCH_PYTHON:-/opt/torch/.venv/bin/python}
  if [ -x "$PY" ] && "$PY" -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
    # The recipes of framework/graph/model_registry.cpp, flag for flag.
    declare -A recipe=(
      [cnn]="--epochs 7 --batch 512 --lr 0.4 --warmup 0.2 --amp --flip --tta flip --target-acc 0.94 --runs 5"
      [mlp]="--epochs 10 --batch 500 --lr 1.5e-3 --warmup 0 --amp --flip --tta flip --target-acc 0.895 --runs 5"
      [resnet18]="--epochs 12 --batch 512 --lr 0.1 --warmup 0.2 --amp --flip --translate 1 --tta flip --target-acc 0.95 --runs ${TR_TTA_TORCH_RESNET_RUNS:-2}")
    for m in cnn mlp resnet18; do
      timeout ${TR_T_TTA_TORCH:-300} "$PY" peers/torch_tta.py --model $m ${recipe[$m]} --data-dir "$DATA" \
        --json "$OUT/tta_torch_$m.json" > "$OUT/tta_torch_$m.log" 2>&1 || status=1
      note "peers/torch_tta.py --model $m:"
      tail -4 "$OUT/tta_torch_$m.log" | tee -a "$OUT/summary.txt"
    done
  else
    note "PyTorch peer skipped: no python with torch and CUDA at $PY"
  fi
fi
if [[ " $PARTS " == *" sanitize "* ]]; then
  # compute-sanitizer on short runs of every model in every mode: memcheck with
  # leak checking and initcheck on 64 synthetic images (zoo models at 1/8 width,
  # 32x32), synccheck and racecheck on sizes they finish (mlp, cnn at 1/4 width,
  # 128 images). TR_SAN_TOOLS picks tools, TR_SAN_MODELS models (each part of a
  # 10-minute call). A tool's "ERROR SUMMARY" line goes to the summary; any
  # error fails the check.
  CS=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null || true)
  if [ -z "$CS" ]; then
    note "compute-sanitizer not found: sanitize part skipped"
  else
    san() {  # san TOOL LOG ARGS...: tr-train under one tool
      local tool=$1 log=$2; shift 2
      local extra=()
      [ "$tool" = memcheck ] && extra=(--leak-check full)
      timeout ${TR_T_SAN:-300} "$CS" --tool "$tool" "${extra[@]}" --error-exitcode 9 "$BIN/tr-train" --device cuda \
        "$@" > "$OUT/$log" 2>&1
      local rc=$?
      [ $rc -ne 0 ] && status=1
      # memcheck adds a LEAK SUMMARY, racecheck says RACECHECK SUMMARY instead.
      note "compute-sanitizer $tool $* (exit $rc): $(grep -E 'ERROR SUMMARY|LEAK SUMMARY|RACECHECK SUMMARY' "$OUT/$log" | sed 's/^========= //' | paste -sd';' -)"
    }
    for tool in ${TR_SAN_TOOLS:-memcheck initcheck synccheck racecheck}; do
      for m in ${TR_SAN_MODELS:-mlp cnn resnet18 resnet50 vgg16bn}; do
        size=(--synthetic --train-subset 64 --val-subset 32 --batch 32 --epochs 1)
        case $m in
          resnet18|resnet50|vgg16bn) size+=(--width 0.125 --image-size 32) ;;
          cnn) size+=(--width 0.25) ;;
        esac
        if [ "$tool" = synccheck ] || [ "$tool" = racecheck ]; then
          [ "$m" = mlp ] || [ "$m" = cnn ] || continue
          size=(--synthetic --train-subset 128 --val-subset 32 --batch 64 --epochs 1)
          [ "$m" = cnn ] && size+=(--width 0.25)
        fi
        for mode in eager partial-capture full-capture; do
          san "$tool" "san_${tool}_${m}_${mode}.log" --model "$m" --mode "$mode" "${size[@]}"
        done
      done
    done
  fi
fi
if [[ " $PARTS " == *" mpi "* ]]; then
  # NCCL bootstrapped over MPI (Note [processes and ranks]): tr-train under
  # mpirun with the collectives forced must hold the plain binary's bits
  # (--state-hash), in every mode; with several GPUs, N processes must hold N
  # rank threads' bits. ci/pack_mpi.sh packs Open MPI where the machine has none.
  find_mpirun
  if [ -z "$MPIRUN" ]; then
    note "mpi part skipped: no mpirun (ci/pack_mpi.sh packs one)"
  else
    gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
    note "mpi: $("$MPIRUN" --version 2>&1 | head -1), $gpus GPU(s)"
    hashes=()
    for m in cnn resnet18; do
      args=(--device cuda --model $m --synthetic --train-subset 2048 --val-subset 512 --batch 256 --epochs 2 --amp
            --force-collectives --state-hash --watchdog-ms 60000)
      [ $m = resnet18 ] && args+=(--width 0.5)
      for mode in eager partial-capture full-capture; do
        timeout ${TR_T_MPI:-200} "$BIN/tr-train" "${args[@]}" --mode $mode > "$OUT/mpi_plain_${m}_$mode.log" 2>&1 || status=1
        timeout ${TR_T_MPI:-200} "$MPIRUN" --bind-to none -np 1 "$BIN/tr-train" "${args[@]}" --mode $mode \
          > "$OUT/mpi_np1_${m}_$mode.log" 2>&1 || status=1
        a=$(grep -o 'state hash 0x[0-9a-f]*' "$OUT/mpi_plain_${m}_$mode.log")
        b=$(grep -o 'state hash 0x[0-9a-f]*' "$OUT/mpi_np1_${m}_$mode.log")
        note "mpi: $m $mode: plain $a, mpirun -np 1 $b"
        grep -m1 'rank(s)' "$OUT/mpi_np1_${m}_$mode.log" | tee -a "$OUT/summary.txt"
        { [ -n "$a" ] && [ "$a" = "$b" ]; } || { status=1; note "mpi: $m $mode: the state differs (or a run failed)"; }
        hashes+=("$m $b")
      done
      if [ "$gpus" -ge 2 ]; then
        timeout ${TR_T_MPI:-200} "$BIN/tr-train" "${args[@]}" --gpus $gpus > "$OUT/mpi_threads_${m}_x$gpus.log" 2>&1 || status=1
        timeout ${TR_T_MPI:-200} "$MPIRUN" --bind-to none -np $gpus "$BIN/tr-train" "${args[@]}" \
          > "$OUT/mpi_procs_${m}_x$gpus.log" 2>&1 || status=1
        a=$(grep -o 'state hash 0x[0-9a-f]*' "$OUT/mpi_threads_${m}_x$gpus.log")
        b=$(grep -o 'state hash 0x[0-9a-f]*' "$OUT/mpi_procs_${m}_x$gpus.log")
        note "mpi: $m on $gpus GPUs: $gpus rank threads $a, $gpus processes $b"
        { [ -n "$a" ] && [ "$a" = "$b" ]; } || { status=1; note "mpi: $m: processes and threads differ"; }
      fi
    done
    # The modes among themselves, per model.
    for m in cnn resnet18; do
      n=$(printf '%s\n' "${hashes[@]}" | grep "^$m " | sort -u | wc -l)
      note "mpi: $m: $n distinct state hash(es) over eager, partial and full capture (1 expected)"
      [ "$n" -eq 1 ] || status=1
    done
    # The GPU equivalence tests as processes (tests/mpi/gpu_training_mpi_test.cpp):
    # one process per GPU, and two GPUs per process where there are four or more.
    if [ -x "$BIN/tr_mpi_tests" ]; then
      layouts="$gpus:1"
      [ "$gpus" -ge 4 ] && layouts+=" $((gpus / 2)):2"
      for l in $layouts; do
        np=${l%%:*} per=${l##*:}
        probe ${TR_T_MPI:-200} "$OUT/mpi_gpu_tests_np${np}x$per.log" "$MPIRUN" --bind-to none -np $np \
          -x TR_MPI_LOCAL_RANKS=$per "$BIN/tr_mpi_tests" --gtest_filter='GpuProcesses*'
        rc=$?
        [ $rc -ne 0 ] && status=1
        note "mpi: GPU equivalence tests as $np process(es) x $per GPU(s) (exit $rc)"
        grep -E '^\[ gpu mpi|PASSED|FAILED|SKIPPED|Failure' "$OUT/mpi_gpu_tests_np${np}x$per.log" | sort -u \
          | tee -a "$OUT/summary.txt"
      done
    else
      note "mpi: no tr_mpi_tests in $BIN (packed with TR_PACK_SKIP leaving it out?)"
    fi
    timeout ${TR_T_MPI:-200} "$MPIRUN" --bind-to none -np 1 "$BIN/tr-bench" --device cuda --mode all --model cnn \
      --batch 256 --warmup 10 --iters 30 --repetitions 3 --json "$OUT/mpi_bench_np1.json" > "$OUT/mpi_bench_np1.log" 2>&1 || status=1
    note "mpi: tr-bench under mpirun -np 1:"
    grep -E '^tr-bench: |^cnn ' "$OUT/mpi_bench_np1.log" | tee -a "$OUT/summary.txt"
  fi
fi
if [[ " $PARTS " == *" scaling "* ]]; then
  gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
  if [ "$gpus" -lt 2 ]; then
    note "scaling skipped: $gpus GPU visible (needs 2 or more)"
  else
    # Phase markers (TR_TRACE) and NCCL's warnings go to the logs: where a
    # multi-GPU run stops is the first thing to know.
    export TR_TRACE=1 NCCL_DEBUG=${NCCL_DEBUG:-WARN}
    nvidia-smi topo -m > "$OUT/topology.txt" 2>&1
    probe ${TR_T_NCCL:-90} "$OUT/nccl_tests.log" "$BIN/tr_tests" --gtest_filter='NcclGpu*'
    rc=$?
    [ $rc -ne 0 ] && status=1
    note "NCCL alone on $gpus GPUs (exit $rc; 124: the time limit, backtraces in nccl_tests.log.hang)"
    grep -E '^\[ nccl \]|PASSED|FAILED|Failure' "$OUT/nccl_tests.log" | tee -a "$OUT/summary.txt"
    probe ${TR_T_DP:-300} "$OUT/dp_tests.log" "$BIN/tr_tests" --gtest_filter='GpuDataParallel*'
    rc=$?
    [ $rc -ne 0 ] && status=1
    note "data-parallel tests on $gpus GPUs (exit $rc; 124: the time limit, backtraces in dp_tests.log.hang)"
    grep -E '^\[ (gpu dp|allreduce|nccl) \]|PASSED|FAILED|Failure' "$OUT/dp_tests.log" | tee -a "$OUT/summary.txt"
    [ $rc -ne 0 ] && tail -20 "$OUT/dp_tests.log" | tee -a "$OUT/summary.txt"  # the last phase markers
    dp_rc=$rc
    [ $rc -eq 124 ] && grep -A12 -E '^Thread' "$OUT/dp_tests.log.hang" | grep -E '^Thread|^#[0-9] ' | head -80 | tee -a "$OUT/summary.txt"
    # Weak scaling over 1, 2, 4, ... GPUs at a fixed batch per GPU, all modes,
    # with the gradient all-reduce inside the step beside NCCL alone. Not run
    # after a hang: it would hang the same way and spend the call's time.
    if [ $dp_rc -eq 124 ]; then
      note "weak scaling not run: the data-parallel tests hung"
      exit 1
    fi
    common="--device cuda --mode all --gpus auto --optimizer sgd --warmup 10 --iters 30 --repetitions 5"
    probe ${TR_T_SCALING:-400} "$OUT/scaling_cnn.log" "$BIN/tr-bench" $common --model cnn --batch-per-gpu 256,1024 \
      --json "$OUT/scaling_cnn.json" || status=1
    # The same with per-GPU BN: one small collective per step instead of two
    # per BN layer on the critical path.
    probe ${TR_T_SCALING:-400} "$OUT/scaling_cnn_bn_running.log" "$BIN/tr-bench" $common --model cnn \
      --batch-per-gpu 256,1024 --bn-sync running --json "$OUT/scaling_cnn_bn_running.json" || status=1
    probe ${TR_T_SCALING:-400} "$OUT/scaling_mlp.log" "$BIN/tr-bench" $common --model mlp --batch-per-gpu 200 \
      --json "$OUT/scaling_mlp.json" || status=1
    # The same sweep launched as one process per GPU (Note [processes and
    # ranks]), against the rank threads above: mpirun -np N, first 1, 2, 4 ...
    # processes. Packed Open MPI (ci/pack_mpi.sh) when the machine has none.
    find_mpirun
    if [ -n "$MPIRUN" ]; then
      probe ${TR_T_SCALING:-400} "$OUT/scaling_cnn_mpi.log" "$MPIRUN" --bind-to none -np $gpus "$BIN/tr-bench" \
        $common --model cnn --batch-per-gpu 256,1024 --json "$OUT/scaling_cnn_mpi.json" || status=1
      note "the cnn sweep as $gpus processes (mpirun), beside the rank threads"
      grep -v '^\[tr ' "$OUT/scaling_cnn_mpi.log" | tee -a "$OUT/summary.txt"
    else
      note "no mpirun: processes against threads not measured (ci/pack_mpi.sh packs one)"
    fi
    "$BIN/tr-bench" report "$OUT/scaling_cnn.json" "$OUT/scaling_cnn_bn_running.json" "$OUT/scaling_mlp.json" \
      -o "$OUT/scaling.html" > /dev/null 2>&1 || status=1
    # PyTorch DDP on the same GPUs and batches per GPU (peers/torch_ddp.py).
    PY=${TR_TORCH_PYTHON:-/opt/torch/.venv/bin/python}
    if [ -x "$PY" ] && "$PY" -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
      for bn in sync local; do
        probe ${TR_T_TORCH:-200} "$OUT/torch_ddp_bn_$bn.log" "$PY" peers/torch_ddp.py --model cnn \
          --batch-per-gpu 256,1024 --bn $bn --json "$OUT/torch_ddp_bn_$bn.json" || status=1
      done
    fi
    # Accuracy on every GPU: the same 10 epochs as the train part's AMP run,
    # with synchronised and with per-GPU BN.
    for sync in batch running; do
      probe ${TR_T_TRAIN:-240} "$OUT/train_cnn_${gpus}gpu_bn_$sync.log" "$BIN/tr-train" --device cuda --model cnn \
        --amp --epochs 10 --gpus $gpus --bn-sync $sync --data-dir "$DATA" || status=1
    done
    note "tr-bench weak scaling on $gpus GPUs"
    cat "$OUT/scaling_cnn.log" "$OUT/scaling_cnn_bn_running.log" "$OUT/scaling_mlp.log" | grep -v '^\[tr ' \
      | tee -a "$OUT/summary.txt"
    for bn in sync local; do
      [ -f "$OUT/torch_ddp_bn_$bn.log" ] || continue
      note "PyTorch DDP, BN $bn"
      grep -E '^(torch_ddp|model|cnn|mlp) ' "$OUT/torch_ddp_bn_$bn.log" | tee -a "$OUT/summary.txt"
    done
    for sync in batch running; do
      note "cnn on Fashion-MNIST on $gpus GPUs, 10 epochs, full capture, AMP, BN sync $sync:"
      grep -v '^\[tr ' "$OUT/train_cnn_${gpus}gpu_bn_$sync.log" | tee -a "$OUT/summary.txt"
    done
  fi
fi
if [[ " $PARTS " == *" scaling-zoo "* ]]; then
  # The zoo's weak scaling (issue: multi-GPU runs of the zoo): tr-bench over 1,
  # 2, 4 ... GPUs in every mode, with both --bn-sync choices, beside PyTorch DDP
  # on the same models and batches per GPU; the first model's smaller batch also
  # as one process per GPU. A model's sweep takes minutes: TR_ZOO_SCALING picks
  # the models of one call ("model:batch,batch ...").
  gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
  if [ "$gpus" -lt 2 ]; then
    note "scaling-zoo skipped: $gpus GPU visible (needs 2 or more)"
  else
    export NCCL_DEBUG=${NCCL_DEBUG:-WARN}
    PY=${TR_TORCH_PYTHON:-/opt/torch/.venv/bin/python}
    zcommon="--device cuda --mode all --gpus auto --optimizer sgd --precision amp --warmup 5 --iters 20 --repetitions 3"
    reports=()
    for spec in ${TR_ZOO_SCALING:-resnet50:32,256 resnet18:128,512}; do
      m=${spec%%:*} batches=${spec##*:}
      for sync in batch running; do
        probe ${TR_T_SCALING:-400} "$OUT/scaling_${m}_bn_$sync.log" "$BIN/tr-bench" $zcommon --model $m \
          --batch-per-gpu $batches --bn-sync $sync --json "$OUT/scaling_${m}_bn_$sync.json" || status=1
        reports+=("$OUT/scaling_${m}_bn_$sync.json")
        note "tr-bench weak scaling, $m, BN sync $sync, on $gpus GPUs"
        grep -v '^\[tr ' "$OUT/scaling_${m}_bn_$sync.log" | tee -a "$OUT/summary.txt"
      done
      if [ -x "$PY" ]; then
        for bn in sync local; do
          probe ${TR_T_TORCH:-400} "$OUT/torch_ddp_${m}_bn_$bn.log" "$PY" peers/torch_ddp.py --model $m \
            --batch-per-gpu $batches --bn $bn --warmup 5 --iters 20 --repetitions 3 \
            --json "$OUT/torch_ddp_${m}_bn_$bn.json" || status=1
          note "PyTorch DDP, $m, BN $bn"
          grep -E '^(torch_ddp|model|'$m') ' "$OUT/torch_ddp_${m}_bn_$bn.log" | tee -a "$OUT/summary.txt"
        done
      fi
    done
    # Processes against threads: the first model's smaller batch per GPU.
    find_mpirun
    first=${TR_ZOO_SCALING:-resnet50:32}
    first=${first%% *}
    m=${first%%:*} b=${first##*:}
    b=${b%%,*}
    if [ -n "$MPIRUN" ]; then
      probe ${TR_T_SCALING:-400} "$OUT/scaling_${m}_mpi.log" "$MPIRUN" --bind-to none -np $gpus "$BIN/tr-bench" \
        $zcommon --model $m --batch-per-gpu $b --json "$OUT/scaling_${m}_mpi.json" || status=1
      note "$m at $b per GPU as $gpus processes (mpirun), beside the rank threads above"
      grep -v '^\[tr ' "$OUT/scaling_${m}_mpi.log" | tee -a "$OUT/summary.txt"
    else
      note "no mpirun: processes against threads not measured (ci/pack_mpi.sh packs one)"
    fi
    "$BIN/tr-bench" report "${reports[@]}" -o "$OUT/scaling_zoo.html" > /dev/null 2>&1 || status=1
  fi
fi
exit $status
