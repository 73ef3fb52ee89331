#include "harness/lib/bench/bench_types.h"

#include <set>

namespace tr::bench {

std::string BenchCase::name(const std::string& device_kind) const {
  return "train_step/model:" + model + "/variant:" + variant + "/mode:" + mode + "/" +
         (device_kind == "cuda" ? "gpus:" : "ranks:") + std::to_string(ranks) + "/batch:" + std::to_string(batch);
}

const std::set<std::string>& deterministic_counters() {
  static const std::set<std::string> k = {"graph_launches_per_step",
                                          "kernel_launches_per_step",
                                          "library_calls_per_step",
                                          "memcpy_per_step",
                                          "memset_per_step",
                                          "cpu_launches_per_step",
                                          "event_ops_per_step",
                                          "node_launches_per_step",
                                          "captured_graphs",
                                          "unique_graphs",
                                          "atlas_slots",
                                          "reused_slots",
                                          "arena_bytes",
                                          "side_streams",
                                          "grad_allreduce_bytes_per_step",
                                          "grad_allreduce_messages_per_step",
                                          "grad_allreduce_in_backward_bytes_per_step",
                                          "grad_allreduce_in_backward_messages_per_step"};
  return k;
}

bool is_deterministic_counter(const std::string& key) { return deterministic_counters().count(key) > 0; }

bool is_fraction_counter(const std::string& key) {
  return key == "gpu_busy_fraction" || key == "gpu_resident_fraction" || key == "mfu";
}

}  // namespace tr::bench
