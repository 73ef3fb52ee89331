#!/usr/bin/env python3
"""Every committed GPU report carries the GPU's state, its energy and its peak
device memory (issue: "measurements a skeptic accepts"), whatever wrote it:
tr-bench (run and tta), tr_bench_ops, the PyTorch peers, llm.c's run.sh and
ci/interleave.py; and no power it records exceeds what the board can draw.
A report that predates a field is named in OLDER below with
what it lacks and why it stays; an entry there that no longer matches a gap
is itself an error, so the list only shrinks.

  python3 tests/report_machine_state.py REPO_ROOT
"""
import json
import os
import sys

# Reports written before a field existed, each with the fields it lacks (as check() names them). They stay
# because the figures built on them have not been measured again on a machine that records the rest; the
# re-run that replaces a file removes its line here.
H200_BEFORE_NVML = "H200 runs before the NVML state, energy and memory counters existed"
OLDER = {
    "reports/h100/gpt2/llmc_gpt2.json": ("energy",
                                         "batch 1's steps last 1.6 s, under the 2 s its energy window needs"),
    "reports/h100/gpt2_ops/bench.json": ("gpu_state", "tr_bench_ops before it recorded gpu_state"),
    "reports/h100/gpt2/machine_state/bench_gpt2_nvml.json": ("memory plausible_power",
                                                             "the NVML counters alone, before the energy window"),
    "reports/h100/gpt2/torch_gpt2_bf16.json": ("energy",
                                               "torch-compile at batch 4: no energy window in its repetitions"),
    "reports/h100/busy/bench_busy.json": ("energy", "repetitions under 0.5 s, before the energy window"),
    "reports/h100/interleave/cnn-whole-step-graph/interleave.json": ("energy memory peer_context",
                                                                     "rounds before their counters"),
    "reports/h100/interleave/tta-cnn/interleave.json": ("gpu_state energy memory peer_context",
                                                        "rounds before their counters"),
    "reports/h100/interleave/torch_cnn_compile.json": ("energy", "the peer before it read NVML"),
    **{f"reports/h200/compile/{n}.json": ("gpu_state energy memory", H200_BEFORE_NVML)
       for n in ("torch_r50", "torch_vgg", "tr_cnn_1", "tr_cnn_2", "tr_cnn_gs_1", "tr_cnn_gs_2", "tr_r50_1",
                 "tr_r50_2", "tr_vgg_1", "tr_vgg_2")},
    **{f"reports/h200/gpu_check/{n}.json": ("gpu_state energy memory", H200_BEFORE_NVML)
       for n in ("bench_amp_split", "bench_cnn_amp", "bench_cnn_amp_gridsync", "bench_cnn_fp32", "bench_mlp_amp",
                 "bench_mlp_fp32", "torch_amp", "torch_cnn_amp")},
    "reports/h200/gpu_check/ops_bench.json": ("gpu_state", H200_BEFORE_NVML),
    **{f"reports/h200/tta/{n}.json": ("gpu_state energy memory", H200_BEFORE_NVML)
       for n in ("tta_cnn", "tta_mlp", "tta_resnet18", "tta_torch_cnn", "tta_torch_mlp", "tta_torch_resnet18")},
    **{f"reports/h200/zoo/{n}.json": ("gpu_state energy memory", H200_BEFORE_NVML)
       for n in ("bench_zoo_amp", "bench_zoo_full", "torch_zoo_full")},
    **{f"reports/h200x2/scaling/{n}.json": ("gpu_state energy memory",
                                            "two H200s before the counters; no multi-GPU machine lent since")
       for n in ("scaling_cnn", "scaling_cnn_bn_running", "scaling_mlp", "torch_ddp_bn_local", "torch_ddp_bn_sync")},
}
# Not GPU reports: the CPU's counter baseline for the bench gate.
NOT_GPU = {"reports/baselines/cpu_counters.json"}


def state_ok(ctx):
    g = (ctx or {}).get("gpu_state")
    return isinstance(g, dict) and g.get("nvml") == "ok"


def flat_state_ok(ctx):
    return (ctx or {}).get("gpu_state.nvml") == "ok"  # tr_bench_ops: Google Benchmark's flat context


def every(rows, *keys):
    """Each row has one of keys as a positive number (and there is a row): older reports wrote 0 J for
    repetitions the energy counter did not see."""
    return bool(rows) and all(any(_positive(r.get(k)) for k in keys) for r in rows)


def _positive(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0


# A power the board cannot draw: the energy counter advances in steps, and a window shorter than a few of
# them reads one step too many or too few (an H100 at 700 W read 1017 W over 55 ms). The board's limit
# holds on average over such windows; a tenth more leaves room for its own regulation.
POWER_MARGIN = 1.1


def powers(node):
    """Every *power_w number in a report (rows, rounds, results)."""
    if isinstance(node, dict):
        for k, v in node.items():
            if k.endswith("power_w") and _positive(v):
                yield v
            else:
                yield from powers(v)
    elif isinstance(node, list):
        for v in node:
            yield from powers(v)


def power_limit(report):
    for ctx in (report.get("context"), report.get("peer_context"), report):
        g = (ctx or {}).get("gpu_state") if isinstance(ctx, dict) else None
        if isinstance(g, dict):
            try:
                return float(g.get("power_limit_w"))
            except (TypeError, ValueError):
                pass
    return None


def check(report):
    """The kind of report and the set of what it lacks among gpu_state, energy, memory, peer_context and
    plausible_power (no power above the board's limit)."""
    kind, lacks = check_fields(report)
    limit = power_limit(report)
    if limit and any(p > POWER_MARGIN * limit for p in powers(report)):
        lacks.add("plausible_power")
    return kind, lacks


def check_fields(report):
    lacks = set()
    ctx = report.get("context") if isinstance(report, dict) else None
    if "figure" in report and "rounds" in report:  # ci/interleave.py
        rounds = report["rounds"]
        if not state_ok(ctx) and not state_ok(report.get("peer_context")):
            lacks.add("gpu_state")
        if not (every(rounds, "tr_energy_j_per_step", "tr_energy_j") and
                every(rounds, "peer_energy_j_per_step", "peer_energy_j")):
            lacks.add("energy")
        if not (every(rounds, "tr_device_memory_peak_bytes") and
                every(rounds, "peer_max_memory_reserved", "peer_device_memory_used_bytes",
                      "peer_device_memory_used_max_bytes")):
            lacks.add("memory")
        if not isinstance(report.get("peer_context"), dict):
            lacks.add("peer_context")
        return "interleave", lacks
    if report.get("peer") == "llm.c train_gpt2cu":
        ok = [r for r in report.get("results", []) if r.get("status") == "ok"]
        if not state_ok(report):
            lacks.add("gpu_state")
        if not every(ok, "energy_j_per_step"):
            lacks.add("energy")
        if not every(ok, "device_memory_used_max_bytes"):
            lacks.add("memory")
        return "llm.c", lacks
    if "tta" in report or ("runs" in report and "summary" in report):  # tr-bench tta, peers/torch_*tta.py
        runs = report["tta"].get("runs", []) if "tta" in report else report["runs"]
        if not state_ok(ctx):
            lacks.add("gpu_state")
        if not every(runs, "energy_j"):
            lacks.add("energy")
        if not (every(runs, "device_memory_peak_bytes") or isinstance(report.get("device_memory"), dict)):
            lacks.add("memory")
        return "tta", lacks
    rows = [b for b in report.get("benchmarks", []) if "error" not in b and b.get("run_type") != "aggregate"]
    if str((ctx or {}).get("executable", "")).endswith("tr_bench_ops"):
        # Op micro-benchmarks: a step's energy and memory do not apply to one op replayed in a graph.
        return "ops", set() if flat_state_ok(ctx) else {"gpu_state"}
    if not state_ok(ctx):
        lacks.add("gpu_state")
    if not every(rows, "energy_j_per_step"):
        lacks.add("energy")
    if not every(rows, "device_memory_peak_bytes", "max_memory_reserved"):
        lacks.add("memory")
    return "bench", lacks


def self_test():
    """check() on a whole report of each kind finds nothing; each field taken away is found missing."""
    ok = {"gpu_state": {"nvml": "ok"}}
    row = {"energy_j_per_step": 0.5, "device_memory_peak_bytes": 9, "max_memory_reserved": 9}
    whole = {
        "bench": {"context": ok, "benchmarks": [dict(row), {"run_type": "aggregate"}]},
        "tta": {"context": ok, "tta": {"runs": [{"energy_j": 80.0, "device_memory_peak_bytes": 9}]}},
        "llm.c": {"peer": "llm.c train_gpt2cu", **ok,
                  "results": [{"status": "ok", "energy_j_per_step": 1.0, "device_memory_used_max_bytes": 9}]},
        "interleave": {"figure": "f", "context": ok, "peer_context": ok,
                       "rounds": [{"tr_energy_j_per_step": 1.0, "peer_energy_j_per_step": 1.0,
                                   "tr_device_memory_peak_bytes": 9, "peer_max_memory_reserved": 9}]},
        "ops": {"context": {"executable": "bin/tr_bench_ops", "gpu_state.nvml": "ok"}, "benchmarks": []},
    }
    for kind, report in whole.items():
        assert check(report) == (kind, set()), (kind, check(report))
    bare = json.loads(json.dumps(whole))
    bare["bench"]["benchmarks"][0]["energy_j_per_step"] = 0  # an older report's 0 J
    del bare["tta"]["tta"]["runs"][0]["device_memory_peak_bytes"]
    bare["llm.c"]["gpu_state"] = {"nvml": "unavailable: no driver"}
    del bare["interleave"]["peer_context"]
    bare["ops"]["context"]["gpu_state.nvml"] = "unavailable"
    bare["interleave"]["context"]["gpu_state"]["power_limit_w"] = "700.00"
    bare["interleave"]["rounds"][0]["tr_power_w"] = 1017.0
    want = {"bench": {"energy"}, "tta": {"memory"}, "llm.c": {"gpu_state"},
            "interleave": {"peer_context", "plausible_power"}, "ops": {"gpu_state"}}
    for kind, report in bare.items():
        assert check(report) == (kind, want[kind]), (kind, check(report))


def main(root):
    self_test()
    errors, seen = [], 0
    for folder, _, files in os.walk(os.path.join(root, "reports")):
        for name in sorted(files):
            if not name.endswith(".json"):
                continue
            rel = os.path.relpath(os.path.join(folder, name), root)
            if rel in NOT_GPU:
                continue
            seen += 1
            try:
                with open(os.path.join(root, rel), encoding="utf-8") as f:
                    report = json.load(f)
            except (OSError, ValueError) as e:
                errors.append(f"{rel}: cannot read: {e}")
                continue
            kind, lacks = check(report)
            allowed = set(OLDER[rel][0].split()) if rel in OLDER else set()
            if lacks - allowed:
                errors.append(f"{rel} ({kind} report): lacks {', '.join(sorted(lacks - allowed))}")
            if allowed - lacks:
                errors.append(f"{rel}: OLDER says it lacks {', '.join(sorted(allowed - lacks))}, "
                              "but it has it now: shorten its entry")
    for rel in sorted(set(OLDER) - set(_walk(root))):
        errors.append(f"{rel}: in OLDER but not in the repository: remove its entry")
    for e in errors:
        print(e, file=sys.stderr)
    if errors:
        print(f"report_machine_state: {len(errors)} problem(s)", file=sys.stderr)
        return 1
    print(f"report_machine_state: ok ({seen} GPU reports; {len(OLDER)} older ones lack what OLDER names)")
    return 0


def _walk(root):
    for folder, _, files in os.walk(os.path.join(root, "reports")):
        for name in files:
            yield os.path.relpath(os.path.join(folder, name), root)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
