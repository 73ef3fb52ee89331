#pragma once
// Note [machine state]: what the GPU was doing while tr-bench measured it,
// read through NVML, the driver's management library. Its header and stub are
// not installed where tr builds, so libnvidia-ml.so.1 is opened at run time
// (dlopen) with the few declarations below; where it is absent (a machine
// without the driver, the CPU) every report says "unavailable" and why.
//   The context records, once per run: the GPU's name, UUID and driver, its
//   application and maximum clocks, power limit, ECC and persistence mode.
//   Each timed repetition records its energy (the board's counter, mJ, read
//   before and after), so its mean power, and at its end the SM and memory
//   clocks, temperature and throttle reasons. A repetition throttled when a
//   reason other than idling or the application-clock setting was active
//   (kThrottleMask: a power cap, thermal or hardware slowdown, a power brake).
// The GPU is found by its PCI bus id, so NVML's and CUDA's numbering may differ.
#include <cstdint>
#include <map>
#include <string>

namespace tr::bench {

// NVML's clocks-event (throttle) reason bits that slow a measurement down.
inline constexpr uint64_t kThrottleMask = 0x4 | 0x8 | 0x20 | 0x40 | 0x80;
// "sw_power_cap,hw_slowdown" for the bits of `reasons` in kThrottleMask; "none" without.
std::string throttle_names(uint64_t reasons);

struct GpuSample {
  double energy_mj = 0;  // the counter since the driver loaded
  unsigned sm_mhz = 0, mem_mhz = 0, temperature_c = 0;
  uint64_t reasons = 0;
};

class Nvml {
 public:
  // The library, opened once per process; check available() before use.
  static const Nvml& get();
  bool available() const { return handle_ != nullptr; }
  const std::string& why_not() const { return why_not_; }
  // The context's gpu_state for the GPU at this PCI bus id ("0000:1B:00.0"):
  // {"nvml": "ok" or "unavailable: <why>", "uuid", "driver", ...} as strings.
  std::map<std::string, std::string> state(const std::string& pci_bus_id) const;
  // One sample; false when NVML or the GPU cannot give one.
  bool sample(const std::string& pci_bus_id, GpuSample& out) const;

 private:
  Nvml();
  void* handle_ = nullptr;
  std::string why_not_;
  struct Api;
  const Api* api_ = nullptr;
};

// The PCI bus id of CUDA device `device` ("" on the CPU or when CUDA cannot say).
std::string cuda_pci_bus_id(int device);

}  // namespace tr::bench
