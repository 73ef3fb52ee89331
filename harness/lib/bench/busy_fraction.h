#pragma once
// Note [busy fraction]
// How busy the GPU was during a traced repetition: the union of the kernel
// intervals CUPTI recorded (kernels that overlap count once) over the span
// from the first kernel's start to the last kernel's end of that repetition.
// The union lies inside the span, so the fraction is at most 1 by
// construction (clamped to [0, 1] all the same, with the raw ratio kept if it
// ever read above 1).
//
// Why the span and not the host's wall time of the repetition: the wall time
// also holds the host's latency to the first kernel and from the last one
// back to the host (once per repetition, not per step), and whatever CUPTI
// does on the first traced launch of each graph when tracing is switched on
// just before the repetition. The same build read 0.69-0.73 at cnn batch 256
// with one command (3 x 20 steps, full capture only) and 0.88 with another
// (5 x 30 steps, every mode) on the H200 under that definition. So the
// repetition is now preceded by traced steps that are not recorded
// (bench_runner.cpp) and measured over its kernels' span: what is left is
// the GPU's steady state, the gaps between dependent kernels and between
// consecutive steps. CUPTI still adds its own cost to each kernel, so the
// fraction remains a lower bound of the untraced one. An earlier definition
// divided by the untraced median step (another run) and could read above 1.
//
// Two such fractions per case. Under programmatic dependent launch (the CUDA
// default) a kernel's blocks become resident while its predecessor still
// runs and wait in griddepcontrol.wait; CUPTI times the kernel from then, so
// the union counts that wait. gpu_resident_fraction is the fraction of the
// case as it ran: some kernel resident, waiting or working. gpu_busy_fraction
// is the kernels' own work: one more traced repetition of the same case in a
// session built again without programmatic launch (bench_runner.cpp's
// trace_without_pdl), where no kernel is resident before its predecessor has
// finished. With --no-pdl both come from the one traced repetition. Reports
// without gpu_resident_fraction hold the resident fraction under
// gpu_busy_fraction.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace tr::bench {

struct BusyFraction {
  double value = 0;           // in [0, 1]
  std::optional<double> raw;  // set only when the raw ratio was above 1
};

inline BusyFraction busy_fraction(double kernel_union_ms, double window_ms) {
  BusyFraction b;
  if (!(window_ms > 0) || !(kernel_union_ms > 0)) return b;
  const double r = kernel_union_ms / window_ms;
  b.value = std::min(r, 1.0);
  if (r > 1.0) b.raw = r;
  return b;
}

// Kernel intervals [start, end) in ns, summed three ways.
struct KernelCoverage {
  double sum_ms = 0;    // every kernel's duration added (overlaps count twice)
  double union_ms = 0;  // time with at least one kernel running
  double span_ms = 0;   // first start to last end; 0 without intervals
};

inline KernelCoverage kernel_coverage(std::vector<std::pair<uint64_t, uint64_t>> iv) {
  KernelCoverage c;
  if (iv.empty()) return c;
  std::sort(iv.begin(), iv.end());
  uint64_t cur_s = iv.front().first, cur_e = iv.front().first, last_end = 0, uni = 0, sum = 0;
  for (const auto& [b, e] : iv) {
    sum += e - b;
    last_end = std::max(last_end, e);
    if (b > cur_e) {
      uni += cur_e - cur_s;
      cur_s = b;
      cur_e = e;
    } else {
      cur_e = std::max(cur_e, e);
    }
  }
  uni += cur_e - cur_s;
  c.sum_ms = double(sum) * 1e-6;
  c.union_ms = double(uni) * 1e-6;
  c.span_ms = double(last_end - iv.front().first) * 1e-6;
  return c;
}

}  // namespace tr::bench
