#include "harness/lib/bench/top_kernels.h"

#include <string>

namespace tr::bench {

void print_top_kernels(const BenchReport& r, std::FILE* out) {
  bool any = false;
  for (const BenchCase& c : r.cases) {
    if (c.top_kernels.empty()) continue;
    any = true;
    const auto steps = c.counters.find("gpu_kernels_per_step");
    const auto ms = c.counters.find("gpu_kernel_ms_per_step");
    if (steps == c.counters.end() || ms == c.counters.end() || ms->second <= 0) continue;
    std::fprintf(out, "\ntop kernels per step: %s %s %s, batch %lld, %d rank(s): %.3f ms in %.0f kernels\n",
                 c.model.c_str(), c.mode.c_str(), c.variant.c_str(), static_cast<long long>(c.batch), c.ranks,
                 ms->second, steps->second);
    std::fprintf(out, "%10s %7s %6s  %s\n", "ms/step", "share", "calls", "kernel");
    const double n = double(c.iterations);
    for (const KernelTotal& k : c.top_kernels) {
      std::string name = k.name.size() > 110 ? k.name.substr(0, 107) + "..." : k.name;
      std::fprintf(out, "%10.4f %6.1f%% %6.1f  %s\n", k.ms / n, 100.0 * (k.ms / n) / ms->second, double(k.count) / n,
                   name.c_str());
    }
  }
  // Note [programmatic dependent launch]: a kernel launched early is resident,
  // and timed by CUPTI, while it waits for the one before it.
  if (any && r.context.programmatic_launch)
    std::fprintf(out,
                 "(programmatic launch on: a kernel's time includes its wait for the kernel before it, and GPU busy "
                 "counts that wait; --no-pdl gives each kernel's own time)\n");
}

}  // namespace tr::bench
