#pragma once
// One bench case's counters, typed, and the one function that writes them
// under the report's names (BenchCase::counters, bench_types.h; what each
// means: docs/performance.md).
#include <map>
#include <optional>
#include <string>

namespace tr::bench {

// Rank 0's own tally, per step (Note [launch accounting]).
struct LaunchCounters {
  double graph_launches = 0, kernel_launches = 0, library_calls = 0, memcpy = 0, memset = 0, event_ops = 0;
  double node_launches = 0;
  double cpu_launches = 0;  // host submissions: CUDA's enqueueing calls, or the CPU's nodes and graphs
};

// How busy rank 0's GPU was in one traced repetition, per step (Note [busy fraction]).
struct TracedBusy {
  double fraction = 0;        // union of the kernel intervals over their span, at most 1
  std::optional<double> raw;  // the raw ratio, only when it read above 1
  double idle_us = 0;         // span minus union
  double kernel_ms = 0;       // every kernel's duration added (overlaps count twice)
  double traced_step_ms = 0;  // the repetition's host wall time
};

// CUPTI's traced repetitions, per step (Note [busy fraction]).
struct CuptiCounters {
  double kernel_launches = 0, graph_launches = 0, memcpy = 0;  // per rank, to compare with rank 0's tally
  double gpu_kernels = 0;
  TracedBusy resident;             // the case as it ran: a waiting kernel counts
  std::optional<TracedBusy> busy;  // no kernel launched programmatically: only the kernels' own work
  bool launches_agree = true;      // with rank 0's tally (launch_crosscheck.h)
};

// The gradient all-reduce inside the step and alone (Note [all-reduce bandwidth]).
struct AllreduceCounters {
  double bytes = 0, messages = 0, in_step_ms = 0, alone_ms = 0, in_step_busbw_gbps = 0, alone_busbw_gbps = 0;
  double in_backward_bytes = 0, in_backward_messages = 0;  // Note [gradient buckets]
};

// A sequence model's throughput in tokens and model FLOPs (Note [model FLOPs]).
struct SequenceCounters {
  double tokens_per_second = 0, tokens_per_second_per_gpu = 0;
  double flops_per_token = 0, tflops_per_gpu = 0;
  std::optional<double> mfu;  // when the GPU's peak is known
};

// The step's own FLOPs and its roofline bound (Note [step roofline], step_roofline.h).
struct StepRooflineCounters {
  double flops_per_step = 0;  // every rank's
  double tflops_per_gpu = 0;  // achieved, per rank
  // With the GPU's peaks (roofline.h's device_peaks; never on the CPU):
  std::optional<double> flop_utilisation;  // tflops_per_gpu over the peak FLOP/s
  std::optional<double> bound_ms;          // the roofline bound of one rank's step
  std::optional<double> of_roofline;       // bound_ms / the median step
};

// Rank 0's GPU memory (Note [device memory], device_memory.h).
struct DeviceMemoryCounters {
  double before_bytes = 0, peak_bytes = 0;
};

struct StepCounters {
  LaunchCounters launches;
  double captured_graphs = 0, unique_graphs = 0, atlas_slots = 0, reused_slots = 0;
  double arena_bytes = 0, side_streams = 0, capture_ms = 0;
  double samples_per_second = 0, samples_per_second_per_gpu = 0;
  std::optional<CuptiCounters> cupti;
  std::optional<AllreduceCounters> allreduce;
  std::optional<SequenceCounters> sequence;
  std::optional<StepRooflineCounters> roofline;
  std::optional<DeviceMemoryCounters> device_memory;
};

// The counters under the report's names, added to `out`.
void write_counters(const StepCounters& c, std::map<std::string, double>& out);
// gpu_busy_fraction and its companions alone (a case traced again without
// programmatic launch gets them after its other counters).
void write_busy_counters(const TracedBusy& b, std::map<std::string, double>& out);

}  // namespace tr::bench
