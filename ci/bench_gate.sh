#!/usr/bin/env bash
# The harness end to end on the CPU, as CI runs it after the unit tests:
#  1. a short tr-bench run (every mode, both models, two rank counts);
#  2. `tr-bench gate --counters-only` against the committed baseline
#     (reports/baselines/cpu_counters.json): launches per step, graph counts and
#     arena bytes must not change unless the baseline is updated on purpose;
#  3. Google Benchmark's own compare.py reads the baseline and the new report;
#  4. `tr-bench report` renders both as HTML, checked in headless Chromium.
# TR_UPDATE_BASELINE=1 rewrites the baseline instead of gating.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${TR_BIN:-build/bin}
OUT=${OUT_DIR:-build/bench-gate}
mkdir -p "$OUT"
BASE=reports/baselines/cpu_counters.json
run=("$BIN/tr-bench" --device cpu --model mlp,cnn --width 0.25 --batch 32 --ranks 1,2 --variants train_base,train_last,val_base
     --warmup 1 --iters 3 --repetitions 3)
if [ "${TR_UPDATE_BASELINE:-0}" = 1 ]; then
  "${run[@]}" --json "$BASE"
  echo "bench_gate: wrote $BASE"
  exit 0
fi
"${run[@]}" --json "$OUT/current.json"
"$BIN/tr-bench" gate --counters-only --baseline "$BASE" --current "$OUT/current.json"
bash ci/check_compare_py.sh "$BASE" "$OUT/current.json"
TR_BENCH="$BIN/tr-bench" OUT_DIR="$OUT/html" bash ci/check_html_report.sh "$BASE" "$OUT/current.json"
echo "bench_gate: ok"
