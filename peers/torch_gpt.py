#!/usr/bin/env python3
"""GPT-2's training step in PyTorch, timed the way tr-bench times tr's.

The model is tr's `gpt2` (or `gpt2-d6`) layer for layer: token + position
embedding, pre-LN blocks (LayerNorm, qkv, causal attention through
F.scaled_dot_product_attention, proj, residual; LayerNorm, 4C, tanh GELU, C,
residual), a final LayerNorm and the head tied to the token table. The step:
synthetic tokens copied from pinned memory, autocast, cross-entropy over
every token, the global gradient norm clipped to 1.0, fused AdamW (lr 6e-4,
weight decay 0.1 on matrices and embeddings, none on biases and LayerNorms).

--precision amp: fp16 autocast with fp32 weights and loss scaling, as below;
--precision bf16: bf16 autocast with fp32 weights and no loss scaling in any
mode (tr's --precision bf16, and llm.c's precision).

Modes:
  eager               torch.amp.GradScaler (what most users run)
  full-capture        the whole step in one torch.cuda.graph: a static loss
                      scale, capturable fused AdamW, clipping inside the graph
  torch-compile       torch.compile(model) in its default mode, GradScaler
  compile-max-autotune  torch.compile(model, mode="max-autotune-no-cudagraphs"),
                      GradScaler

Step time: CUDA events around --iters steps after --warmup steps, median of
--repetitions. Writes one JSON object (--json) and prints a table with tokens/s.
"""
import argparse
import json
import math
import os
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

import machine_state
import step_timing

# name: (depth, heads, head_dim, context, vocabulary), as tr's registry.
SHAPES = {"gpt2": (12, 12, 64, 1024, 50304), "gpt2-d6": (6, 6, 64, 256, 264)}
MODES = ("eager", "full-capture", "torch-compile", "compile-max-autotune")


class Block(nn.Module):
    def __init__(self, channels, heads, depth):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(channels), nn.LayerNorm(channels)
        self.qkv = nn.Linear(channels, 3 * channels)
        self.proj = nn.Linear(channels, channels)
        self.up = nn.Linear(channels, 4 * channels)
        self.down = nn.Linear(4 * channels, channels)
        for lin, std in ((self.qkv, 0.02), (self.up, 0.02), (self.proj, 0.02 / math.sqrt(2 * depth)),
                         (self.down, 0.02 / math.sqrt(2 * depth))):
            nn.init.normal_(lin.weight, std=std)
            nn.init.zeros_(lin.bias)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, t, c)
        x = x + self.proj(y)
        return x + self.down(F.gelu(self.up(self.ln2(x)), approximate="tanh"))


class Gpt(nn.Module):
    def __init__(self, depth, heads, head_dim, context, vocab):
        super().__init__()
        c = heads * head_dim
        self.wte, self.wpe = nn.Embedding(vocab, c), nn.Embedding(context, c)
        nn.init.normal_(self.wte.weight, std=0.02)
        nn.init.normal_(self.wpe.weight, std=0.02)
        self.blocks = nn.ModuleList(Block(c, heads, depth) for _ in range(depth))
        self.lnf = nn.LayerNorm(c)

    def forward(self, ids):
        x = self.wte(ids) + self.wpe.weight[: ids.shape[1]]
        for blk in self.blocks:
            x = blk(x)
        return F.linear(self.lnf(x), self.wte.weight)  # the tied head


class Step(step_timing.TwoSlotStep):
    def __init__(self, model, batch, seq, mode, precision):
        self.mode = mode
        self.dtype = torch.bfloat16 if precision == "bf16" else torch.float16
        dev = torch.device("cuda")
        depth, heads, head_dim, context, vocab = SHAPES[model]
        self.net = Gpt(depth, heads, head_dim, context, vocab).to(dev)
        self.params_count = sum(p.numel() for p in self.net.parameters())
        decay = [p for p in self.net.parameters() if p.dim() >= 2]
        no_decay = [p for p in self.net.parameters() if p.dim() < 2]
        capturable = mode == "full-capture"
        self.opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                                      {"params": no_decay, "weight_decay": 0.0}],
                                     lr=torch.tensor(6e-4, device=dev) if capturable else 6e-4,
                                     betas=(0.9, 0.95), fused=True, capturable=capturable)
        g = torch.Generator().manual_seed(1)
        self.host = [torch.randint(0, vocab, (batch, seq + 1), dtype=torch.int64, generator=g).pin_memory()
                     for _ in range(2)]
        self.tokens = torch.empty((batch, seq + 1), dtype=torch.int64, device=dev)
        self.fwd = self.net
        if mode == "torch-compile":
            self.fwd = torch.compile(self.net)
        elif mode == "compile-max-autotune":
            self.fwd = torch.compile(self.net, mode="max-autotune-no-cudagraphs")
        self.scale = 1024.0 if self.dtype == torch.float16 else 1.0  # the whole-step graph's static scale
        self.scaler = torch.amp.GradScaler("cuda", init_scale=65536.0, enabled=self.dtype == torch.float16)
        self.loss_sum = torch.zeros((), device=dev)
        self.slot = 0

    def _body(self, slot):
        self.tokens.copy_(self.host[slot], non_blocking=True)
        ids, targets = self.tokens[:, :-1], self.tokens[:, 1:]
        self.opt.zero_grad(set_to_none=False)
        with torch.autocast("cuda", dtype=self.dtype):
            logits = self.fwd(ids)
            loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten())
        params = list(self.net.parameters())
        if self.mode == "full-capture":
            if self.scale != 1.0:
                (loss * self.scale).backward()
                torch._foreach_mul_([p.grad for p in params], 1.0 / self.scale)
            else:
                loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0, foreach=True)
            self.opt.step()
        else:
            self.scaler.scale(loss).backward()
            self.scaler.unscale_(self.opt)
            torch.nn.utils.clip_grad_norm_(params, 1.0, foreach=True)
            self.scaler.step(self.opt)
            self.scaler.update()
        self.loss_sum += loss.detach()


def time_case(model, batch, seq, mode, precision, warmup, iters, reps):
    torch.manual_seed(0)
    st = Step(model, batch, seq, mode, precision)
    if mode == "full-capture":
        st.capture()
    ms, cpu_ms, machine = step_timing.time_steps(st, warmup, iters, reps, batch, seq)
    loss = st.loss_sum.item() / st.steps_run
    memory = step_timing.device_memory()
    del st
    step_timing.reset_device_memory()
    return ms, cpu_ms, loss, {**memory, **machine}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="gpt2", choices=sorted(SHAPES))
    ap.add_argument("--batch", default="1,4,16,64")
    ap.add_argument("--seq", type=int, default=0, help="window length (default: the model's context)")
    ap.add_argument("--mode", default=",".join(MODES))
    ap.add_argument("--precision", default="amp", choices=("amp", "bf16"))
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--repetitions", type=int, default=3)
    ap.add_argument("--json", default="")
    a = ap.parse_args()
    if not torch.cuda.is_available():
        print("torch_gpt: no CUDA device", file=sys.stderr)
        return 2
    modes = a.mode.split(",")
    for m in modes:
        if m not in MODES:
            print(f"torch_gpt: unknown mode '{m}' (known: {', '.join(MODES)})", file=sys.stderr)
            return 2
    context = SHAPES[a.model][3]
    seq = a.seq or context
    if not 1 <= seq <= context:
        print(f"torch_gpt: --seq {seq} is outside [1, {context}]", file=sys.stderr)
        return 2
    out = {"context": {"torch_version": torch.__version__, "cuda": torch.version.cuda,
                       "cudnn": torch.backends.cudnn.version(), "device_name": torch.cuda.get_device_name(),
                       "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "command_line": " ".join(sys.argv),
                       "gpu_state": machine_state.gpu_state()},
           "benchmarks": []}
    print(f"torch_gpt: torch {torch.__version__} on {torch.cuda.get_device_name()}, {a.model} at T = {seq}, "
          f"{a.precision}, "
          f"{a.repetitions} repetitions x {a.iters} steps after {a.warmup} warm-up steps")
    print(f"{'mode':22} {'batch':>6} {'step_ms':>9} {'cpu_ms':>8} {'tokens/s':>10} {'loss':>7} {'peak_GiB':>8}")
    for b in (int(x) for x in a.batch.split(",")):
        for m in modes:
            name = f"torch_gpt/model:{a.model}/mode:{m}/batch:{b}/seq:{seq}/precision:{a.precision}"
            try:
                ms, cpu_ms, loss, memory = time_case(a.model, b, seq, m, a.precision, a.warmup, a.iters, a.repetitions)
            except Exception as e:  # one failed case must not hide the others
                print(f"{m:22} {b:6d} failed: {str(e).splitlines()[0] if str(e) else type(e).__name__}", flush=True)
                out["benchmarks"].append({"name": name, "error": str(e)})
                torch.cuda.empty_cache()
                continue
            tps = b * seq / ms * 1e3
            peak = memory["max_memory_allocated"]
            print(f"{m:22} {b:6d} {ms:9.3f} {cpu_ms:8.3f} {tps:10.0f} {loss:7.3f} {peak / 2**30:8.2f}", flush=True)
            out["benchmarks"].append({"name": name, "real_time": ms, "cpu_time": cpu_ms, "time_unit": "ms",
                                      "samples_per_second": b / ms * 1e3, "tokens_per_second": tps,
                                      "mean_loss": loss, **memory})
            write(a.json, out)
    write(a.json, out)
    return 0


def write(path, out):
    if path:
        with open(path + ".tmp", "w") as f:
            json.dump(out, f, indent=1)
        os.replace(path + ".tmp", path)


if __name__ == "__main__":
    sys.exit(main())
