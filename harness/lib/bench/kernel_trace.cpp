#include "harness/lib/bench/kernel_trace.h"

#include <set>

#include "harness/lib/report/atomic_file.h"

namespace tr::bench {

nlohmann::json kernel_trace_json(const BenchReport& r) {
  nlohmann::json events = nlohmann::json::array();
  int pid = 0;
  for (const BenchCase& c : r.cases) {
    if (c.kernel_trace.empty()) continue;
    ++pid;
    events.push_back(
        {{"ph", "M"}, {"name", "process_name"}, {"pid", pid}, {"args", {{"name", c.name(r.context.device_kind)}}}});
    events.push_back({{"ph", "M"}, {"name", "process_sort_index"}, {"pid", pid}, {"args", {{"sort_index", pid}}}});
    const uint64_t t0 = c.kernel_trace.front().start_ns;  // records are in start order
    std::set<uint32_t> streams;
    for (const KernelRecord& k : c.kernel_trace) streams.insert(k.stream);
    for (uint32_t s : streams)
      events.push_back({{"ph", "M"},
                        {"name", "thread_name"},
                        {"pid", pid},
                        {"tid", s},
                        {"args", {{"name", "stream " + std::to_string(s)}}}});
    for (const KernelRecord& k : c.kernel_trace) {
      const double dur_us = k.end_ns > k.start_ns ? double(k.end_ns - k.start_ns) * 1e-3 : 0.0;
      const bool memop = !k.name.empty() && k.name.front() == '[';  // "[memset]", "[memcpy]"
      events.push_back({{"ph", "X"},
                        {"cat", memop ? "memop" : "kernel"},
                        {"name", k.name},
                        {"pid", pid},
                        {"tid", k.stream},
                        {"ts", double(k.start_ns - t0) * 1e-3},
                        {"dur", dur_us}});
    }
  }
  return {
      {"traceEvents", events},
      {"displayTimeUnit", "ns"},
      {"otherData",
       {{"device", r.context.device_name}, {"precision", r.context.precision}, {"git_commit", r.context.git_commit}}}};
}

void write_kernel_trace(const BenchReport& r, const std::string& path) {
  write_file_atomically(path, kernel_trace_json(r).dump() + "\n");
}

}  // namespace tr::bench
