#pragma once
// Note [busy fraction]
// How busy the GPU was during a traced repetition: the union of the kernel
// intervals CUPTI recorded (kernels that overlap count once) over the same
// repetition's wall time. Both come from one window, so the fraction is at
// most 1 by construction; only clock granularity between the GPU's
// timestamps and the host's clock can push the raw ratio past 1, and then the
// fraction is 1 and the raw ratio is reported beside it. Dividing by the
// untraced median step instead (an earlier definition) mixed two runs and
// could read above 1.
#include <algorithm>
#include <optional>

namespace tr::bench {

struct BusyFraction {
  double value = 0;            // in [0, 1]
  std::optional<double> raw;   // set only when the raw ratio was above 1
};

inline BusyFraction busy_fraction(double kernel_union_ms, double window_ms) {
  BusyFraction b;
  if (!(window_ms > 0) || !(kernel_union_ms > 0)) return b;
  const double r = kernel_union_ms / window_ms;
  b.value = std::min(r, 1.0);
  if (r > 1.0) b.raw = r;
  return b;
}

}  // namespace tr::bench
