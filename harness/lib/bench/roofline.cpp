#include "harness/lib/bench/roofline.h"

#include <algorithm>
#include <array>
#include <string_view>

#include "framework/core/error.h"
#include "harness/lib/bench/model_flops.h"

namespace tr::bench {

std::optional<Peaks> device_peaks(const std::string& device_name, DType compute) {
  struct Memory {
    std::string_view name;  // a substring of the device name; the first match wins
    double fp32_flops;      // FLOP/s on CUDA cores, dense
    double hbm_bytes;       // bytes/s
  };
  // NVIDIA's data sheets: H100 PCIe 51 TFLOP/s fp32 and 2.0 TB/s (HBM2e),
  // H100 NVL 60 and 3.9 TB/s, H100 SXM 67 and 3.35 TB/s (HBM3), H200 67 and
  // 4.8 TB/s (HBM3e); 50 MB of L2 on each. The 16-bit tensor peaks are
  // tensor_peak_flops' (model_flops.h), not repeated here.
  static constexpr std::array<Memory, 4> kMemory = {
      {{"H100 PCIe", 51e12, 2.0e12}, {"H100 NVL", 60e12, 3.9e12}, {"H100", 67e12, 3.35e12}, {"H200", 67e12, 4.8e12}}};
  constexpr double kL2 = 50e6;
  for (const Memory& m : kMemory) {
    if (device_name.find(m.name) == std::string::npos) continue;
    const double flops = is_half(compute) ? tensor_peak_flops(device_name) : m.fp32_flops;
    return Peaks{flops, m.hbm_bytes, kL2};
  }
  return std::nullopt;
}

Peaks h200_peaks(DType compute) { return *device_peaks("NVIDIA H200", compute); }

Roofline roofline(double flops, double bytes, double seconds, const Peaks& p) {
  TR_CHECK(seconds > 0 && bytes > 0 && flops >= 0, "roofline of ", flops, " FLOP, ", bytes, " bytes in ", seconds,
           " s");
  Roofline r;
  const double flop_rate = flops / seconds, byte_rate = bytes / seconds;
  r.tflops = flop_rate / 1e12;
  r.gbps = byte_rate / 1e9;
  r.intensity = flops / bytes;
  r.of_peak_flops = flop_rate / p.flops;
  r.of_peak_bytes = byte_rate / p.bytes;
  r.compute_bound = r.intensity > p.flops / p.bytes;
  r.l2_resident = bytes <= p.l2_bytes;
  r.of_roofline = flops > 0 ? flop_rate / std::min(p.flops, r.intensity * p.bytes) : r.of_peak_bytes;
  return r;
}

std::map<std::string, double> roofline_counters(double flops, double bytes, const Roofline& r) {
  std::map<std::string, double> c = {{"flop", flops},
                                     {"bytes", bytes},
                                     {"TFLOP/s", r.tflops},
                                     {"GB/s", r.gbps},
                                     {"intensity", r.intensity},
                                     {"compute_bound", r.compute_bound ? 1.0 : 0.0},
                                     {"l2_resident", r.l2_resident ? 1.0 : 0.0}};
  if (!r.l2_resident) {
    c["of_peak_flops"] = r.of_peak_flops;
    c["of_peak_bw"] = r.of_peak_bytes;
    c["of_roofline"] = r.of_roofline;
  }
  return c;
}

}  // namespace tr::bench
