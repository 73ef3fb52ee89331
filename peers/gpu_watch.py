#!/usr/bin/env python3
"""Runs a peer that cannot sample the GPU itself (llm.c's train_gpt2cu) and
samples it from outside: NVML every --interval seconds (energy counter, clocks,
temperature, throttle reasons, device memory in use; gpu_samples.py), and the
time each line of the command's output appeared, so that a report can take the
energy between two of its lines (gpu_samples.watched_window).

  python3 peers/gpu_watch.py --out WATCH.json [--gpu 0] [--interval 0.02] -- CMD ARGS...

The command's stdout and stderr pass through to stdout, one stream, as they
came. WATCH.json: {"command", "exit_code", "gpu_state", "why_not" (why there
are no samples, else ""), "line_times" (seconds from the start, one per output
line), "samples" ([{"t", "energy_mj", "sm_mhz", "mem_mhz", "temperature_c",
"reasons", "memory_used_bytes"}])}. Exits with the command's status (2 when it
cannot start).
"""
import argparse
import json
import os
import subprocess
import sys
import threading
import time

import gpu_samples
import machine_state


def sample_until(sampler, stop, interval, t0, out):
    while True:
        s = sampler.sample()
        if s:
            out.append({"t": time.perf_counter() - t0, **s})
        if stop.wait(interval):
            return


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--gpu", type=int, default=0, help="nvidia-smi's index of the GPU the command uses")
    ap.add_argument("--interval", type=float, default=0.02)
    ap.add_argument("command", nargs=argparse.REMAINDER)
    a = ap.parse_args(argv)
    cmd = a.command[1:] if a.command[:1] == ["--"] else a.command
    if not cmd or not a.interval > 0:
        print("gpu_watch: usage: gpu_watch.py --out WATCH.json [--gpu N] [--interval S] -- CMD ...", file=sys.stderr)
        return 2
    state = machine_state.gpu_state(a.gpu)
    sampler = gpu_samples.Sampler(state.get("pci_bus_id", "")) if state.get("nvml") == "ok" else None
    why_not = state["nvml"] if sampler is None else sampler.why_not
    samples, line_times, stop = [], [], threading.Event()
    t0, thread = time.perf_counter(), None
    if sampler and sampler.available():
        thread = threading.Thread(target=sample_until, args=(sampler, stop, a.interval, t0, samples), daemon=True)
        thread.start()
    try:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    except OSError as e:
        stop.set()
        print(f"gpu_watch: cannot run {cmd[0]}: {e}", file=sys.stderr)
        return 2
    for line in proc.stdout:
        line_times.append(time.perf_counter() - t0)
        sys.stdout.buffer.write(line)
        sys.stdout.buffer.flush()
    rc = proc.wait()
    stop.set()
    if thread:
        thread.join()
    with open(a.out + ".tmp", "w") as f:
        json.dump({"command": cmd, "exit_code": rc, "gpu_state": state, "why_not": why_not,
                   "line_times": line_times, "samples": list(samples)}, f)
    os.replace(a.out + ".tmp", a.out)
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
