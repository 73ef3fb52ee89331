"""The GPU's state for a peer's report, as tr-bench's context records it
(Note [machine state], harness/lib/bench/nvml.h): read with nvidia-smi, which
comes with the driver, so no Python package is needed. Where nvidia-smi is
missing or fails, the state says "unavailable" and why."""
import subprocess

# nvidia-smi's query names -> the keys of tr-bench's gpu_state.
FIELDS = [("name", "name"), ("uuid", "uuid"), ("pci.bus_id", "pci_bus_id"), ("driver_version", "driver"),
          ("clocks.applications.graphics", "application_sm_clock_mhz"),
          ("clocks.applications.memory", "application_mem_clock_mhz"), ("clocks.max.sm", "max_sm_clock_mhz"),
          ("clocks.max.memory", "max_mem_clock_mhz"), ("power.limit", "power_limit_w"), ("ecc.mode.current", "ecc"),
          ("persistence_mode", "persistence_mode")]


def gpu_state(index=0):
    """{key: string} of GPU `index`, "nvml": "ok" when read."""
    try:
        out = subprocess.run(["nvidia-smi", "-i", str(index), "--query-gpu=" + ",".join(f for f, _ in FIELDS),
                              "--format=csv,noheader,nounits"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as e:
        return {"nvml": f"unavailable: nvidia-smi: {e}"}
    if out.returncode != 0:
        return {"nvml": f"unavailable: nvidia-smi exit {out.returncode}"}
    values = [v.strip() for v in out.stdout.strip().split(",")]
    state = {"nvml": "ok"}
    for (_, key), value in zip(FIELDS, values):
        state[key] = {"Enabled": "on", "Disabled": "off"}.get(value, value)
    return state
