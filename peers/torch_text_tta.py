#!/usr/bin/env python3
"""Time to a target validation loss on tr-data's text shards, in PyTorch, with tr's recipe.

The peer of `tr-bench tta --model gpt2-d6` (Note [tta targets]): the same
model (peers/torch_gpt.py's Gpt, tr's gpt2-d6 layer for layer: 6 pre-LN
blocks, 6 heads of 64, context 256, byte vocabulary padded to 264, tied head,
tr's initialisation), the same data and the same recipe, formula for formula:

  data      tr-data's shards (DIR/manifest.json; each shard's header, count and
            tokens checked against it). Training windows of T+1 tokens start
            at k*T (k = 0 .. (N-1)/T - 1), reshuffled every epoch, the last
            incomplete batch kept; validation is every window of the val split
  optimizer AdamW (betas 0.9, 0.999, eps 1e-8), decoupled weight decay on
            matrices and embeddings only; the global gradient norm clipped
  schedule  one learning rate per step: linear warm-up over floor(warmup *
            steps) steps, then cosine (or linear, constant) down to 0
  loss      cross-entropy over every token, mean over the batch's tokens
  EMA       ema += (1 - decay) * (param - ema) after every step; validation
            scores the main and the EMA weights, like tr's. --ema-decay 0:
            no EMA (no copy, no update, its loss reported as the weights')
  precision bf16 autocast with fp32 weights (tr's --precision bf16), or fp32

Modes (--mode): full-capture (default) is the fastest for this model: the whole
step (gather of the batch from the token stream on the device, forward,
backward, clipping, capturable fused AdamW, EMA) replayed as one CUDA graph,
the model's weights restored after the capture's warm-up steps; the last,
smaller batch of an epoch runs eagerly. torch-compile compiles the model
(default mode) and runs the same optimizer eagerly; eager runs it all eagerly.

Timing: the training steps between torch.cuda.synchronize() calls, every
validation (--val-every N steps, and each epoch's end) stopped apart; the
set-up (model, optimizer, capture or compile) is timed apart too. A run's time
to target is its training time at the first validation whose loss (of the
--eval weights) is at most --target-loss.

Example:
  python3 peers/torch_text_tta.py --data-dir .device/data/text --epochs 2 --batch 32 --lr 2e-3 \\
      --warmup 0.05 --schedule cosine --weight-decay 0.1 --clip-grad-norm 1 --val-every 250 \\
      --target-loss 0.9 --runs 5 --json torch_text_tta.json
"""
import argparse
import copy
import datetime
import json
import math
import os
import socket
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

import gpu_samples
import machine_state
import step_timing
import torch_gpt
from torch_tta import lr_table, stats, write  # tr's learning-rate table, the summary, the atomic write

MAGIC, VERSION, HEADER_INTS = 20240520, 1, 256


class DataError(Exception):
    """A missing or malformed shard or manifest: one line, exit 2."""


def read_split(data_dir, split, vocab):
    """The token stream (uint16 numpy array) of `split`, every shard checked against the manifest."""
    path = os.path.join(data_dir, "manifest.json")
    try:
        with open(path) as f:
            manifest = json.load(f)
        info = manifest["splits"][split]
        shards = info["shards"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise DataError(f"{path}: not a tr-data manifest ({e})")
    parts = []
    for s in shards:
        file = os.path.join(data_dir, s["file"])
        try:
            raw = np.fromfile(file, dtype=np.uint8)
        except OSError as e:
            raise DataError(f"{file}: cannot read ({e})")
        if raw.size < 4 * HEADER_INTS:
            raise DataError(f"{file}: {raw.size} bytes, shorter than the 1024-byte header")
        head = raw[:4 * HEADER_INTS].view("<i4")
        if head[0] != MAGIC or head[1] != VERSION:
            raise DataError(f"{file}: magic {head[0]} version {head[1]}, expected {MAGIC} version {VERSION}")
        count = int(head[2])
        if count != s["tokens"] or raw.size != 4 * HEADER_INTS + 2 * count:
            raise DataError(f"{file}: {count} tokens in the header, {(raw.size - 4 * HEADER_INTS) // 2} in the file, "
                            f"{s['tokens']} in the manifest")
        tokens = raw[4 * HEADER_INTS:].view("<u2")
        if tokens.size and int(tokens.max()) >= vocab:
            raise DataError(f"{file}: token {int(tokens.max())} outside the model's vocabulary of {vocab}")
        parts.append(tokens)
    stream = np.concatenate(parts) if parts else np.zeros(0, np.uint16)
    if stream.size != info["tokens"]:
        raise DataError(f"{path}: the {split} split's shards hold {stream.size} tokens, the manifest says "
                        f"{info['tokens']}")
    return stream, info


class Run:
    """One seed's model, EMA copy, optimizer and its steps over the device-resident token stream."""

    def __init__(self, a, seed, train, lrs, dev):
        torch.manual_seed(seed)
        depth, heads, head_dim, context, vocab = torch_gpt.SHAPES["gpt2-d6"]
        self.net = torch_gpt.Gpt(depth, heads, head_dim, context, vocab).to(dev)
        self.ema = copy.deepcopy(self.net) if a.ema_decay > 0 else None
        for p in self.ema.parameters() if self.ema is not None else ():
            p.requires_grad_(False)
        self.params = list(self.net.parameters())
        self.ema_params = list(self.ema.parameters()) if self.ema is not None else []
        self.initial = [p.detach().clone() for p in self.params]
        decay = [p for p in self.params if p.dim() >= 2]
        other = [p for p in self.params if p.dim() < 2]
        capturable = a.mode == "full-capture"
        self.lr = torch.zeros((), device=dev)  # a tensor, so the captured optimizer reads each step's
        self.opt = torch.optim.AdamW([{"params": decay, "weight_decay": a.weight_decay},
                                      {"params": other, "weight_decay": 0.0}],
                                     lr=self.lr if capturable else 0.0, betas=(0.9, 0.999), eps=1e-8, fused=True,
                                     capturable=capturable)
        self.fwd = torch.compile(self.net) if a.mode == "torch-compile" else self.net
        self.a, self.train, self.dev = a, train, dev
        self.lrs_dev, self.lrs_host = lrs.to(dev), lrs.tolist()  # the graph reads the device's; eager steps a float
        self.dtype = torch.bfloat16 if a.precision == "bf16" else torch.float32
        self.offsets = torch.arange(a.seq + 1, device=dev)  # (T+1,)
        self.starts = torch.zeros(a.batch, dtype=torch.int64, device=dev)  # the batch's window starts
        self.loss_sum = torch.zeros((), device=dev)
        self.graph = None

    def _body(self, starts):
        tokens = self.train[starts.view(-1, 1) + self.offsets].long()  # (B, T+1)
        ids, targets = tokens[:, :-1], tokens[:, 1:]
        self.opt.zero_grad(set_to_none=False)
        with torch.autocast("cuda", dtype=self.dtype, enabled=self.dtype != torch.float32):
            logits = self.fwd(ids)
        loss = F.cross_entropy(logits.float().flatten(0, 1), targets.flatten())
        loss.backward()
        if self.a.clip_grad_norm > 0:
            torch.nn.utils.clip_grad_norm_(self.params, self.a.clip_grad_norm, foreach=True)
        self.opt.step()
        with torch.no_grad():
            if self.ema_params:
                torch._foreach_lerp_(self.ema_params, self.params, 1.0 - self.a.ema_decay)
            self.loss_sum += loss.detach()

    def capture(self):
        """Warm up on a side stream, capture the whole step, then put the model back as it was built."""
        self.graph = step_timing.whole_step_graph(lambda: self._body(self.starts))
        self.reset()

    def reset(self):
        with torch.no_grad():
            for p, p0 in zip(self.params, self.initial):
                p.copy_(p0)
            for e, p0 in zip(self.ema_params, self.initial):
                e.copy_(p0)
            self.loss_sum.zero_()
        step_timing.zero_optimizer_state(self.opt)
        torch.cuda.synchronize()

    def step(self, starts, i):
        """Training step i (counted over the run) on the windows starting at `starts`."""
        if self.graph is not None:
            self.lr.copy_(self.lrs_dev[i])
            if starts.shape[0] == self.a.batch:
                self.starts.copy_(starts)
                self.graph.replay()
                return
            # The epoch's last, smaller batch: the same step, eagerly (the capturable optimizer runs either way).
        else:
            for g in self.opt.param_groups:
                g["lr"] = self.lrs_host[i]
        self._body(starts)

    def evaluate(self, net, val, windows):
        """Mean cross-entropy a token of `net` over every validation window."""
        total = torch.zeros((), dtype=torch.float64, device=self.dev)
        starts_all = torch.arange(windows, device=self.dev) * self.a.seq
        with torch.no_grad(), torch.autocast("cuda", dtype=self.dtype, enabled=self.dtype != torch.float32):
            for s in range(0, windows, self.a.val_batch):
                tokens = val[starts_all[s:s + self.a.val_batch].view(-1, 1) + self.offsets].long()
                logits = net(tokens[:, :-1])
                total += F.cross_entropy(logits.float().flatten(0, 1), tokens[:, 1:].flatten(), reduction="sum")
        return total.item() / (windows * self.a.seq)


def train_run(a, seed, train, val, lrs, dev):
    """One seed: every validation, each epoch's summary and the time to target."""
    t0 = time.perf_counter()
    r = Run(a, seed, train, lrs, dev)
    if a.mode == "full-capture":
        r.capture()
    torch.cuda.synchronize()
    setup_seconds = time.perf_counter() - t0
    energy = gpu_samples.EnergyMeter(step_timing.sampler())  # over the epochs, as tr-bench tta's energy_j
    windows = (train.numel() - 1) // a.seq
    val_windows = (val.numel() - 1) // a.seq
    g = torch.Generator(device=dev)
    g.manual_seed(seed)
    evals, epochs, trained, step, hit = [], [], 0.0, 0, None

    def validate(epoch):
        nonlocal hit
        t1 = time.perf_counter()
        loss = r.evaluate(r.net, val, val_windows)
        ema_loss = r.evaluate(r.ema, val, val_windows) if r.ema is not None else loss
        value = ema_loss if a.eval == "ema" else loss
        e = {"epoch": epoch, "step": step, "train_seconds": trained, "eval_seconds": time.perf_counter() - t1,
             "loss": loss, "ema_loss": ema_loss, "value": value}
        if hit is None and value <= a.target_loss:
            hit = e
        evals.append(e)
        print(f"seed {seed:<4} epoch {epoch:3d} step {step:7d}  train {trained:8.3f} s  eval {e['eval_seconds']:6.3f} s"
              f"  val_loss {loss:.4f}  ema {ema_loss:.4f}{'  <- target' if hit is e else ''}", flush=True)

    for epoch in range(1, a.epochs + 1):
        r.loss_sum.zero_()
        starts = torch.randperm(windows, generator=g, device=dev) * a.seq
        epoch_seconds = 0.0
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for s in range(0, windows, a.batch):
            r.step(starts[s:s + a.batch], step)
            step += 1
            if a.val_every > 0 and step % a.val_every == 0 and s + a.batch < windows:
                torch.cuda.synchronize()
                dt = time.perf_counter() - t0
                trained += dt
                epoch_seconds += dt
                validate(epoch)
                t0 = time.perf_counter()
        torch.cuda.synchronize()
        dt = time.perf_counter() - t0
        trained += dt
        epoch_seconds += dt
        steps = math.ceil(windows / a.batch)
        epochs.append({"epoch": epoch, "train_seconds": trained, "epoch_seconds": epoch_seconds,
                       "train_loss": r.loss_sum.item() / steps})
        validate(epoch)
    final = evals[-1]["value"]
    return {"seed": seed, "setup_seconds": setup_seconds, "epochs": epochs, "evals": evals,
            "time_to_target_s": hit["train_seconds"] if hit else None, "steps_to_target": hit["step"] if hit else 0,
            "final_loss": final, "energy_j": energy.joules()}


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", required=True, help="tr-data's shards and manifest.json")
    ap.add_argument("--mode", choices=("full-capture", "torch-compile", "eager"), default="full-capture")
    ap.add_argument("--precision", choices=("bf16", "fp32"), default="bf16")
    ap.add_argument("--seq", type=int, default=256, help="window length T (default and at most 256)")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--schedule", choices=("constant", "linear", "cosine"), default="cosine")
    ap.add_argument("--warmup", type=float, default=0.05)
    ap.add_argument("--weight-decay", type=float, default=0.1)
    ap.add_argument("--clip-grad-norm", type=float, default=1.0)
    ap.add_argument("--ema-decay", type=float, default=0.0, help="0 (default, tr's recipe for gpt2-d6): no EMA")
    ap.add_argument("--val-every", type=int, default=250)
    ap.add_argument("--val-batch", type=int, default=256, help="windows a validation forward takes")
    ap.add_argument("--eval", choices=("main", "ema"), default="main")
    ap.add_argument("--target-loss", type=float, required=True)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--seed", type=int, default=1, help="first seed; run i uses seed + i")
    ap.add_argument("--json", default="")
    a = ap.parse_args()
    checks = [(1 <= a.seq <= 256, "--seq must be in [1, 256]"), (a.epochs >= 1, "--epochs must be >= 1"),
              (a.batch >= 1, "--batch must be >= 1"), (a.lr > 0, "--lr must be > 0"),
              (0 <= a.warmup < 1, "--warmup must be in [0, 1)"), (a.weight_decay >= 0, "--weight-decay must be >= 0"),
              (a.clip_grad_norm >= 0, "--clip-grad-norm must be >= 0"),
              (0 <= a.ema_decay < 1, "--ema-decay must be in [0, 1)"), (a.val_every >= 0, "--val-every must be >= 0"),
              (a.val_batch >= 1, "--val-batch must be >= 1"), (a.target_loss > 0, "--target-loss must be > 0"),
              (a.runs >= 1, "--runs must be >= 1"), (a.seed >= 0, "--seed must be >= 0"),
              (a.eval == "main" or a.ema_decay > 0, "--eval ema needs an EMA: --ema-decay is 0")]
    for ok, msg in checks:
        if not ok:
            ap.error(msg)
    return a


def main():
    a = parse_args()
    if not torch.cuda.is_available():
        print("torch_text_tta: no CUDA device", file=sys.stderr)
        return 2
    torch.backends.cuda.matmul.allow_tf32 = False  # fp32 means fp32
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    vocab = torch_gpt.SHAPES["gpt2-d6"][4]
    try:
        train_np, _ = read_split(a.data_dir, "train", vocab)
        val_np, val_info = read_split(a.data_dir, "val", vocab)
    except DataError as e:
        print(f"torch_text_tta: {e}", file=sys.stderr)
        return 2
    for name, s in (("train", train_np), ("val", val_np)):
        if s.size < a.seq + 1:
            print(f"torch_text_tta: the {name} split has {s.size} tokens, fewer than a window of {a.seq + 1}",
                  file=sys.stderr)
            return 2
    train = torch.from_numpy(train_np.astype(np.int32)).to(dev)
    val = torch.from_numpy(val_np.astype(np.int32)).to(dev)
    windows = (train.numel() - 1) // a.seq
    steps_per_epoch = math.ceil(windows / a.batch)
    lrs = torch.tensor(lr_table(a.lr, a.schedule, a.warmup, a.epochs * steps_per_epoch), dtype=torch.float32)
    tokens_per_byte = val_info["tokens"] / val_info["bytes"]
    out = {"context": {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                       "host": socket.gethostname(), "torch": torch.__version__, "cuda": torch.version.cuda,
                       "gpu": torch.cuda.get_device_name(), "command": " ".join(sys.argv),
                       "gpu_state": machine_state.gpu_state(), "train_windows": windows,
                       "val_windows": (val.numel() - 1) // a.seq, "steps_per_epoch": steps_per_epoch,
                       "tokens_per_byte": tokens_per_byte},
           "recipe": dict(vars(a)), "runs": [], "summary": None}
    print(f"torch_text_tta: torch {torch.__version__} on {torch.cuda.get_device_name()}; gpt2-d6, {a.mode}, "
          f"{a.precision}, batch {a.batch} x {a.seq} tokens ({steps_per_epoch} steps/epoch), {a.epochs} epochs, "
          f"target val loss {a.target_loss:g} ({a.eval} weights), {a.runs} runs", flush=True)
    for k in range(a.runs):
        out["runs"].append(train_run(a, a.seed + k, train, val, lrs, dev))
        runs = out["runs"]
        times = [r["time_to_target_s"] for r in runs if r["time_to_target_s"] is not None]
        out["summary"] = {"target_loss": a.target_loss, "eval": a.eval, "runs": len(runs), "reached": len(times),
                          "time_to_target": stats(times), "final_loss": stats([r["final_loss"] for r in runs]),
                          "setup_seconds": stats([r["setup_seconds"] for r in runs]),
                          "train_seconds": stats([r["epochs"][-1]["train_seconds"] for r in runs])}
        out["device_memory"] = step_timing.device_memory()  # the peaks over the runs so far (PyTorch's allocator)
        write(a.json, out)  # after every run: a run cut short keeps the finished ones
    s = out["summary"]
    print(f"target val loss {a.target_loss:g}: reached in {s['reached']}/{s['runs']} runs")
    if s["time_to_target"]:
        tt = s["time_to_target"]
        print(f"time to target: {tt['mean']:.3f} +- {tt['std']:.3f} s (min {tt['min']:.3f}, max {tt['max']:.3f})")
    fl = s["final_loss"]
    print(f"final validation loss: {fl['mean']:.4f} +- {fl['std']:.4f} (min {fl['min']:.4f}, max {fl['max']:.4f}), "
          f"{fl['mean'] / math.log(2) * tokens_per_byte:.4f} bits per byte; training "
          f"{s['train_seconds']['mean']:.3f} s, set-up {s['setup_seconds']['mean']:.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
