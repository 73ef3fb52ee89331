#!/usr/bin/env bash
# Runs llm.c's GPT-2 trainer (train_gpt2cu, built by ci/llmc/build.sh) on one
# NVIDIA GPU as a performance peer of tr's GPT-2 benchmark, and writes its step
# times as JSON.
#
# What it runs: GPT-2 124M from random initialisation (-e d12), bf16, sequence
# length T = 1024, for each micro-batch B of a list, with total batch B*T (no
# gradient accumulation), for LLMC_STEPS optimizer steps (AdamW, llm.c's
# defaults otherwise). Validation runs on one batch only where llm.c insists
# (before the first and after the last step, outside the timed steps); no text
# sampling, no checkpoints, no HellaSwag. The data are synthetic: one train and
# one val shard in llm.c's token format (a 256 x int32 header: magic 20240520,
# version 1, token count; then uint16 tokens), random tokens below 50257 from a
# fixed seed, so nothing is downloaded.
#
# What it reports: llm.c prints one line per step with the step's time (CUDA
# events around the whole step: forward, backward, gradient norm, AdamW).
# Steps after the first LLMC_SKIP (warm-up: cuBLAS/cuDNN set-up) give, per B,
# the median ms per step and tokens/s = B*T / median; llm.c's own smoothed
# tok/s and MFU at the last step are kept beside them. peers/gpu_watch.py runs
# it, sampling NVML every 20 ms and timing each line it prints: the energy
# between the last warm-up step's line and the last step's gives, per B,
# tr-bench's energy_j_per_step, power_w, samples_per_joule and tokens_per_joule
# (where that window lasts 2 s), the clocks, temperature and throttling over
# it, and the most device memory in use over the run
# (device_memory_used_max_bytes); the report's gpu_state is
# peers/machine_state.py's. A batch that fails (out
# of memory, say) is recorded as failed with the end of its log, and the rest
# still run.
#
# Usage (on the GPU machine, from the repository root):
#   bash ci/llmc/run.sh
#   Environment:
#     OUT               where the results go (default ./llmc-out): llmc_gpt2.json, llmc_gpt2.log
#     LLMC_BIN          the binary (default .device-llmc/train_gpt2cu; a .xz beside it is unpacked)
#     LLMC_BATCHES      micro-batches, comma-separated (default 4,16,64)
#     LLMC_STEPS        optimizer steps per batch (default 250: at micro-batch 4, about 11 ms a step on an
#                       H100, the timed steps then last past the 2 s the energy counter needs)
#     LLMC_SKIP         warm-up steps left out of the statistics (default 5)
#     LLMC_TOKENS       tokens in the train shard (default 4194304; val gets a quarter)
#     LLMC_TIMEOUT      seconds allowed per batch (default 240)
#     LLMC_EXTRA_ARGS   more train_gpt2cu flags for every batch (e.g. "-r 0 -ge 2")
#     LLMC_COMMIT       llm.c commit to record (default: llmc_build.txt beside the binary)
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
ROOT=$PWD
OUT=${OUT:-$PWD/llmc-out}
mkdir -p "$OUT"
LOG=$OUT/llmc_gpt2.log
: > "$LOG"
BIN=${LLMC_BIN:-.device-llmc/train_gpt2cu}
BATCHES=${LLMC_BATCHES:-4,16,64}
STEPS=${LLMC_STEPS:-250}
SKIP=${LLMC_SKIP:-5}
NTOK=${LLMC_TOKENS:-4194304}
TMO=${LLMC_TIMEOUT:-240}
EXTRA=${LLMC_EXTRA_ARGS:-}
T=1024
WORK=$(mktemp -d /tmp/llmc-run.XXXXXX)

PY=""
for p in /opt/torch/.venv/bin/python /usr/bin/python3 python3; do
  command -v "$p" >/dev/null 2>&1 && { PY=$p; break; }
done
[ -n "$PY" ] || { echo "run.sh: no python3 found" | tee -a "$LOG"; exit 2; }

if [ ! -x "$BIN" ] && [ -f "$BIN.xz" ]; then
  xz -dc "$BIN.xz" > "$WORK/train_gpt2cu" && chmod +x "$WORK/train_gpt2cu" && BUILDINFO=$(dirname "$BIN")/llmc_build.txt && BIN=$WORK/train_gpt2cu
fi
BUILDINFO=${BUILDINFO:-$(dirname "$BIN")/llmc_build.txt}
[ -x "$BIN" ] || { echo "run.sh: no binary at $BIN (build it with ci/llmc/build.sh)" | tee -a "$LOG"; exit 2; }
BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")
[ -f "$BUILDINFO" ] || BUILDINFO=/dev/null
COMMIT=${LLMC_COMMIT:-$(sed -n 's/^llmc_commit=//p' "$BUILDINFO")}

SP=/opt/torch/.venv/lib/python3.12/site-packages
export LD_LIBRARY_PATH="$SP/nvidia/cudnn/lib:$SP/nvidia/cublas/lib:$SP/nvidia/cu13/lib:$SP/nvidia/cuda_nvrtc/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
{
  echo "== run.sh $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "binary: $BIN"; cat "$BUILDINFO"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
  ldd "$BIN"
} >> "$LOG" 2>&1
if ldd "$BIN" | grep -q "not found"; then
  echo "run.sh: libraries not found:" | tee -a "$LOG"; ldd "$BIN" | grep "not found" | tee -a "$LOG"
fi

# synthetic shards in llm.c's format
"$PY" - "$WORK" "$NTOK" <<'EOF' >> "$LOG" 2>&1 || { echo "run.sh: could not write the token shards" | tee -a "$LOG"; exit 2; }
import array, random, struct, sys
work, ntok = sys.argv[1], int(sys.argv[2])
rng = random.Random(1234)
for name, n in (("synth_train_000000.bin", ntok), ("synth_val_000000.bin", max(ntok // 4, 65 * 1024 + 1))):
    header = array.array("i", [0] * 256)
    header[0], header[1], header[2] = 20240520, 1, n
    toks = array.array("H", (rng.randrange(50257) for _ in range(n)))
    with open(f"{work}/{name}", "wb") as f:
        f.write(header.tobytes()); f.write(toks.tobytes())
    print(f"wrote {work}/{name}: {n} tokens")
EOF

# one run per micro-batch; each run's log goes to $WORK/b$B.log and into $LOG
LINEBUF=""
command -v stdbuf > /dev/null && LINEBUF="stdbuf -oL -eL"
IFS=, read -ra BS <<< "$BATCHES"
: > "$WORK/runs.tsv"
for B in "${BS[@]}"; do
  cmd=("$BIN" -i "$WORK/synth_train_*.bin" -j "$WORK/synth_val_*.bin" -e d12 -b "$B" -t "$T" -d $((B * T))
       -x "$STEPS" -v 1000000 -m 1 -s 0 -h 0 -n 0)
  # shellcheck disable=SC2206
  [ -n "$EXTRA" ] && cmd+=($EXTRA)
  echo "== B=$B: ${cmd[*]}" | tee -a "$LOG"
  # gpu_watch.py samples the GPU beside it (energy, clocks, memory) and times each line llm.c prints.
  # Its lines must reach the watcher as they are printed: stdbuf makes llm.c's stdout line-buffered (a pipe
  # would otherwise hold them until exit, and the window check below would drop the energy).
  (cd "$WORK" && "$PY" "$ROOT/peers/gpu_watch.py" --out "$WORK/b$B.watch.json" -- timeout "$TMO" $LINEBUF \
    "${cmd[@]}") > "$WORK/b$B.log" 2>&1
  rc=$?
  cat "$WORK/b$B.log" >> "$LOG"
  echo "== B=$B exit $rc" >> "$LOG"
  printf '%s\t%s\t%s\n' "$B" "$rc" "${cmd[*]}" >> "$WORK/runs.tsv"
done

GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
DRIVER=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1)
"$PY" - "$WORK" "$OUT/llmc_gpt2.json" "$T" "$SKIP" "$STEPS" "$COMMIT" "$GPU" "$DRIVER" "$BUILDINFO" "$ROOT" <<'EOF' 2>&1 | tee -a "$LOG"
import datetime, json, os, re, statistics, sys
work, out, T, skip, steps, commit, gpu, driver, buildinfo, root = sys.argv[1:]
T, skip, steps = int(T), int(skip), int(steps)
sys.path.insert(0, os.path.join(root, "peers"))
import gpu_samples
gpu_state = {"nvml": "unavailable: no gpu_watch.py output"}


def watched(B, lines, step_lines, step_ms):
    """The timed steps' energy, clocks and throttling, and the run's peak device memory, from
    gpu_watch.py's samples: the window runs from the line of the step before the first timed one to the
    last step's. Where the lines came later than printed (buffered: the window shorter than half the
    steps' own time), the window says nothing and only the memory stays."""
    global gpu_state
    try:
        w = json.load(open(f"{work}/b{B}.watch.json"))
    except (OSError, ValueError):
        return {}
    gpu_state = w.get("gpu_state", gpu_state)
    times, samples = w.get("line_times", []), w.get("samples", [])
    first = max(len(step_lines) - len(step_ms) - 1, 0)  # the step line before the first timed one
    if len(times) != len(lines) or len(step_lines) < 2:
        return gpu_samples.watched_window(samples, 0, -1, 0, B, T)
    t0, t1 = times[step_lines[first]], times[step_lines[-1]]
    steps = len(step_lines) - 1 - first
    if t1 - t0 < 0.5 * sum(step_ms[-steps:]) / 1000:
        return {**gpu_samples.watched_window(samples, 0, -1, 0, B, T),
                "energy_window": "none: the step lines came together (buffered), not as the steps ran"}
    return gpu_samples.watched_window(samples, t0, t1, steps, B, T)


build = {}
try:
    for line in open(buildinfo):
        k, _, v = line.rstrip("\n").partition("=")
        if k: build[k] = v
except OSError:
    pass
pat = re.compile(r"^step\s+(\d+)/(\d+) \|.*?\|\s*([0-9.]+) ms \|\s*(-?[0-9.]+)% \w+ MFU \|\s*([0-9.]+) tok/s")
results = []
for line in open(f"{work}/runs.tsv"):
    B, rc, cmd = line.rstrip("\n").split("\t")
    B, rc = int(B), int(rc)
    text = open(f"{work}/b{B}.log", errors="replace").read()
    lines = text.splitlines()
    step_lines = [i for i, line in enumerate(lines) if pat.match(line)]
    rows = [pat.match(lines[i]).groups() for i in step_lines]
    ms = [float(r[2]) for r in rows]
    r = {"batch": B, "seq_len": T, "tokens_per_step": B * T, "command": cmd, "exit_code": rc,
         "steps_reported": len(ms), "warmup_steps_skipped": skip}
    timed = ms[skip:]
    if rc == 0 and timed:
        med = statistics.median(timed)
        r.update(status="ok", median_ms=round(med, 3), mean_ms=round(statistics.mean(timed), 3),
                 min_ms=round(min(timed), 3), max_ms=round(max(timed), 3),
                 tokens_per_s=round(B * T * 1000.0 / med, 1),
                 steps_timed=len(timed), step_ms=ms,
                 llmc_ema_tok_per_s_last=float(rows[-1][4]), llmc_mfu_percent_last=float(rows[-1][3]),
                 **watched(B, lines, step_lines, timed))
    else:
        why = "timed out" if rc == 124 else ("exit code %d" % rc if rc else "too few step lines")
        if "out of memory" in text.lower(): why += " (out of memory)"
        r.update(status="failed", reason=why, step_ms=ms, log_tail=text.splitlines()[-8:])
    results.append(r)
doc = {"peer": "llm.c train_gpt2cu", "model": "gpt2 124M (d12, random init)", "precision": "bf16",
       "llmc_commit": commit, "cudnn_attention": build.get("cudnn_attention") == "1",
       "build": build, "gpu": gpu, "driver": driver, "gpu_state": gpu_state,
       "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
       "steps": steps, "statistic": f"median over steps {skip + 1}..{steps}", "results": results}
with open(out, "w") as f:
    json.dump(doc, f, indent=2)
print(f"llm.c {commit[:12]} on {gpu}, bf16, T={T}, cuDNN attention: {doc['cudnn_attention']}")
print(f"{'B':>4} {'status':>7} {'ms/step':>9} {'tokens/s':>11} {'llm.c tok/s':>12} {'MFU %':>6}")
for r in results:
    if r["status"] == "ok":
        print(f"{r['batch']:>4} {'ok':>7} {r['median_ms']:>9.2f} {r['tokens_per_s']:>11.0f} "
              f"{r['llmc_ema_tok_per_s_last']:>12.0f} {r['llmc_mfu_percent_last']:>6.1f}")
    else:
        print(f"{r['batch']:>4} {'failed':>7}  {r['reason']}")
print(f"wrote {out}")
sys.exit(1 if any(r["status"] != "ok" for r in results) else 0)
EOF
rc=$?
rm -rf "$WORK"
exit $rc
