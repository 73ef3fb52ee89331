#!/usr/bin/env bash
# The harness end to end on the CPU, as CI runs it after the unit tests:
#  1. a short tr-bench run (every mode, both models, two rank counts);
#  2. `tr-bench gate --counters-only` against the committed baseline
#     (reports/baselines/cpu_counters.json): launches per step, graph counts and
#     arena bytes must not change unless the baseline is updated on purpose;
#  3. Google Benchmark's own compare.py reads the baseline and the new report;
#  4. `tr-bench report` renders both as HTML, checked in headless Chromium;
#  5. the step-time gate, able to fail: one case run twice in this job, 8
#     repetitions each (the U test can reach p = 2/12870). The second run must
#     pass against the first within 50% (a shared 2-core machine moves a few
#     percent between runs; 50% still catches a 2x slowdown), and the same
#     report with its step times doubled must fail with exit 1.
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
timed=("$BIN/tr-bench" --device cpu --model mlp --width 0.25 --batch 32 --ranks 1 --mode full-capture
       --variants train_base --warmup 2 --iters 20 --repetitions 8)
"${timed[@]}" --json "$OUT/timed_reference.json" > /dev/null
"${timed[@]}" --json "$OUT/timed_current.json" > /dev/null
"$BIN/tr-bench" gate --threshold 0.5 --baseline "$OUT/timed_reference.json" --current "$OUT/timed_current.json"
python3 - "$OUT/timed_current.json" "$OUT/timed_doubled.json" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
for entry in report["benchmarks"]:
    entry["real_time"] *= 2
    entry["cpu_time"] *= 2
json.dump(report, open(sys.argv[2], "w"), indent=1)
PY
set +e
"$BIN/tr-bench" gate --threshold 0.5 --baseline "$OUT/timed_reference.json" --current "$OUT/timed_doubled.json" \
  > "$OUT/timed_doubled.gate.txt"
code=$?
set -e
if [ "$code" != 1 ]; then
  cat "$OUT/timed_doubled.gate.txt"
  echo "bench_gate: a 2x slowdown was not a regression (gate exit $code, want 1)" >&2
  exit 1
fi
grep -q "REGRESSION" "$OUT/timed_doubled.gate.txt"
echo "bench_gate: ok"
