#!/usr/bin/env python3
"""tr-bench and its PyTorch peer timed in turns, with a confidence interval for
the ratio of their step times.

Timed in two separate blocks of one GPU call, tr and its peer see different
machines: clocks, temperature and neighbours drift between the blocks, and the
ratio carries that drift. Here they alternate (tr, peer, tr, peer, ...), so a
drift falls on both alike, and each round pairs one tr time with the peer time
measured right after it.

  python3 ci/interleave.py --rounds N --out DIR --tr CMD --peer CMD
                           (--tr-case K=V[,K=V..] | --tr-tta MODEL)
                           --peer-case NAME --figure NAME [--history FILE]

Each command runs through the shell, with {json} replaced by the path its report
must be written to (DIR/tr_round1.json, DIR/peer_round1.json, ...); its output
goes to the same path with .log. What is read from each report:
  tr, --tr-case    the median step time (ms) of that tr-bench case
  tr, --tr-tta M   the mean time to the target (s) of model M in a tr-bench tta
                   report, every seed having reached it
  peer, NAME       the real_time (ms) of the entry NAME (peers/torch_step.py,
                   peers/torch_gpt.py: torch_step/model:cnn/mode:full-capture/batch:256)
  peer, llmc/batch:B     the median step time (ms) of micro-batch B in
                   ci/llmc/run.sh's llmc_gpt2.json
  peer, torch_tta  the mean time to the target (s) of peers/torch_tta.py, every
                   seed having reached it
The two sides must be in one unit (ms with ms, s with s).

Per round r: tr value t_r, peer value p_r. Reported: mean and sample standard
deviation of each, the ratio of the means R = mean(t) / mean(p) (below 1: tr is
faster), and a 95 % confidence interval for the ratio from the paired
log-ratios d_r = ln(t_r / p_r): exp(mean(d) +- t_{0.975, n-1} * sd(d) / sqrt(n)).
Writes DIR/interleave.json (reports/schema.md, "Interleaved runs") and, with
--history, appends one JSON line to FILE.

Exit 0 on success; 1 when a command fails, a report or its case is missing, or
an output cannot be written; 2 on bad input. Standard library only: CI runs it
with a plain python3.
"""
import argparse
import json
import math
import re
import os
import shlex
import statistics
import subprocess
import sys
import time

TOOL = "interleave"
MIN_ROUNDS = 3  # two rounds give one degree of freedom: t = 12.7, an interval too wide to say anything
# The 0.975 quantiles of Student's t for n - 1 = 1 .. 30 degrees of freedom, to 4
# decimals (as scipy.stats.t.ppf(0.975, df) gives them; the NIST/SEMATECH
# e-Handbook of Statistical Methods, section 1.3.6.7.2, lists the same to 3).
T_975 = [12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646, 2.3060, 2.2622, 2.2281,
         2.2010, 2.1788, 2.1604, 2.1448, 2.1314, 2.1199, 2.1098, 2.1009, 2.0930, 2.0860,
         2.0796, 2.0739, 2.0687, 2.0639, 2.0595, 2.0555, 2.0518, 2.0484, 2.0452, 2.0423]
# Beyond 30 degrees of freedom (31 rounds) the normal quantile: 4 % below t's at 31 (2.0395), less
# further on, so the interval is at most that much too narrow.
Z_975 = 1.96
# A tr-bench case is one (model, mode, variant, ranks, batch); keys --tr-case leaves out take these
# values, as peers/compare.py matches: the full-batch training step on one GPU.
TR_CASE_DEFAULTS = {"variant": "train_base", "ranks": "1"}


LLMC_CASE = re.compile(r"llmc/batch:(\d+)")
TORCH_TTA_CASE = "torch_tta"


class Failure(Exception):
    """A run or a report went wrong: exit 1 with the message."""


class Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, not argparse's usage block
        print(f"{TOOL}: error: {message}", file=sys.stderr)
        sys.exit(2)


def bad_input(message):
    print(f"{TOOL}: error: {message}", file=sys.stderr)
    sys.exit(2)


def parse_args(argv):
    ap = Parser(prog="ci/interleave.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, required=True, help=f"rounds of one tr and one peer run (>= {MIN_ROUNDS})")
    ap.add_argument("--out", required=True, help="folder for the reports, logs and interleave.json")
    ap.add_argument("--tr", required=True, help="the tr-bench command; {json} is its report's path")
    ap.add_argument("--peer", required=True, help="the peer's command; {json} is its report's path")
    which = ap.add_mutually_exclusive_group(required=True)
    which.add_argument("--tr-case", help="KEY=VALUE[,KEY=VALUE..] of the tr-bench case")
    which.add_argument("--tr-tta", metavar="MODEL", help="the model of a tr-bench tta report")
    ap.add_argument("--peer-case", required=True, help="the peer's entry: NAME, llmc/batch:B or torch_tta")
    ap.add_argument("--figure", required=True, help="what is measured, in words (kept in the outputs)")
    ap.add_argument("--history", help="append one JSON line per run to this file")
    a = ap.parse_args(argv)
    if a.rounds < MIN_ROUNDS:
        bad_input(f"--rounds {a.rounds}: at least {MIN_ROUNDS} are needed for a confidence interval")
    for flag, cmd in (("--tr", a.tr), ("--peer", a.peer)):
        if "{json}" not in cmd:
            bad_input(f"{flag} '{cmd}' has no {{json}}: where would its report go?")
    if not a.peer_case or not a.figure:
        bad_input("--peer-case and --figure must not be empty")
    if a.tr_tta is not None and not a.tr_tta:
        bad_input("--tr-tta must name a model")
    tr_unit = "s" if a.tr_tta else "ms"
    peer_unit = "s" if a.peer_case == TORCH_TTA_CASE else "ms"
    if tr_unit != peer_unit:
        bad_input(f"tr gives {tr_unit} and the peer's '{a.peer_case}' {peer_unit}: their ratio would mean nothing")
    a.unit = tr_unit
    a.tr_case = parse_case(a.tr_case) if a.tr_case else {"tta": a.tr_tta}
    return a


def parse_case(text):
    """'model=cnn,batch=256' -> {'model': 'cnn', 'batch': '256', 'variant': ..., 'ranks': ...}."""
    case = {}
    for item in text.split(","):
        key, eq, value = item.partition("=")
        if not eq or not key or not value:
            bad_input(f"--tr-case '{text}': '{item}' is not KEY=VALUE")
        if key in case:
            bad_input(f"--tr-case '{text}': '{key}' is given twice")
        case[key] = value
    for key, value in TR_CASE_DEFAULTS.items():
        case.setdefault(key, value)
    return case


def run(label, r, template, out_dir):
    """Runs one command; returns its report's path. A report left by an earlier
    call is removed first, so a run that writes none cannot pass for one that did."""
    path = os.path.join(out_dir, f"{label}_round{r}.json")
    log = os.path.join(out_dir, f"{label}_round{r}.log")
    if os.path.exists(path):
        os.remove(path)
    cmd = template.replace("{json}", shlex.quote(path))
    with open(log, "w") as f:
        rc = subprocess.run(cmd, shell=True, stdout=f, stderr=subprocess.STDOUT).returncode
    if rc != 0:
        raise Failure(f"round {r}: the {label} command exited {rc}: {cmd} (its output: {log})")
    return path


def load(path, key="benchmarks"):
    """The report as a dict, which must hold a list under key."""
    try:
        with open(path, encoding="utf-8") as f:
            report = json.load(f)
    except (OSError, ValueError) as e:
        raise Failure(f"{path}: cannot read the report: {e}")
    if not isinstance(report, dict) or not isinstance(report.get(key), list):
        raise Failure(f"{path}: not the report expected (no '{key}' list)")
    return report


def positive(value, path, what):
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not value > 0:
        raise Failure(f"{path}: {what} is {value!r}, not a positive number")
    return float(value)


def step_ms(entry, path, what):
    """An entry's real_time, checked to be a positive time in ms."""
    value, unit = entry.get("real_time"), entry.get("time_unit", "ms")
    if "error" in entry:
        raise Failure(f"{path}: {what} failed: {entry['error']}")
    if unit != "ms":
        raise Failure(f"{path}: {what} has its real_time in {unit!r}, not ms")
    return positive(value, path, f"{what}'s real_time")


def tr_value(path, case):
    """(value, context, notes) of one tr report: a bench case's median in ms, or a tta model's mean in s;
    notes: what the round keeps beside the value (a bench case's throttled repetitions)."""
    if "tta" in case:
        return tr_tta_mean(path, case["tta"])
    return tr_median(path, case)


def all_reached(summary, path, what):
    """A mean time to the target means something only when every seed reached it."""
    runs, reached = summary.get("runs"), summary.get("reached")
    if not isinstance(runs, int) or runs < 1 or reached != runs:
        raise Failure(f"{path}: {what}: {reached!r} of {runs!r} seeds reached the target; no time to compare")


def tr_tta_mean(path, model):
    report = load(path)
    tta = report.get("tta")
    if not isinstance(tta, dict) or tta.get("model") != model:
        raise Failure(f"{path}: no tta block of model {model}")
    summary = tta.get("summary") or {}
    all_reached(summary, path, f"model {model}")
    mean = (summary.get("time_to_target_s") or {}).get("mean")
    return positive(mean, path, f"model {model}'s mean time to the target"), report.get("context", {}), \
        round_notes("tr", runs_mean(tta.get("runs")))


def tr_median(path, case):
    """The median step time (ms) of the one tr-bench case matching every key of case."""
    report = load(path)
    found = [b for b in report["benchmarks"]
             if b.get("run_type") == "aggregate" and b.get("aggregate_name") == "median"
             and all(str(b.get(k, 1 if k == "ranks" else None)) == v for k, v in case.items())]
    what = "case " + ",".join(f"{k}={v}" for k, v in case.items())
    if not found:
        raise Failure(f"{path}: no median of {what}")
    if len(found) > 1:
        raise Failure(f"{path}: {len(found)} medians match {what}; name more keys in --tr-case")
    return step_ms(found[0], path, what), report.get("context", {}), round_notes("tr", found[0])


# What a round keeps of each side's row beside its value, where the row has it: the GPU's throttled
# repetitions and energy (Note [machine state], harness/lib/bench/machine_counters.h; the peers count them
# alike, peers/gpu_samples.py) and the device memory (tr: Note [device memory]; the peer: PyTorch's allocator
# and the device-wide use).
# A time-to-accuracy side gives its runs' mean energy_j (over each run's epochs) instead; llm.c its
# device_memory_used_max_bytes (peers/gpu_watch.py).
ROUND_KEYS = ("throttled_repetitions", "energy_j_per_step", "power_w", "energy_j", "device_memory_peak_bytes",
              "max_memory_reserved", "device_memory_used_bytes", "device_memory_used_max_bytes")


def round_notes(side, row):
    return {f"{side}_{k}": row[k] for k in ROUND_KEYS if isinstance(row.get(k), (int, float))}


def runs_mean(runs):
    """{key: mean over the runs} of the ROUND_KEYS every run of a tta report has as a number."""
    runs = [r for r in runs or [] if isinstance(r, dict)]
    keys = [k for k in ROUND_KEYS if runs and all(isinstance(r.get(k), (int, float)) for r in runs)]
    return {k: statistics.mean(r[k] for r in runs) for k in keys}


def peer_value(path, name):
    """(value, context, notes) of the peer's report: a step time in ms, or for torch_tta a mean time to the
    target in s; context: its machine and versions (llm.c's report keeps them at its top level)."""
    if name == TORCH_TTA_CASE:
        report = load(path, "runs")
        summary = report.get("summary") or {}
        all_reached(summary, path, "torch_tta")
        mean = positive((summary.get("time_to_target") or {}).get("mean"), path, "the mean time to the target")
        return mean, report.get("context", {}), round_notes("peer", {**runs_mean(report.get("runs")),
                                                                      **(report.get("device_memory") or {})})
    llmc = LLMC_CASE.fullmatch(name)
    if llmc:
        batch = int(llmc.group(1))
        report = load(path, "results")
        found = [x for x in report["results"] if isinstance(x, dict) and x.get("batch") == batch]
        if len(found) != 1 or found[0].get("status") != "ok":
            raise Failure(f"{path}: micro-batch {batch} did not run once and well ({len(found)} results)")
        context = {k: v for k, v in report.items() if k != "results"}
        return positive(found[0].get("median_ms"), path, f"micro-batch {batch}'s median_ms"), context, \
            round_notes("peer", found[0])
    report = load(path)
    found = [b for b in report["benchmarks"] if b.get("name") == name]
    if not found:
        raise Failure(f"{path}: no entry named {name}")
    # The peer rewrites its file per case: the last entry is the newest.
    return step_ms(found[-1], path, name), report.get("context", {}), round_notes("peer", found[-1])


def summary(t, p):
    """Means, sample standard deviations, the ratio of the means and the 95 %
    interval of the paired log-ratios (see the top of the file)."""
    n = len(t)
    d = [math.log(a / b) for a, b in zip(t, p)]
    d_mean, d_sd = statistics.mean(d), statistics.stdev(d)
    q = T_975[n - 2] if n - 1 <= len(T_975) else Z_975  # T_975[0] is one degree of freedom
    half = q * d_sd / math.sqrt(n)
    return {"tr": {"mean": statistics.mean(t), "std": statistics.stdev(t)},
            "peer": {"mean": statistics.mean(p), "std": statistics.stdev(p)},
            "ratio": statistics.mean(t) / statistics.mean(p),
            "ci_low": math.exp(d_mean - half), "ci_high": math.exp(d_mean + half),
            "confidence": 0.95, "t_quantile": q, "log_ratio": {"mean": d_mean, "sd": d_sd}}


def write_json(path, obj):
    """Whole or absent (as harness/lib/atomic_file.h): write aside, then rename."""
    try:
        with open(path + ".tmp", "w", encoding="utf-8") as f:
            json.dump(obj, f, indent=1)
            f.write("\n")
        os.replace(path + ".tmp", path)
    except OSError as e:
        raise Failure(f"{path}: cannot write: {e}")


def append_history(path, result, source):
    """One JSON line per run, in the history's format (reports/schema.md, "The history of the headline
    figures"): tr and peer are the means in the figure's unit; source is the interleave.json, relative to the
    history file's folder, so both can travel together (a GPU check's detail.tgz)."""
    ctx = result["context"]
    line = {"date": result["date"], "commit": ctx.get("git_commit", ""), "machine": ctx.get("device_name", ""),
            "figure": result["figure"], "tr": result["tr"]["mean"],
            "peer": result["peer"]["mean"], "ratio": result["ratio"], "ci_low": result["ci_low"],
            "ci_high": result["ci_high"], "rounds": len(result["rounds"]),
            "source": os.path.relpath(source, os.path.dirname(os.path.abspath(path)))}
    try:
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps(line) + "\n")
    except OSError as e:
        raise Failure(f"{path}: cannot append: {e}")


def interleave(a):
    """The rounds, in turns; prints each round's row as it ends, so drift shows while it runs."""
    rounds, context, peer_context = [], None, None
    print(f"{TOOL}: {a.figure}: {a.rounds} rounds of tr then peer")
    print(f"{'round':>5} {'tr_' + a.unit:>10} {'peer_' + a.unit:>10} {'tr/peer':>8}", flush=True)
    for r in range(1, a.rounds + 1):
        t, ctx, notes = tr_value(run("tr", r, a.tr, a.out), a.tr_case)
        p, pctx, peer_notes = peer_value(run("peer", r, a.peer, a.out), a.peer_case)
        context = ctx if context is None else context  # the first round's machine and commit
        peer_context = pctx if peer_context is None else peer_context
        rounds.append({"round": r, "tr": t, "peer": p, "ratio": t / p, **notes, **peer_notes})
        print(f"{r:5d} {t:10.4f} {p:10.4f} {t / p:8.3f}", flush=True)
    return rounds, context, peer_context


def main(argv):
    a = parse_args(argv)
    try:
        os.makedirs(a.out, exist_ok=True)
        rounds, context, peer_context = interleave(a)
        stats = summary([x["tr"] for x in rounds], [x["peer"] for x in rounds])
        result = {"figure": a.figure, "unit": a.unit, "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                  "commands": {"tr": a.tr, "peer": a.peer},
                  "cases": {"tr": a.tr_case, "peer": a.peer_case},
                  "context": context, "peer_context": peer_context, "rounds": rounds, **stats}
        source = os.path.join(a.out, "interleave.json")
        write_json(source, result)
        if a.history:
            append_history(a.history, result, source)
    except (Failure, OSError) as e:
        print(f"{TOOL}: error: {e}", file=sys.stderr)
        return 1
    print(f"{'mean':>5} {stats['tr']['mean']:10.4f} {stats['peer']['mean']:10.4f} {stats['ratio']:8.3f}")
    print(f"{'std':>5} {stats['tr']['std']:10.4f} {stats['peer']['std']:10.4f}")
    print(f"{TOOL}: tr/peer {stats['ratio']:.3f}, 95 % interval {stats['ci_low']:.3f} .. {stats['ci_high']:.3f} "
          f"(paired log-ratios, t = {stats['t_quantile']}; below 1: tr is faster); {source}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
