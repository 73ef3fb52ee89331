#!/usr/bin/env python3
"""The same training step in PyTorch, timed the way tr-bench times ours.

Peer numbers for tr-bench's three modes, on the same GPU in the same check:
  eager           PyTorch eager with torch.amp.GradScaler and the foreach
                  optimizer (what most users run; the scaler reads its inf
                  check from the host every step)
  partial-capture torch.cuda.make_graphed_callables on the model (forward and
                  backward captured; loss scaling, optimizer, EMA, metrics eager)
  full-capture    the whole step captured with torch.cuda.graph: GradScaler's
                  dynamic scale with the fused optimizer, which takes the scale
                  and the inf flag on the device (no host read), so the
                  captured step skips an overflowing update as eager does
and, with torch.compile, the fused optimizer and the scaler on the device too:
  torch-compile         torch.compile(model), default mode, the rest eager
  compile-max-autotune  torch.compile(model, mode="max-autotune"): autotuned
                        kernels and Inductor's own CUDA graphs of the model
  compile-full-capture  torch.compile(model, mode="max-autotune-no-cudagraphs")
                        inside the whole-step graph of full-capture: PyTorch's
                        strongest step (fused kernels, no launches from the host)
--compile-largest adds torch-compile at each model's largest batch.

Models are tr's registry models layer for layer (peers/torch_models.py:
mlp, cnn, resnet18, resnet50, vgg16bn), NHWC / channels_last, AMP fp16 with
fp32 masters. Loss: softmax cross-entropy, label smoothing 0.1. mlp trains with
AdamW (lr 1e-3), the others with SGD (Nesterov, momentum 0.9, lr 0.1); weight
decay 0 (as tr-bench); EMA of the weights (decay 0.99) and on-device metrics
every step; each step copies its u8 batch from pinned memory (H2D).

Step time: CUDA events around --iters steps after --warmup steps, median of
--repetitions. Writes one JSON object (see --json) and prints a table.
"""
import argparse
import json
import os
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

import machine_state
import step_timing
import torch_models

COMPILE_MODES = {"torch-compile": None, "compile-max-autotune": "max-autotune",
                 "compile-full-capture": "max-autotune-no-cudagraphs"}
MODES = ("eager", "partial-capture", "full-capture") + tuple(COMPILE_MODES)


class Step(step_timing.TwoSlotStep):
    """One model, optimizer, EMA and metric state; step() runs one training step."""

    def __init__(self, model_name, batch, mode, wrap=None):
        """wrap(net) -> module: applied before the optimizer sees the parameters
        (torch_ddp.py wraps the net in DistributedDataParallel there)."""
        self.model_name, self.mode = model_name, mode
        dev = torch.device("cuda")
        net, (h, w, c), classes, (mean, std), self.logit_scale, opt = torch_models.build(model_name)
        self.params_count = sum(p.numel() for p in net.parameters())
        self.net = net.to(dev).to(memory_format=torch.channels_last)
        if wrap is not None:
            self.net = wrap(self.net)
        # Every mode but eager and partial capture: the fused optimizer (one kernel, the scaler's scale and
        # inf flag read on the device); a captured step needs AdamW's step count on the device too.
        kind = {"foreach": True} if mode in ("eager", "partial-capture") else {"fused": True}
        if opt == "sgd":
            self.opt = torch.optim.SGD(self.net.parameters(), lr=0.1, momentum=0.9, nesterov=True, **kind)
        else:
            self.opt = torch.optim.AdamW(self.net.parameters(), lr=1e-3, weight_decay=0.0,
                                         capturable=mode in step_timing.WHOLE_STEP_MODES, **kind)
        self.params = [p for p in self.net.parameters()]
        self.ema = [p.detach().clone() for p in self.params]
        self.correct = torch.zeros((), device=dev, dtype=torch.int64)
        self.loss_sum = torch.zeros((), device=dev)
        # Two pinned host batches (A/B) and the device input, as tr-bench does.
        g = torch.Generator().manual_seed(1)
        self.host_x = [torch.randint(0, 256, (batch, h, w, c), dtype=torch.uint8, generator=g).pin_memory()
                       for _ in range(2)]
        self.host_y = [torch.randint(0, classes, (batch,), dtype=torch.int64, generator=g).pin_memory()
                       for _ in range(2)]
        self.x_u8 = torch.empty((batch, h, w, c), dtype=torch.uint8, device=dev)
        self.y = torch.empty((batch,), dtype=torch.int64, device=dev)
        per_channel = lambda v: torch.tensor([v[min(i, len(v) - 1)] for i in range(c)], device=dev).view(1, c, 1, 1)
        self.mean, self.std = per_channel(mean), per_channel(std)
        self.scaler = torch.amp.GradScaler("cuda", init_scale=65536.0)
        if mode == "partial-capture":
            sample = torch.randn((batch, c, h, w), device=dev).to(memory_format=torch.channels_last)
            # Graphed callables need autocast's weight-cast cache off (PyTorch docs).
            with torch.autocast("cuda", dtype=torch.float16, cache_enabled=False):
                self.fwd = torch.cuda.make_graphed_callables(self.net, (sample.requires_grad_(False),))
        elif mode in COMPILE_MODES:
            self.fwd = torch.compile(self.net, mode=COMPILE_MODES[mode])
        else:
            self.fwd = self.net
        self.graph = None
        self.slot = 0

    def _input(self):
        x = self.x_u8.permute(0, 3, 1, 2).float().div_(255.0).sub_(self.mean).div_(self.std)
        return x.contiguous(memory_format=torch.channels_last)

    def _body(self, slot):
        if self.mode == "compile-max-autotune":
            torch.compiler.cudagraph_mark_step_begin()  # Inductor's graphs: a new step reuses their outputs
        self.x_u8.copy_(self.host_x[slot], non_blocking=True)
        self.y.copy_(self.host_y[slot], non_blocking=True)
        # A captured step keeps its gradients' addresses; under Inductor's CUDA graphs the gradients are outputs
        # of the last step's backward graph, which this step overwrites: writing zeros into them is refused.
        self.opt.zero_grad(set_to_none=self.mode == "compile-max-autotune")
        with torch.autocast("cuda", dtype=torch.float16, cache_enabled=self.mode != "partial-capture"):
            logits = self.fwd(self._input()) * self.logit_scale
            loss = F.cross_entropy(logits.float(), self.y, label_smoothing=0.1)
        self.scaler.scale(loss).backward()
        self.scaler.step(self.opt)
        self.scaler.update()
        with torch.no_grad():
            torch._foreach_lerp_(self.ema, self.params, 0.01)
            self.correct += (logits.argmax(1) == self.y).sum()
            self.loss_sum += loss.detach()


def time_case(model, batch, mode, warmup, iters, reps, wrap=None, capture_warmup=3):
    """wrap (data parallel) leaves out the energy window: the ranks' steps must pair up."""
    torch.manual_seed(0)
    st = Step(model, batch, mode, wrap)
    if mode in step_timing.WHOLE_STEP_MODES:
        st.capture(capture_warmup)
    ms, cpu_ms, machine = step_timing.time_steps(st, warmup, iters, reps, batch, energy_window=wrap is None)
    memory = step_timing.device_memory()
    del st
    step_timing.reset_device_memory()
    return ms, cpu_ms, {**memory, **machine}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="cnn,mlp", help="registry names: " + ",".join(torch_models.REGISTRY))
    ap.add_argument("--batch", default="", help="batches for every model (default: each model's, as tr-bench)")
    ap.add_argument("--mode", default="eager,partial-capture,full-capture", help="any of " + ",".join(MODES))
    ap.add_argument("--compile-largest", action="store_true",
                    help="also time torch.compile (default mode) at each model's largest batch")
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--repetitions", type=int, default=5)
    ap.add_argument("--json", default="")
    a = ap.parse_args()
    if not torch.cuda.is_available():
        print("torch_step: no CUDA device", file=sys.stderr)
        return 2
    torch.backends.cudnn.benchmark = True  # the peer may pick its fastest kernels
    modes = a.mode.split(",")
    for m in modes:
        if m not in MODES:
            print(f"torch_step: unknown mode '{m}'", file=sys.stderr)
            return 2
    models = a.model.split(",")
    for m in models:
        if m not in torch_models.REGISTRY:
            print(f"torch_step: unknown model '{m}' (known: {', '.join(torch_models.REGISTRY)})", file=sys.stderr)
            return 2
    out = {"context": {"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                       "torch_version": torch.__version__, "cuda": torch.version.cuda,
                       "cudnn": torch.backends.cudnn.version(), "device_name": torch.cuda.get_device_name(),
                       "command_line": " ".join(sys.argv),
                       # Inductor's settings from the environment (the interleave part picks its conv backends).
                       "inductor_env": {k: v for k, v in sorted(os.environ.items()) if k.startswith("TORCHINDUCTOR_")},
                       "gpu_state": machine_state.gpu_state()},
           "benchmarks": []}
    print(f"torch_step: torch {torch.__version__} on {torch.cuda.get_device_name()}, "
          f"{a.repetitions} repetitions x {a.iters} steps after {a.warmup} warm-up steps")
    for model in models:
        print(f"torch_step: {model}: {torch_models.build(model)[0].__class__.__name__} with "
              f"{sum(p.numel() for p in torch_models.build(model)[0].parameters())} parameters")
    print(f"{'model':8} {'mode':16} {'batch':>6} {'step_ms':>9} {'cpu_ms':>8} {'x_eager':>8}")
    for model in models:
        batches = [int(x) for x in a.batch.split(",")] if a.batch else torch_models.REGISTRY[model][6]
        for b in batches:
            eager_ms = None
            largest = a.compile_largest and b == max(batches) and "torch-compile" not in modes
            case_modes = modes + (["torch-compile"] if largest else [])
            for m in case_modes:
                try:
                    ms, cpu_ms, memory = time_case(model, b, m, a.warmup, a.iters, a.repetitions)
                except Exception as e:  # one failed case must not hide the others
                    print(f"{model:8} {m:16} {b:6d} failed: {e}")
                    out["benchmarks"].append({"name": f"torch_step/model:{model}/mode:{m}/batch:{b}",
                                              "error": str(e)})
                    continue
                if m == "eager":
                    eager_ms = ms
                ratio = f"{eager_ms / ms:.2f}" if eager_ms else "-"
                print(f"{model:8} {m:16} {b:6d} {ms:9.4f} {cpu_ms:8.4f} {ratio:>8}", flush=True)
                out["benchmarks"].append({"name": f"torch_step/model:{model}/mode:{m}/batch:{b}",
                                          "real_time": ms, "cpu_time": cpu_ms, "time_unit": "ms",
                                          "samples_per_second": b / ms * 1e3, **memory})
                write(a.json, out)  # after every case: a run cut short keeps what it measured
    write(a.json, out)
    return 0


def write(path, out):
    if path:
        with open(path + ".tmp", "w") as f:
            json.dump(out, f, indent=1)
        os.replace(path + ".tmp", path)


if __name__ == "__main__":
    sys.exit(main())
