#!/usr/bin/env python3
"""Time to a target accuracy on Fashion-MNIST in PyTorch, with tr's training recipe.

Trains one of tr's models (peers/torch_models.py: mlp, cnn, resnet18; resnet18
with a 1-channel stem on the images zero-padded to 32x32) for --runs seeds and
reports, per run, the training seconds until the test accuracy first reaches
--target-acc at the end of an epoch.

The recipe is tr-train's, formula for formula:
  input     x = (u8 / 255 - 0.2860) / 0.3530; training batches optionally
            mirrored (--flip), shifted with zero fill (--translate N, as
            RandomCrop(padding=N) before normalisation) and cut out (--cutout S,
            zero in normalised space), in that order; reshuffled every epoch,
            the last incomplete batch kept
  optimizer sgd: Nesterov momentum, weight decay coupled into the gradient;
            adamw: decoupled weight decay; both decay conv and linear weights only
  schedule  one learning rate per step: linear warm-up over floor(warmup * steps)
            steps, then constant, linear or cosine down to 0
  loss      softmax cross-entropy with label smoothing, mean over the batch
  EMA       ema += (1 - decay) * (param - ema) after every step, BN running
            statistics included (with --amp the EMA also moves on a step the
            loss scaler skipped, toward the unchanged weights)
fp32 means fp32 (TF32 off); --amp is torch.autocast(float16) with GradScaler.

Modes (--mode): full-capture (default) is PyTorch's fastest here: the whole
step (the batch gathered from the device-resident training set, its
augmentation with the default CUDA generator, forward, backward, GradScaler
with the fused optimizer reading a device learning rate, EMA, metrics)
replayed as one CUDA graph; the model, optimizer and scaler are put back as
built after the capture's warm-up steps, and an epoch's last, smaller batch
runs the same step eagerly. eager runs every step eagerly with the foreach
optimizer, as most training scripts do (GradScaler then reads the device from
the host every step).

Timing: the training loop of every epoch between torch.cuda.synchronize()
calls; evaluation (main and EMA weights on all 10000 test images after every
epoch) is timed apart, and so is each run's set-up (model, optimizer,
capture). An untimed warm-up with a throw-away model runs first so cuDNN
autotuning and lazy initialisation are not counted.

Example:
  python3 peers/torch_tta.py --model cnn --epochs 8 --flip --translate 2 --tta flip \\
      --runs 5 --target-acc 0.94 --json tta_torch_cnn.json
"""
import argparse
import copy
import datetime
import gzip
import json
import math
import os
import socket
import statistics
import struct
import sys
import time
import zlib

import torch
import torch.nn as nn
import torch.nn.functional as F

import gpu_samples
import machine_state
import step_timing
import torch_models

FMNIST_MEAN, FMNIST_STD = 0.2860, 0.3530
CLASSES = 10

# name: (builder(width, classes) for 1-channel input, default batch, default lr
# when --optimizer is not given, 0: the optimizer's default) -- tr-train's defaults.
PEERS = {
    "mlp": (lambda w, k: torch_models.mlp(w, k), 200, 0.0),
    "cnn": (lambda w, k: torch_models.cnn(w, k, channels=1), 256, 0.0),
    "resnet18": (lambda w, k: torch_models.resnet18(w, k, channels=1), 512, 0.2),
}
DEFAULT_LR = {"sgd": 0.05, "adamw": 1e-3}
DEFAULT_WD = {"sgd": 5e-4, "adamw": 1e-4}
DEFAULT_WARMUP = {"sgd": 0.1, "adamw": 0.0}


class DataError(Exception):
    """A missing or malformed data file: reported in one line, exit 2."""


def read_idx(path, magic, ndim):
    """The uint8 tensor of an IDX (.gz) file, shape (dims...) from its header."""
    try:
        with gzip.open(path, "rb") as f:
            raw = f.read()
    except (OSError, EOFError, zlib.error) as e:
        raise DataError(f"{path}: cannot read ({e})")
    head = 4 + 4 * ndim
    if len(raw) < head:
        raise DataError(f"{path}: {len(raw)} bytes, shorter than an IDX header")
    (m,) = struct.unpack(">I", raw[:4])
    if m != magic:
        raise DataError(f"{path}: magic number {m:#010x}, expected {magic:#010x}")
    dims = struct.unpack(">" + "I" * ndim, raw[4:head])
    want = math.prod(dims)
    if dims[0] == 0 or want == 0:
        raise DataError(f"{path}: empty (dimensions {dims})")
    if len(raw) - head != want:
        raise DataError(f"{path}: {len(raw) - head} data bytes, the header's dimensions {dims} need {want}")
    return torch.frombuffer(bytearray(memoryview(raw)[head:]), dtype=torch.uint8).view(*dims)


def load_split(data_dir, prefix):
    """(images (N, H, W) uint8, labels (N,) int64) of the split `prefix` (train or t10k)."""
    images = read_idx(os.path.join(data_dir, f"{prefix}-images-idx3-ubyte.gz"), 0x00000803, 3)
    labels_path = os.path.join(data_dir, f"{prefix}-labels-idx1-ubyte.gz")
    labels = read_idx(labels_path, 0x00000801, 1)
    if images.shape[0] != labels.shape[0]:
        raise DataError(f"{labels_path}: {labels.shape[0]} labels for {images.shape[0]} images")
    if int(labels.max()) >= CLASSES:
        raise DataError(f"{labels_path}: label {int(labels.max())}, expected < {CLASSES}")
    return images, labels.long()


def pad_to(images, side):
    """(N, H, W) -> (N, side, side), zeros around, centred (an odd pixel goes bottom/right, as tr)."""
    n, h, w = images.shape
    if h == side and w == side:
        return images
    if h > side or w > side:
        raise DataError(f"the images are {h}x{w}, larger than the model's {side}x{side} input")
    out = torch.zeros((n, side, side), dtype=torch.uint8)
    top, left = (side - h) // 2, (side - w) // 2
    out[:, top:top + h, left:left + w] = images
    return out


def f32(v):
    return struct.unpack("f", struct.pack("f", v))[0]


def lr_table(base, kind, warmup, total):
    """One learning rate per optimizer step, as tr's make_lr_table (float32 entries)."""
    warm = math.floor(warmup * total)
    lo = base * 0.0  # final_fraction 0
    table = []
    for i in range(total):
        if i < warm:
            lr = base * (i + 1) / warm
        elif kind == "constant":
            lr = base
        else:
            p = (i - warm) / max(1, total - warm)
            lr = base + (lo - base) * p if kind == "linear" else lo + 0.5 * (base - lo) * (1 + math.cos(math.pi * p))
        table.append(f32(lr))
    return table


class Pipeline:
    """u8 batches (B, side, side) -> normalised model input (B, 1, side, side), on the GPU."""

    def __init__(self, a, side, channels_last, dev):
        self.flip, self.translate, self.cutout = a.flip, a.translate, a.cutout
        self.side, self.channels_last, self.dev = side, channels_last, dev
        self.grid = torch.arange(side, device=dev)  # (side,)

    def layout(self, x):
        return x.contiguous(memory_format=torch.channels_last) if self.channels_last else x

    def normalise(self, u8):
        return ((u8.float() / 255.0 - FMNIST_MEAN) / FMNIST_STD).unsqueeze(1)

    def test(self, u8):
        return self.layout(self.normalise(u8))

    def train(self, u8, g):
        """Flip, translate (u8, zero fill), normalise, cut out; random draws from g, per sample."""
        b, s, dev = u8.shape[0], self.side, self.dev
        if self.flip:
            mirror = torch.rand(b, generator=g, device=dev) < 0.5  # (B,)
            u8 = torch.where(mirror.view(b, 1, 1), u8.flip(2), u8)
        if self.translate > 0:
            n = self.translate
            padded = u8.new_zeros((b, s + 2 * n, s + 2 * n))
            padded[:, n:n + s, n:n + s] = u8
            oy = torch.randint(0, 2 * n + 1, (b,), generator=g, device=dev)  # crop offsets, shift = n - offset
            ox = torch.randint(0, 2 * n + 1, (b,), generator=g, device=dev)
            rows = (oy.view(b, 1) + self.grid).view(b, s, 1)  # (B, H, 1)
            cols = (ox.view(b, 1) + self.grid).view(b, 1, s)  # (B, 1, W)
            u8 = padded[torch.arange(b, device=dev).view(b, 1, 1), rows, cols]  # (B, H, W)
        x = self.normalise(u8)  # (B, 1, H, W)
        if self.cutout > 0:
            c = self.cutout
            y0 = torch.randint(0, s, (b,), generator=g, device=dev).view(b, 1) - c // 2
            x0 = torch.randint(0, s, (b,), generator=g, device=dev).view(b, 1) - c // 2
            in_rows = (self.grid >= y0) & (self.grid < y0 + c)  # (B, H)
            in_cols = (self.grid >= x0) & (self.grid < x0 + c)  # (B, W)
            x = x.masked_fill((in_rows.view(b, s, 1) & in_cols.view(b, 1, s)).view(b, 1, s, s), 0.0)
        return self.layout(x)


def param_groups(net, wd):
    """Conv and linear weights decay; biases and BN parameters do not."""
    decay, other = [], []
    for m in net.modules():
        for name, p in m.named_parameters(recurse=False):
            (decay if isinstance(m, (nn.Conv2d, nn.Linear)) and name == "weight" else other).append(p)
    groups = [{"params": decay, "weight_decay": wd}, {"params": other, "weight_decay": 0.0}]
    return [g for g in groups if g["params"]]


class Trainer:
    """One model, its EMA copy, optimizer and loss scaler; step(x, y, i) is training step i
    (lrs[i]); with --mode full-capture, capture() and replay(idx, i) run it as one CUDA graph."""

    def __init__(self, a, logit_scale, conv, lrs, dev):
        net = PEERS[a.model][0](a.width, CLASSES).to(dev)
        self.net = net.to(memory_format=torch.channels_last) if conv else net
        self.params = sum(p.numel() for p in self.net.parameters())
        self.ema = copy.deepcopy(self.net)
        for p in self.ema.parameters():
            p.requires_grad_(False)
        floats = lambda m: list(m.parameters()) + [t for t in m.buffers() if t.is_floating_point()]
        self.main_state, self.ema_state = floats(self.net), floats(self.ema)  # same order: a deep copy
        groups = param_groups(self.net, a.weight_decay)
        self.captured = a.mode == "full-capture"
        self.lrs_host, self.lrs_dev = lrs, torch.tensor(lrs, dtype=torch.float32, device=dev)
        # Full capture: the fused optimizers take the scaler's scale and inf flag on the device and read the
        # learning rate from a device tensor, so the step holds no host read and each replay its own rate.
        self.lr = torch.zeros((), device=dev)
        fast = {"lr": self.lr, "fused": True} if self.captured else {"lr": 0.0}
        if a.optimizer == "sgd":
            self.opt = torch.optim.SGD(groups, momentum=a.momentum, dampening=0.0, nesterov=True, **fast)
        else:
            self.opt = torch.optim.AdamW(groups, betas=(0.9, 0.999), eps=1e-8, capturable=self.captured, **fast)
        self.scaler = torch.amp.GradScaler("cuda", init_scale=65536.0, growth_interval=1000) if a.amp else None
        self.graph = None
        self.amp, self.logit_scale = a.amp, logit_scale
        self.smoothing, self.ema_weight = a.label_smoothing, 1.0 - a.ema_decay
        self.loss_sum = torch.zeros((), device=dev)
        self.correct = torch.zeros((), dtype=torch.int64, device=dev)

    def forward(self, net, x):
        with torch.autocast("cuda", dtype=torch.float16, enabled=self.amp):
            logits = net(x)
            return logits * self.logit_scale if self.logit_scale != 1.0 else logits

    def step(self, x, y, i):
        """Training step i on the batch (x, y); in full capture the device learning rate is already set."""
        if not self.captured:
            for g in self.opt.param_groups:
                g["lr"] = self.lrs_host[i]
        logits = self.forward(self.net, x)
        loss = F.cross_entropy(logits.float(), y, label_smoothing=self.smoothing)
        self.opt.zero_grad(set_to_none=not self.captured)  # the captured step keeps its gradients' addresses
        if self.scaler is not None:
            self.scaler.scale(loss).backward()
            self.scaler.step(self.opt)
            self.scaler.update()
        else:
            loss.backward()
            self.opt.step()
        with torch.no_grad():
            torch._foreach_lerp_(self.ema_state, self.main_state, self.ema_weight)
            self.loss_sum += loss.detach() * y.shape[0]
            self.correct += (logits.argmax(1) == y).sum()

    def capture(self, xtr, ytr, pipe, batch):
        """Warm up on a side stream, capture one whole step on the training rows self.idx (a static
        input), then put the model, its EMA copy, the optimizer and the scaler back as they were built."""
        self.idx = torch.zeros(batch, dtype=torch.int64, device=xtr.device)
        body = lambda: self.step(pipe.train(xtr[self.idx], None), ytr[self.idx], 0)
        initial = [t.detach().clone() for t in self.net.state_dict().values()]
        scaler_state = self.scaler.state_dict() if self.scaler else None
        self.lr.copy_(self.lrs_dev[0])
        self.graph = step_timing.whole_step_graph(body)
        with torch.no_grad():
            for m in (self.net, self.ema):
                for t, t0 in zip(m.state_dict().values(), initial):
                    t.copy_(t0)
            self.loss_sum.zero_()
            self.correct.zero_()
        step_timing.zero_optimizer_state(self.opt)
        if self.scaler:
            self.scaler.load_state_dict(scaler_state)  # fills the scale and growth tracker in place
        torch.cuda.synchronize()

    def replay(self, idx, i):
        """Training step i on the training rows idx: the captured graph for a full batch, else eagerly."""
        self.lr.copy_(self.lrs_dev[i])
        if idx.shape[0] == self.idx.shape[0]:
            self.idx.copy_(idx)
            self.graph.replay()
            return False
        return True  # the caller runs the epoch's last, smaller batch eagerly

    def evaluate(self, net, images, labels, pipe, batch, tta):
        """Accuracy of `net` on (images (N, H, W) u8, labels (N,)); with tta, the mean of the
        logits of the images and their mirrors."""
        net.eval()
        correct = torch.zeros((), dtype=torch.int64, device=labels.device)
        with torch.no_grad():
            for s in range(0, images.shape[0], batch):
                x = pipe.test(images[s:s + batch])
                logits = self.forward(net, x).float()
                if tta == "flip":
                    logits = (logits + self.forward(net, pipe.layout(x.flip(3))).float()) / 2
                correct += (logits.argmax(1) == labels[s:s + batch]).sum()
        net.train()
        return correct.item() / images.shape[0]


def warm_up(a, data, pipe, lrs, logit_scale, conv, dev):
    """Untimed: a few steps at the full and the last batch size, evaluation at both
    evaluation batch sizes, on a throw-away model (cuDNN autotuning, lazy init)."""
    (xtr, ytr), (xte, yte) = data
    t0 = time.perf_counter()
    torch.manual_seed(0)
    t = Trainer(a, logit_scale, conv, lrs, dev)
    t.lr.copy_(t.lrs_dev[0])
    g = torch.Generator(device=dev)
    g.manual_seed(0)
    n = xtr.shape[0]
    sizes = [min(a.batch, n)] * 3 + ([n % a.batch] if n % a.batch else [])
    for b in sizes:
        idx = torch.randint(0, n, (b,), generator=g, device=dev)
        t.step(pipe.train(xtr[idx], g), ytr[idx], 0)
    m = min(xte.shape[0], a.val_batch + xte.shape[0] % a.val_batch)
    t.evaluate(t.net, xte[:m], yte[:m], pipe, a.val_batch, a.tta)
    t.evaluate(t.ema, xte[:m], yte[:m], pipe, a.val_batch, a.tta)
    torch.cuda.synchronize()
    return time.perf_counter() - t0


def train_run(a, run, seed, data, pipe, lrs, logit_scale, conv, dev):
    """One seed: the per-epoch record and the time to target."""
    (xtr, ytr), (xte, yte) = data
    t_setup = time.perf_counter()
    torch.manual_seed(seed)
    t = Trainer(a, logit_scale, conv, lrs, dev)
    if t.captured:
        t.capture(xtr, ytr, pipe, a.batch)
    torch.cuda.synchronize()
    setup_seconds = time.perf_counter() - t_setup
    energy = gpu_samples.EnergyMeter(step_timing.sampler())  # over the epochs, as tr-bench tta's energy_j
    g = torch.Generator(device=dev)
    g.manual_seed(seed)
    # Full capture draws the augmentation from the default generator (a captured step can only advance
    # that one); eager from g, beside the shuffle.
    aug = None if t.captured else g
    n = xtr.shape[0]
    epochs, train_seconds, step, to_target = [], 0.0, 0, None
    for e in range(a.epochs):
        t.loss_sum.zero_()
        t.correct.zero_()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        perm = torch.randperm(n, generator=g, device=dev)
        for s in range(0, n, a.batch):
            idx = perm[s:s + a.batch]
            if not t.captured or t.replay(idx, step):
                t.step(pipe.train(xtr[idx], aug), ytr[idx], step)
            step += 1
        torch.cuda.synchronize()
        epoch_seconds = time.perf_counter() - t0
        train_seconds += epoch_seconds
        train_loss, train_acc = t.loss_sum.item() / n, t.correct.item() / n
        t1 = time.perf_counter()
        val_acc = t.evaluate(t.net, xte, yte, pipe, a.val_batch, a.tta)
        ema_acc = t.evaluate(t.ema, xte, yte, pipe, a.val_batch, a.tta)
        eval_seconds = time.perf_counter() - t1
        acc = ema_acc if a.eval == "ema" else val_acc
        if to_target is None and acc >= a.target_acc:
            to_target = train_seconds
        epochs.append({"epoch": e + 1, "train_seconds": train_seconds, "epoch_seconds": epoch_seconds,
                       "eval_seconds": eval_seconds, "train_loss": train_loss, "train_acc": train_acc,
                       "val_acc": val_acc, "ema_acc": ema_acc})
        print(f"{run:>3} {seed:>6} {e + 1:>5} {train_seconds:>9.2f} {train_loss:>10.4f} {val_acc:>8.4f} "
              f"{ema_acc:>8.4f}{'  *' if to_target == train_seconds else ''}", flush=True)
    final = epochs[-1]["ema_acc" if a.eval == "ema" else "val_acc"]
    return {"seed": seed, "setup_seconds": setup_seconds, "epochs": epochs, "time_to_target_s": to_target,
            "final_acc": final, "energy_j": energy.joules()}


def stats(values):
    """mean, sample std (0 for one value), min, max."""
    if not values:
        return None
    return {"mean": statistics.fmean(values), "std": statistics.stdev(values) if len(values) > 1 else 0.0,
            "min": min(values), "max": max(values)}


def summary(a, runs):
    times = [r["time_to_target_s"] for r in runs if r["time_to_target_s"] is not None]
    return {"target_acc": a.target_acc, "eval": a.eval, "runs": len(runs), "reached": len(times),
            "time_to_target": stats(times), "final_acc": stats([r["final_acc"] for r in runs])}


def write(path, out):
    if path:
        with open(path + ".tmp", "w") as f:
            json.dump(out, f, indent=1)
        os.replace(path + ".tmp", path)


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="cnn", choices=list(PEERS))
    ap.add_argument("--mode", choices=("full-capture", "eager"), default="full-capture",
                    help="full-capture: the whole step as one CUDA graph (default); eager: step by step")
    ap.add_argument("--data-dir", default=os.environ.get("TR_DATA_DIR") or "/usr/share/datasets/fashion-mnist",
                    help="IDX .gz files (default $TR_DATA_DIR, else /usr/share/datasets/fashion-mnist)")
    ap.add_argument("--epochs", type=int, default=8)
    ap.add_argument("--batch", type=int, default=None, help="default: mlp 200, cnn 256, resnet18 512")
    ap.add_argument("--width", type=float, default=1.0, help="channel multiplier (default 1)")
    ap.add_argument("--optimizer", choices=("sgd", "adamw"), default=None, help="default: mlp adamw, others sgd")
    ap.add_argument("--lr", type=float, default=None,
                    help="peak lr (default: resnet18 0.2 unless --optimizer is given, else sgd 0.05, adamw 1e-3)")
    ap.add_argument("--momentum", type=float, default=0.9, help="SGD's Nesterov momentum (default 0.9)")
    ap.add_argument("--schedule", choices=("constant", "linear", "cosine"), default="linear")
    ap.add_argument("--warmup", type=float, default=None, help="warm-up share of the steps (default sgd 0.1, adamw 0)")
    ap.add_argument("--weight-decay", type=float, default=None, help="default sgd 5e-4, adamw 1e-4")
    ap.add_argument("--label-smoothing", type=float, default=0.1)
    ap.add_argument("--ema-decay", type=float, default=0.99)
    ap.add_argument("--amp", action="store_true", help="autocast float16 with GradScaler (default fp32, TF32 off)")
    ap.add_argument("--flip", action="store_true", help="mirror training images left-right with probability 1/2")
    ap.add_argument("--translate", type=int, default=0, help="shift training images by up to N pixels, zero fill")
    ap.add_argument("--cutout", type=int, default=0, help="zero an SxS square of each training image (0: off)")
    ap.add_argument("--tta", choices=("none", "flip"), default="none", help="evaluate on the mean logits with mirrors")
    ap.add_argument("--eval", choices=("main", "ema"), default="main", help="the weights whose accuracy counts")
    ap.add_argument("--target-acc", type=float, default=0.94)
    ap.add_argument("--val-batch", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--seed", type=int, default=1, help="first seed; run i uses seed + i")
    ap.add_argument("--json", default="")
    a = ap.parse_args()
    explicit_optimizer = a.optimizer is not None
    _, batch, model_lr = PEERS[a.model]
    a.optimizer = a.optimizer or torch_models.REGISTRY[a.model][5]
    a.batch = batch if a.batch is None else a.batch
    a.lr = (model_lr if model_lr > 0 and not explicit_optimizer else DEFAULT_LR[a.optimizer]) if a.lr is None else a.lr
    a.warmup = DEFAULT_WARMUP[a.optimizer] if a.warmup is None else a.warmup
    a.weight_decay = DEFAULT_WD[a.optimizer] if a.weight_decay is None else a.weight_decay
    checks = [(a.epochs >= 1, "--epochs must be >= 1"), (a.batch >= 1, "--batch must be >= 1"),
              (a.width > 0, "--width must be > 0"), (a.lr > 0, "--lr must be > 0"),
              (0 < a.momentum < 1, "--momentum must be in (0, 1)"), (0 <= a.warmup < 1, "--warmup must be in [0, 1)"),
              (a.weight_decay >= 0, "--weight-decay must be >= 0"),
              (0 <= a.label_smoothing < 1, "--label-smoothing must be in [0, 1)"),
              (0 <= a.ema_decay < 1, "--ema-decay must be in [0, 1)"), (a.translate >= 0, "--translate must be >= 0"),
              (a.cutout >= 0, "--cutout must be >= 0"), (0 < a.target_acc <= 1, "--target-acc must be in (0, 1]"),
              (a.val_batch >= 1, "--val-batch must be >= 1"), (a.runs >= 1, "--runs must be >= 1"),
              (a.seed >= 0, "--seed must be >= 0")]
    for ok, msg in checks:
        if not ok:
            ap.error(msg)
    return a


def main():
    a = parse_args()
    if not torch.cuda.is_available():
        print("torch_tta: no CUDA device", file=sys.stderr)
        return 2
    torch.backends.cuda.matmul.allow_tf32 = False  # fp32 means fp32 (the legacy flags only: never mix the APIs)
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    dev = torch.device("cuda")
    _, (side, _, _), _, _, logit_scale, _, _ = torch_models.REGISTRY[a.model]
    conv = a.model != "mlp"  # channels_last for the conv models
    try:
        train, test = load_split(a.data_dir, "train"), load_split(a.data_dir, "t10k")
        if train[0].shape[1:] != test[0].shape[1:]:
            raise DataError(f"{a.data_dir}: train images {tuple(train[0].shape[1:])}, "
                            f"test images {tuple(test[0].shape[1:])}")
        data = tuple((pad_to(x, side).to(dev), y.to(dev)) for x, y in (train, test))
    except DataError as e:
        print(f"torch_tta: {e}", file=sys.stderr)
        return 2
    n = data[0][0].shape[0]
    steps_per_epoch = math.ceil(n / a.batch)
    lrs = lr_table(a.lr, a.schedule, a.warmup, a.epochs * steps_per_epoch)
    pipe = Pipeline(a, side, conv, dev)
    warmup_seconds = warm_up(a, data, pipe, lrs, logit_scale, conv, dev)
    params = sum(p.numel() for p in PEERS[a.model][0](a.width, CLASSES).parameters())
    out = {"context": {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                       "host": socket.gethostname(), "torch": torch.__version__, "cuda": torch.version.cuda,
                       "cudnn": torch.backends.cudnn.version(), "gpu": torch.cuda.get_device_name(),
                       "gpu_state": machine_state.gpu_state(),
                       "command": " ".join(sys.argv), "warmup_seconds": warmup_seconds, "parameters": params,
                       "input_side": side, "train_images": n, "test_images": data[1][0].shape[0],
                       "steps_per_epoch": steps_per_epoch, "total_steps": len(lrs)},
           "recipe": dict(vars(a)), "runs": [], "summary": None}
    print(f"torch_tta: torch {torch.__version__} on {torch.cuda.get_device_name()}; {a.model} (width {a.width:g}, "
          f"{params} parameters, {side}x{side}x1), {a.mode}, {'amp fp16' if a.amp else 'fp32'}, {a.optimizer} lr {a.lr:g} "
          f"{a.schedule} warm-up {a.warmup:g}, batch {a.batch} ({steps_per_epoch} steps/epoch), "
          f"{a.epochs} epochs x {a.runs} runs; warm-up {warmup_seconds:.2f} s", flush=True)
    print(f"{'run':>3} {'seed':>6} {'epoch':>5} {'train_s':>9} {'train_loss':>10} {'val_acc':>8} {'ema_acc':>8}")
    for r in range(a.runs):
        out["runs"].append(train_run(a, r + 1, a.seed + r, data, pipe, lrs, logit_scale, conv, dev))
        out["summary"] = summary(a, out["runs"])
        out["device_memory"] = step_timing.device_memory()  # the peaks over the runs so far (PyTorch's allocator)
        write(a.json, out)  # after every run: a run cut short keeps the finished ones
    s = out["summary"]
    print(f"target {a.target_acc:.4f} ({a.eval} weights, tta {a.tta}): reached in {s['reached']}/{s['runs']} runs")
    if s["time_to_target"]:
        tt = s["time_to_target"]
        print(f"time to target: {tt['mean']:.2f} +- {tt['std']:.2f} s (min {tt['min']:.2f}, max {tt['max']:.2f})")
    fa = s["final_acc"]
    print(f"final accuracy: {fa['mean']:.4f} +- {fa['std']:.4f} (min {fa['min']:.4f}, max {fa['max']:.4f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
