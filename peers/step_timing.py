"""What the PyTorch peers share: a step over two input slots whose full-capture
mode replays one whole-step CUDA graph per slot, and its timing the way
tr-bench times tr's (CUDA events around `iters` steps, median of repetitions)."""
import statistics
import time

import torch

# The modes whose step is one captured CUDA graph per input slot.
WHOLE_STEP_MODES = ("full-capture", "compile-full-capture")


class TwoSlotStep:
    """A subclass sets self.mode and self.slot and defines _body(slot): one
    training step reading input slot 0 or 1."""

    def capture(self, warmup_steps=3):
        # PyTorch's recipe: warm up on a side stream, then capture the whole step.
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for i in range(warmup_steps):
                self._body(i % 2)
        torch.cuda.current_stream().wait_stream(s)
        self.graphs = []
        for slot in (0, 1):
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                self._body(slot)
            self.graphs.append(g)

    def step(self):
        if self.mode in WHOLE_STEP_MODES:
            self.graphs[self.slot].replay()
        else:
            self._body(self.slot)
        self.slot = 1 - self.slot


def time_steps(st, warmup, iters, reps):
    """(median ms a step, median host CPU ms a step) after `warmup` steps."""
    for _ in range(warmup):
        st.step()
    torch.cuda.synchronize()
    times, cpu = [], []
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(reps):
        c0 = time.thread_time()
        e0.record()
        for _ in range(iters):
            st.step()
        e1.record()
        c1 = time.thread_time()
        e1.synchronize()
        times.append(e0.elapsed_time(e1) / iters)
        cpu.append((c1 - c0) * 1e3 / iters)
    return statistics.median(times), statistics.median(cpu)


def device_memory():
    """The case's memory, read while its step still lives (tr-bench's Note
    [device memory] counts the same device-wide figure): PyTorch's allocator
    peaks since the last reset, and what the whole device has in use. Then
    the caches are emptied and the peaks reset for the next case."""
    free, total = torch.cuda.mem_get_info()
    m = {"max_memory_allocated": torch.cuda.max_memory_allocated(),
         "max_memory_reserved": torch.cuda.max_memory_reserved(),
         "device_memory_used_bytes": total - free}
    return m


def reset_device_memory():
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
