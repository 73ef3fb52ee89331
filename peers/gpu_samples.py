"""The GPU's energy, clocks, temperature and throttling around a peer's timed
repetitions, as tr-bench samples them (Note [machine state] and Note [energy
window], harness/lib/bench/nvml.h and machine_counters.h), so that a peer's
row carries the same counters under the same names.

NVML comes with the driver (libnvidia-ml.so.1) and is opened with ctypes: no
Python package is needed. Where it is absent, sample() returns None and the
counters are left out; the report's gpu_state (machine_state.py) says why."""
import ctypes
import math
import statistics
import time

# NVML's clocks-event (throttle) reasons that slow a measurement down: a power
# cap, hardware slowdown, thermal slowdowns, the power brake (tr's kThrottleMask).
THROTTLE_MASK = 0x4 | 0x8 | 0x20 | 0x40 | 0x80
# The board's energy counter advances in steps, about a tenth of a second apart on an H100: only windows
# this long count, so that one step more or less is 5 % (tr's kMinEnergyWindowS, machine_counters.h).
MIN_ENERGY_WINDOW_S = 2.0
_CLOCK_SM, _CLOCK_MEM, _TEMPERATURE_GPU = 1, 2, 0


class Sampler:
    """NVML opened once for the GPU at `pci_bus_id` ("00000000:1B:00.0")."""

    def __init__(self, pci_bus_id):
        self.why_not = ""
        self._lib = self._handle = None
        try:
            lib = ctypes.CDLL("libnvidia-ml.so.1")
        except OSError as e:
            self.why_not = f"libnvidia-ml.so.1: {e}"
            return
        handle = ctypes.c_void_p()
        if lib.nvmlInit_v2() != 0:
            self.why_not = "nvmlInit_v2 failed"
        elif lib.nvmlDeviceGetHandleByPciBusId_v2(pci_bus_id.encode(), ctypes.byref(handle)) != 0:
            self.why_not = f"no NVML device at PCI bus id {pci_bus_id}"
        else:
            self._lib, self._handle = lib, handle
        reasons = getattr(lib, "nvmlDeviceGetCurrentClocksEventReasons", None)
        self._reasons = reasons or getattr(lib, "nvmlDeviceGetCurrentClocksThrottleReasons", None)

    def available(self):
        return self._lib is not None

    def sample(self):
        """{energy_mj, sm_mhz, mem_mhz, temperature_c, reasons, memory_used_bytes (device-wide)}, or None
        when NVML cannot give one."""
        if not self.available():
            return None
        energy, reasons = ctypes.c_ulonglong(), ctypes.c_ulonglong()
        sm, mem, temp = ctypes.c_uint(), ctypes.c_uint(), ctypes.c_uint()
        calls = [self._lib.nvmlDeviceGetTotalEnergyConsumption(self._handle, ctypes.byref(energy)),
                 self._lib.nvmlDeviceGetClockInfo(self._handle, _CLOCK_SM, ctypes.byref(sm)),
                 self._lib.nvmlDeviceGetClockInfo(self._handle, _CLOCK_MEM, ctypes.byref(mem)),
                 self._lib.nvmlDeviceGetTemperature(self._handle, _TEMPERATURE_GPU, ctypes.byref(temp)),
                 self._reasons(self._handle, ctypes.byref(reasons)) if self._reasons else 0]
        memory = (ctypes.c_ulonglong * 3)()  # nvmlMemory_t: total, free, used
        calls.append(self._lib.nvmlDeviceGetMemoryInfo(self._handle, memory))
        if any(calls):
            return None
        return {"energy_mj": float(energy.value), "sm_mhz": sm.value, "mem_mhz": mem.value,
                "temperature_c": temp.value, "reasons": reasons.value, "memory_used_bytes": memory[2]}


class EnergyMeter:
    """The board's energy over a stretch of work (a tta run's epochs, as tr-bench tta measures its own):
    started at construction, read by joules() -> J, or None without NVML or under MIN_ENERGY_WINDOW_S."""

    def __init__(self, sampler):
        self._sampler, self._start, self._t0 = sampler, sampler.sample(), time.perf_counter()

    def joules(self):
        end = self._sampler.sample()
        if not self._start or not end or time.perf_counter() - self._t0 < MIN_ENERGY_WINDOW_S:
            return None
        j = (end["energy_mj"] - self._start["energy_mj"]) * 1e-3
        return j if j > 0 else None


def window(before, after, seconds, steps):
    """One measured window: its energy (J), wall time, steps and the GPU's state at its end."""
    return {"energy_j": (after["energy_mj"] - before["energy_mj"]) * 1e-3, "seconds": seconds, "steps": steps,
            "end": after}


def energy_window_steps(step_ms):
    """Steps for a window of at least MIN_ENERGY_WINDOW_S, a quarter more as steps vary; at least 1."""
    return max(1, math.ceil(1.25 * MIN_ENERGY_WINDOW_S * 1e3 / step_ms)) if step_ms > 0 else 1


def counters(reps, samples_per_step, tokens_per_sample=0, energy_window=None):
    """tr-bench's machine counters from the repetitions' windows (and the
    energy window where none was long enough): sm_clock_mhz_min,
    mem_clock_mhz_min, temperature_c_max, throttled_repetitions,
    throttle_reasons; energy_j_per_step, power_w (medians), samples_per_joule
    and tokens_per_joule where some window lasted MIN_ENERGY_WINDOW_S and its
    counter moved; energy_window_steps when the energy came from that window."""
    if not reps:
        return {}
    ends = [r["end"] for r in reps]
    k = {"sm_clock_mhz_min": min(e["sm_mhz"] for e in ends), "mem_clock_mhz_min": min(e["mem_mhz"] for e in ends),
         "temperature_c_max": max(e["temperature_c"] for e in ends),
         "throttled_repetitions": sum(1 for e in ends if e["reasons"] & THROTTLE_MASK),
         "throttle_reasons": _or(e["reasons"] & THROTTLE_MASK for e in ends)}
    counted = [r for r in reps if r["seconds"] >= MIN_ENERGY_WINDOW_S and r["energy_j"] > 0]
    if not counted and energy_window and energy_window["seconds"] >= MIN_ENERGY_WINDOW_S \
            and energy_window["energy_j"] > 0:
        counted = [energy_window]
        k["energy_window_steps"] = energy_window["steps"]
    if counted:
        joules, steps = sum(r["energy_j"] for r in counted), sum(r["steps"] for r in counted)
        k["energy_j_per_step"] = statistics.median(r["energy_j"] / r["steps"] for r in counted)
        k["power_w"] = statistics.median(r["energy_j"] / r["seconds"] for r in counted)
        k["samples_per_joule"] = samples_per_step * steps / joules
        if tokens_per_sample:
            k["tokens_per_joule"] = samples_per_step * steps * tokens_per_sample / joules
    return k


def watched_window(samples, t0, t1, steps, samples_per_step, tokens_per_sample=0):
    """The counters of `steps` steps between times t0 and t1 (s) of a watched run (gpu_watch.py), from its
    timed samples [{"t", energy_mj, ...}] in time order: the energy counter interpolated at both ends;
    the clocks, temperature and throttling of the samples inside the window (one "repetition": the
    throttled count is 0 or 1); the most device memory in use over the whole run."""
    k = {}
    if samples:
        k["device_memory_used_max_bytes"] = max(x["memory_used_bytes"] for x in samples)
    inside = [x for x in samples if t0 <= x["t"] <= t1]
    if not inside or steps <= 0:
        return k
    e0, e1 = _energy_at(samples, t0), _energy_at(samples, t1)
    end = {"sm_mhz": min(x["sm_mhz"] for x in inside), "mem_mhz": min(x["mem_mhz"] for x in inside),
           "temperature_c": max(x["temperature_c"] for x in inside), "reasons": _or(x["reasons"] for x in inside)}
    w = {"energy_j": (e1 - e0) * 1e-3 if e0 is not None and e1 is not None else 0.0, "seconds": t1 - t0,
         "steps": steps, "end": end}
    k.update(counters([w], samples_per_step, tokens_per_sample))
    return k


def _energy_at(samples, t):
    """The energy counter (mJ) at time t, linear between the samples around it; None outside them."""
    for a, b in zip(samples, samples[1:]):
        if a["t"] <= t <= b["t"]:
            f = (t - a["t"]) / (b["t"] - a["t"]) if b["t"] > a["t"] else 0.0
            return a["energy_mj"] + f * (b["energy_mj"] - a["energy_mj"])
    return None


def _or(values):
    out = 0
    for v in values:
        out |= v
    return out
