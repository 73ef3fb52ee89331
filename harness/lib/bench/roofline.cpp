#include "harness/lib/bench/roofline.h"

#include <algorithm>

#include "framework/core/error.h"

namespace tr::bench {

Peaks h200_peaks(DType compute) {
  constexpr double kHbm = 4.8e12, kL2 = 50e6;
  return is_half(compute) ? Peaks{989e12, kHbm, kL2} : Peaks{67e12, kHbm, kL2};
}

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
