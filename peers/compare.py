#!/usr/bin/env python3
"""Side by side: tr-bench JSON reports and a peers/torch_step.py report.

  python3 peers/compare.py TORCH.json TR.json [TR.json ...]

For every (model, batch, mode) present in both, prints the median step time of
each and torch/tr (above 1: tr is faster); where the peer also timed
torch.compile (torch_step.py --compile-largest), torch.compile against tr's full
capture at that batch. tr cases are matched on the train_base variant with one
GPU. Exit 2 on unreadable input.
"""
import json
import sys


def fields(name):
    parts = name.split("/")
    return parts[0], dict(p.split(":", 1) for p in parts[1:] if ":" in p)


def tr_medians(path):
    out = {}
    for b in json.load(open(path))["benchmarks"]:
        if b.get("aggregate_name") != "median":
            continue
        _, f = fields(b["run_name"] if "run_name" in b else b["name"].rsplit("_median", 1)[0])
        if f.get("variant") != "train_base" or f.get("gpus", "1") != "1":
            continue
        out[(f["model"], int(f["batch"]), f["mode"])] = b["real_time"]
    return out


def torch_times(path):
    out = {}
    for b in json.load(open(path))["benchmarks"]:
        if "real_time" not in b:
            continue
        _, f = fields(b["name"])
        out[(f["model"], int(f["batch"]), f["mode"])] = b["real_time"]
    return out


def main(argv):
    if len(argv) < 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    try:
        peer = torch_times(argv[1])
        ours = {}
        for p in argv[2:]:
            ours.update(tr_medians(p))
    except (OSError, ValueError, KeyError) as e:
        print(f"compare: cannot read the reports: {e}", file=sys.stderr)
        return 2
    order = ["eager", "partial-capture", "full-capture"]
    keys = sorted((k for k in set(peer) & set(ours) if k[2] in order), key=lambda k: (k[0], k[1], order.index(k[2])))
    if not keys:
        print("compare: no (model, batch, mode) in common", file=sys.stderr)
        return 2
    print(f"{'model':8} {'batch':>6} {'mode':16} {'tr_ms':>9} {'torch_ms':>9} {'torch/tr':>9}")
    for k in keys:
        print(f"{k[0]:8} {k[1]:6d} {k[2]:16} {ours[k]:9.4f} {peer[k]:9.4f} {peer[k] / ours[k]:9.2f}")
    compiled = sorted(k for k in peer if k[2] == "torch-compile" and (k[0], k[1], "full-capture") in ours)
    for k in compiled:
        tr_full = ours[(k[0], k[1], "full-capture")]
        print(f"{k[0]:8} {k[1]:6d} {'torch.compile':16} {tr_full:9.4f} {peer[k]:9.4f} {peer[k] / tr_full:9.2f}"
              "   (tr full capture against torch.compile, eager step)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
