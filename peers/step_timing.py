"""What the PyTorch peers share: the capture of a whole step (warm-up on a
side stream, then the graph) and the reset of an optimizer after it; a step
over two input slots whose full-capture mode replays one whole-step CUDA graph
per slot, and its timing the way tr-bench times tr's (CUDA events around
`iters` steps, median of repetitions, NVML read around each, gpu_samples.py)."""
import functools
import statistics
import time

import torch

import gpu_samples
import machine_state

# The modes whose step is one captured CUDA graph per input slot.
WHOLE_STEP_MODES = ("full-capture", "compile-full-capture")


def warm_up_on_side_stream(body, steps):
    """PyTorch's recipe before a capture: body(i) for i < steps on a side stream, joined back."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for i in range(steps):
            body(i)
    torch.cuda.current_stream().wait_stream(s)


def whole_step_graph(body, warmup_steps=3):
    """body() warmed up on a side stream, then captured: its CUDA graph."""
    warm_up_on_side_stream(lambda i: body(), warmup_steps)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        body()
    return g


def zero_optimizer_state(opt):
    """Every tensor of the optimizer's state to 0, in place (a captured step keeps reading them):
    momentum, moments and step counts as a new optimizer's first step finds them."""
    with torch.no_grad():
        for st in opt.state.values():
            for v in st.values():
                if torch.is_tensor(v):
                    v.zero_()


class TwoSlotStep:
    """A subclass sets self.mode and self.slot and defines _body(slot): one
    training step reading input slot 0 or 1. steps_run counts the steps that
    ran (a capture's warm-up ones too; the capture itself runs none)."""
    steps_run = 0

    def capture(self, warmup_steps=3):
        warm_up_on_side_stream(lambda i: self._body(i % 2), warmup_steps)
        self.steps_run += warmup_steps
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
        self.steps_run += 1


@functools.cache
def sampler():
    """NVML for the current CUDA device, found by its PCI bus id as tr-bench finds it."""
    p = torch.cuda.get_device_properties(torch.cuda.current_device())
    try:
        bus = f"{p.pci_domain_id:08x}:{p.pci_bus_id:02x}:{p.pci_device_id:02x}.0"
    except AttributeError:  # a torch whose properties lack the PCI location: nvidia-smi's for this index
        bus = machine_state.gpu_state(torch.cuda.current_device()).get("pci_bus_id", "")
    return gpu_samples.Sampler(bus)


def time_steps(st, warmup, iters, reps, samples_per_step=0, tokens_per_sample=0, energy_window=True):
    """(median ms a step, median host CPU ms a step, machine counters) after
    `warmup` steps. The counters (gpu_samples.counters: energy, clocks,
    throttling; {} without NVML) take samples_per_step items a step; where no
    repetition lasted long enough for the energy counter, one untimed window
    after them does (Note [energy window]), unless energy_window is False: in
    data parallel every rank must run the same steps, and each would choose
    that window's length from its own times."""
    for _ in range(warmup):
        st.step()
    torch.cuda.synchronize()
    times, cpu, windows = [], [], []
    nvml = sampler()
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(reps):
        before, w0 = nvml.sample(), time.perf_counter()
        c0 = time.thread_time()
        e0.record()
        for _ in range(iters):
            st.step()
        e1.record()
        c1 = time.thread_time()
        e1.synchronize()
        after = nvml.sample()
        if before and after:
            windows.append(gpu_samples.window(before, after, time.perf_counter() - w0, iters))
        times.append(e0.elapsed_time(e1) / iters)
        cpu.append((c1 - c0) * 1e3 / iters)
    ms = statistics.median(times)
    extra = None
    if energy_window and windows and all(w["seconds"] < gpu_samples.MIN_ENERGY_WINDOW_S for w in windows):
        extra = _energy_window(st, nvml, gpu_samples.energy_window_steps(ms))
    return ms, statistics.median(cpu), gpu_samples.counters(windows, samples_per_step, tokens_per_sample, extra)


def _energy_window(st, nvml, steps):
    before, w0 = nvml.sample(), time.perf_counter()
    for _ in range(steps):
        st.step()
    torch.cuda.synchronize()
    after = nvml.sample()
    return gpu_samples.window(before, after, time.perf_counter() - w0, steps) if before and after else None


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
