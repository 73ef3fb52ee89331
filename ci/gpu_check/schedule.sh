# ci/gpu_check.sh's `schedule` part (sourced by it, with its helpers and variables).
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
