#include "harness/lib/bench/nvml.h"

#include <dlfcn.h>

#include <array>

#include "framework/core/error.h"

namespace tr::bench {
namespace {

// NVML's C interface, as far as tr uses it (nvml.h's declarations; its enums are ints).
using Ret = int;  // nvmlReturn_t: 0 is NVML_SUCCESS
using Dev = void*;
constexpr int kClockSm = 1, kClockMem = 2, kTemperatureGpu = 0;

template <typename F>
F symbol(void* lib, const char* name) {
  return reinterpret_cast<F>(dlsym(lib, name));
}

}  // namespace

struct Nvml::Api {
  Ret (*init)() = nullptr;
  Ret (*by_pci)(const char*, Dev*) = nullptr;
  Ret (*name)(Dev, char*, unsigned) = nullptr;
  Ret (*uuid)(Dev, char*, unsigned) = nullptr;
  Ret (*driver)(char*, unsigned) = nullptr;
  Ret (*app_clock)(Dev, int, unsigned*) = nullptr;
  Ret (*max_clock)(Dev, int, unsigned*) = nullptr;
  Ret (*clock)(Dev, int, unsigned*) = nullptr;
  Ret (*power_limit)(Dev, unsigned*) = nullptr;
  Ret (*ecc)(Dev, int*, int*) = nullptr;
  Ret (*persistence)(Dev, int*) = nullptr;
  Ret (*temperature)(Dev, int, unsigned*) = nullptr;
  Ret (*reasons)(Dev, unsigned long long*) = nullptr;
  Ret (*energy)(Dev, unsigned long long*) = nullptr;
};

std::string throttle_names(uint64_t reasons) {
  static constexpr std::array<std::pair<uint64_t, const char*>, 5> kNames = {{{0x4, "sw_power_cap"},
                                                                              {0x8, "hw_slowdown"},
                                                                              {0x20, "sw_thermal_slowdown"},
                                                                              {0x40, "hw_thermal_slowdown"},
                                                                              {0x80, "hw_power_brake"}}};
  std::string out;
  for (const auto& [bit, name] : kNames)
    if (reasons & bit) out += cat(out.empty() ? "" : ",", name);
  return out.empty() ? "none" : out;
}

Nvml::Nvml() {
  void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    why_not_ = "libnvidia-ml.so.1 not found (no NVIDIA driver here)";
    return;
  }
  static Api a;
  a.init = symbol<decltype(a.init)>(lib, "nvmlInit_v2");
  a.by_pci = symbol<decltype(a.by_pci)>(lib, "nvmlDeviceGetHandleByPciBusId_v2");
  a.name = symbol<decltype(a.name)>(lib, "nvmlDeviceGetName");
  a.uuid = symbol<decltype(a.uuid)>(lib, "nvmlDeviceGetUUID");
  a.driver = symbol<decltype(a.driver)>(lib, "nvmlSystemGetDriverVersion");
  a.app_clock = symbol<decltype(a.app_clock)>(lib, "nvmlDeviceGetApplicationsClock");
  a.max_clock = symbol<decltype(a.max_clock)>(lib, "nvmlDeviceGetMaxClockInfo");
  a.clock = symbol<decltype(a.clock)>(lib, "nvmlDeviceGetClockInfo");
  a.power_limit = symbol<decltype(a.power_limit)>(lib, "nvmlDeviceGetPowerManagementLimit");
  a.ecc = symbol<decltype(a.ecc)>(lib, "nvmlDeviceGetEccMode");
  a.persistence = symbol<decltype(a.persistence)>(lib, "nvmlDeviceGetPersistenceMode");
  a.temperature = symbol<decltype(a.temperature)>(lib, "nvmlDeviceGetTemperature");
  // Renamed in CUDA 12's NVML; the old name stays exported beside it.
  a.reasons = symbol<decltype(a.reasons)>(lib, "nvmlDeviceGetCurrentClocksEventReasons");
  if (a.reasons == nullptr) a.reasons = symbol<decltype(a.reasons)>(lib, "nvmlDeviceGetCurrentClocksThrottleReasons");
  a.energy = symbol<decltype(a.energy)>(lib, "nvmlDeviceGetTotalEnergyConsumption");
  if (a.init == nullptr || a.by_pci == nullptr || a.init() != 0) {
    why_not_ = "libnvidia-ml.so.1 would not initialise";
    dlclose(lib);
    return;
  }
  handle_ = lib;
  api_ = &a;
}

const Nvml& Nvml::get() {
  static const Nvml nvml;
  return nvml;
}

std::map<std::string, std::string> Nvml::state(const std::string& pci_bus_id) const {
  if (!available()) return {{"nvml", "unavailable: " + why_not_}};
  Dev d = nullptr;
  if (pci_bus_id.empty() || api_->by_pci(pci_bus_id.c_str(), &d) != 0)
    return {{"nvml", cat("unavailable: no NVML device at PCI bus id '", pci_bus_id, "'")}};
  std::map<std::string, std::string> s = {{"nvml", "ok"}, {"pci_bus_id", pci_bus_id}};
  char buf[96];
  auto text = [&](const char* key, auto fn, auto... args) {
    if (fn != nullptr && fn(args..., buf, unsigned(sizeof buf)) == 0) s[key] = buf;
  };
  text("name", api_->name, d);
  text("uuid", api_->uuid, d);
  text("driver", api_->driver);
  unsigned v = 0;
  auto number = [&](const char* key, Ret r, double scale) {
    if (r == 0) s[key] = cat(double(v) * scale);
  };
  if (api_->app_clock) number("application_sm_clock_mhz", api_->app_clock(d, kClockSm, &v), 1);
  if (api_->app_clock) number("application_mem_clock_mhz", api_->app_clock(d, kClockMem, &v), 1);
  if (api_->max_clock) number("max_sm_clock_mhz", api_->max_clock(d, kClockSm, &v), 1);
  if (api_->max_clock) number("max_mem_clock_mhz", api_->max_clock(d, kClockMem, &v), 1);
  if (api_->power_limit) number("power_limit_w", api_->power_limit(d, &v), 1e-3);
  int cur = 0, pending = 0;
  if (api_->ecc && api_->ecc(d, &cur, &pending) == 0) s["ecc"] = cur ? "on" : "off";
  if (api_->persistence && api_->persistence(d, &cur) == 0) s["persistence_mode"] = cur ? "on" : "off";
  return s;
}

bool Nvml::sample(const std::string& pci_bus_id, GpuSample& out) const {
  Dev d = nullptr;
  if (!available() || pci_bus_id.empty() || api_->by_pci(pci_bus_id.c_str(), &d) != 0) return false;
  unsigned long long mj = 0, reasons = 0;
  if (api_->energy == nullptr || api_->energy(d, &mj) != 0) return false;
  out.energy_mj = double(mj);
  if (api_->clock) api_->clock(d, kClockSm, &out.sm_mhz);
  if (api_->clock) api_->clock(d, kClockMem, &out.mem_mhz);
  if (api_->temperature) api_->temperature(d, kTemperatureGpu, &out.temperature_c);
  if (api_->reasons && api_->reasons(d, &reasons) == 0) out.reasons = reasons;
  return true;
}

#ifndef TR_HAVE_CUDA
std::string cuda_pci_bus_id(int) { return ""; }
#endif

}  // namespace tr::bench
