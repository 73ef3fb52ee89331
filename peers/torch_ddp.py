#!/usr/bin/env python3
"""tr-bench's weak-scaling sweep in PyTorch: the same step as torch_step.py on
N GPUs with DistributedDataParallel (one process per GPU, NCCL).

Cases, at a fixed batch per GPU:
  1 GPU           torch_step.py's step, no DDP (the baseline weak scaling
                  divides by, as tr-bench's 1-GPU case has no communication)
  N GPUs, eager   DDP with GradScaler
  N GPUs, full    the whole DDP step captured with torch.cuda.graph, following
                  PyTorch's recipe for DDP under capture (DDP built on a side
                  stream, 11 eager DDP steps before capture, NCCL async error
                  handling off); static loss scale, as in torch_step.py
--bn sync uses SyncBatchNorm (tr's --bn-sync batch); --bn local keeps each
GPU's own BatchNorm statistics (closest to tr's --bn-sync running, which also
averages the running statistics once per step).

Weak-scaling efficiency = samples/s on N GPUs / (N x samples/s on 1 GPU).
Step time: CUDA events on rank 0 around --iters steps, median of --repetitions.
"""
import argparse
import json
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import machine_state  # noqa: E402
import torch_step  # noqa: E402


def ddp_wrap(rank, mode, bn):
    def wrap(net):
        if bn == "sync":
            net = torch.nn.SyncBatchNorm.convert_sync_batchnorm(net)
        if mode != "full-capture":
            return DDP(net, device_ids=[rank])
        s = torch.cuda.Stream()  # DDP under capture is built on a side stream
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            ddp = DDP(net, device_ids=[rank])
        torch.cuda.current_stream().wait_stream(s)
        return ddp
    return wrap


def worker(rank, world, a, cases, queue):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(a.port)
    os.environ["TORCH_NCCL_ASYNC_ERROR_HANDLING"] = "0"  # required for capturing NCCL calls
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=torch.device("cuda", rank))
    torch.backends.cudnn.benchmark = True
    out = []
    for model, b, mode in cases:
        try:
            ms, cpu_ms, extra = torch_step.time_case(model, b, mode, a.warmup, a.iters, a.repetitions,
                                                     wrap=ddp_wrap(rank, mode, a.bn), capture_warmup=11)
            out.append((model, b, mode, ms, cpu_ms, None, extra))  # rank 0's memory and machine counters
        except Exception as e:  # reported, not hidden; the other ranks fail the same case
            out.append((model, b, mode, None, None, str(e), {}))
        dist.barrier()
    if rank == 0:
        queue.put(out)
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gpus", type=int, default=0, help="GPUs for the DDP cases (default: all)")
    ap.add_argument("--model", default="cnn")
    ap.add_argument("--batch-per-gpu", default="256,1024")
    ap.add_argument("--mode", default="eager,full-capture")
    ap.add_argument("--bn", default="sync", choices=["sync", "local"])
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--repetitions", type=int, default=5)
    ap.add_argument("--port", type=int, default=29517)
    ap.add_argument("--json", default="")
    a = ap.parse_args()
    if not torch.cuda.is_available():
        print("torch_ddp: no CUDA device", file=sys.stderr)
        return 2
    world = a.gpus or torch.cuda.device_count()
    if world < 2 or world > torch.cuda.device_count():
        print(f"torch_ddp: needs 2 or more GPUs (asked for {world}, {torch.cuda.device_count()} visible)",
              file=sys.stderr)
        return 2
    modes = a.mode.split(",")
    for m in modes:
        if m not in ("eager", "full-capture"):
            print(f"torch_ddp: unknown mode '{m}' (eager or full-capture)", file=sys.stderr)
            return 2
    cases = [(m, int(b), mode) for m in a.model.split(",") for b in a.batch_per_gpu.split(",") for mode in modes]
    torch.backends.cudnn.benchmark = True
    single = {}
    for model, b, mode in cases:  # the 1-GPU baseline, in this process
        single[(model, b, mode)] = torch_step.time_case(model, b, mode, a.warmup, a.iters, a.repetitions)[:2]
    ctx = mp.get_context("spawn")
    queue = ctx.SimpleQueue()
    mp.spawn(worker, args=(world, a, cases, queue), nprocs=world, join=True)
    results = queue.get()
    print(f"torch_ddp: torch {torch.__version__}, {world} x {torch.cuda.get_device_name()}, BN {a.bn}, "
          f"{a.repetitions} repetitions x {a.iters} steps after {a.warmup} warm-up steps")
    print(f"{'model':5} {'mode':13} {'batch/gpu':>9} {'1gpu_ms':>9} {f'{world}gpu_ms':>9} {'efficiency':>10}")
    out = {"context": {"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                       "torch_version": torch.__version__, "cuda": torch.version.cuda,
                       "cudnn": torch.backends.cudnn.version(), "nccl": ".".join(map(str, torch.cuda.nccl.version())),
                       "device_name": torch.cuda.get_device_name(), "gpus": world, "bn": a.bn,
                       "command_line": " ".join(sys.argv), "gpu_state": machine_state.gpu_state(0)},
           "benchmarks": []}
    for model, b, mode, ms, cpu_ms, err, extra in results:
        one_ms = single[(model, b, mode)][0]
        name = f"torch_ddp/model:{model}/mode:{mode}/batch_per_gpu:{b}/bn:{a.bn}"
        if err is not None:
            print(f"{model:5} {mode:13} {b:9d} {one_ms:9.4f} failed: {err}")
            out["benchmarks"].append({"name": name, "error": err, "one_gpu_ms": one_ms})
            continue
        eff = one_ms / ms  # same batch per GPU: (world*b/ms) / (world * b/one_ms)
        print(f"{model:5} {mode:13} {b:9d} {one_ms:9.4f} {ms:9.4f} {eff:10.3f}", flush=True)
        out["benchmarks"].append({"name": name, "gpus": world, "real_time": ms, "cpu_time": cpu_ms,
                                  "time_unit": "ms", "one_gpu_ms": one_ms, "weak_scaling_efficiency": eff, **extra})
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
