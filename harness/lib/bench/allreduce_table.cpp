#include "harness/lib/bench/allreduce_table.h"

namespace tr::bench {

double bus_bandwidth_gbps(double bytes, int ranks, double ms) {
  if (ranks <= 1 || ms <= 0) return 0;
  return bytes * 2.0 * (ranks - 1) / ranks / (ms * 1e-3) / 1e9;
}

void print_allreduce_table(const BenchReport& r, std::FILE* out) {
  bool header = false;
  for (const BenchCase& c : r.cases) {
    const auto& k = c.counters;
    if (!k.count("grad_allreduce_ms_per_step") || !k.count("allreduce_alone_ms_per_step")) continue;
    if (!header) {
      std::fprintf(
          out,
          "gradient all-reduce per step after the backward, DEEP_COMM + FIRST_COMM (bus bandwidth = "
          "bytes x 2(n-1)/n / time;\nbwd_MB: buckets all-reduced inside the backward, beside it, not timed):\n");
      std::fprintf(out, "%-8s %-16s %5s %6s %10s %5s %10s %10s %10s %10s %9s %8s\n", "model", "mode",
                   r.context.device_kind == "cuda" ? "gpus" : "ranks", "batch", "MB", "msgs", "in_step_ms", "in_GB/s",
                   "alone_ms", "alone_GB/s", "in/alone", "bwd_MB");
      header = true;
    }
    const double in = k.at("grad_allreduce_ms_per_step"), alone = k.at("allreduce_alone_ms_per_step");
    const auto bwd = k.find("grad_allreduce_in_backward_bytes_per_step");
    std::fprintf(out, "%-8s %-16s %5d %6lld %10.3f %5.0f %10.4f %10.2f %10.4f %10.2f %9.2f %8.3f\n", c.model.c_str(),
                 c.mode.c_str(), c.ranks, static_cast<long long>(c.batch), k.at("grad_allreduce_bytes_per_step") / 1e6,
                 k.at("grad_allreduce_messages_per_step"), in, k.at("grad_allreduce_busbw_gbps"), alone,
                 k.at("allreduce_alone_busbw_gbps"), alone > 0 ? in / alone : 0.0,
                 bwd == k.end() ? 0.0 : bwd->second / 1e6);
  }
}

}  // namespace tr::bench
