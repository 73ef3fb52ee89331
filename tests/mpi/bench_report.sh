#!/usr/bin/env bash
# bench_report.sh BIN_DIR: tr-bench under mpirun -np 2 --ranks auto writes one
# report: 1 rank (process 0 alone) and 2 ranks in 2 processes, the latter with
# each counter's range over the processes and its weak-scaling efficiency; the
# gate refuses to compare it with a threads report unless asked to.
set -euo pipefail
bin=$1
source "$(dirname "$0")/mpi_env.sh"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
common=(--device cpu --model mlp --mode full-capture --batch-per-gpu 100 --warmup 1 --iters 2 --repetitions 2)
"${MPIRUN[@]}" -np 2 "$bin/tr-bench" "${common[@]}" --ranks auto --json "$dir/procs.json" > "$dir/procs.log" 2>&1 ||
  { cat "$dir/procs.log"; exit 1; }
"$bin/tr-bench" "${common[@]}" --ranks 1,2 --json "$dir/threads.json" > /dev/null
[ "$(ls "$dir"/*.json | wc -l)" -eq 2 ] || { echo "bench_report.sh: expected exactly one report per run"; ls "$dir"; exit 1; }
python3 - "$dir/procs.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
c = r["context"]
assert c["launch"] == "processes" and c["processes"] == 2, c
assert c["mpi_version"].startswith("Open MPI"), c["mpi_version"]
runs = [b for b in r["benchmarks"] if b["run_type"] == "iteration"]
assert sorted({b["ranks"] for b in runs}) == [1, 2], [b["ranks"] for b in runs]
two = [b for b in runs if b["ranks"] == 2]
for k in ("step_ms_process_min", "step_ms_process_max", "graph_launches_per_step_process_max",
          "weak_scaling_efficiency"):
    assert all(k in b for b in two), k
assert all(b["step_ms_process_min"] <= b["step_ms_process_max"] for b in two)
assert all(0 < b["weak_scaling_efficiency"] for b in two)
print("bench_report.sh: one report, %s with weak-scaling efficiency %.2f, context launch=%s processes=%d "
      "hosts=%s (%s)" % (two[0]["run_name"], two[0]["weak_scaling_efficiency"], c["launch"], c["processes"],
                         c["hosts"], c["mpi_version"]))
PY
if "$bin/tr-bench" gate --counters-only --baseline "$dir/threads.json" --current "$dir/procs.json" > "$dir/gate.log" 2>&1; then
  echo "bench_report.sh: the gate compared processes with threads unasked"; exit 1
fi
grep -q "launch differs (baseline 'threads', current 'processes'" "$dir/gate.log" || { cat "$dir/gate.log"; exit 1; }
"$bin/tr-bench" gate --counters-only --allow-launch-mismatch --baseline "$dir/threads.json" --current "$dir/procs.json" \
  > "$dir/gate2.log" 2>&1 || { echo "bench_report.sh: the gate refused with --allow-launch-mismatch"; cat "$dir/gate2.log"; exit 1; }
echo "bench_report.sh: ok (gate refused the launch mismatch, then compared with --allow-launch-mismatch)"
