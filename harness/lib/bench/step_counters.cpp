#include "harness/lib/bench/step_counters.h"

namespace tr::bench {

void write_counters(const StepCounters& c, std::map<std::string, double>& k) {
  const LaunchCounters& l = c.launches;
  k["graph_launches_per_step"] = l.graph_launches;
  k["kernel_launches_per_step"] = l.kernel_launches;
  k["library_calls_per_step"] = l.library_calls;
  k["memcpy_per_step"] = l.memcpy;
  k["memset_per_step"] = l.memset;
  k["event_ops_per_step"] = l.event_ops;
  k["node_launches_per_step"] = l.node_launches;
  k["cpu_launches_per_step"] = l.cpu_launches;
  k["captured_graphs"] = c.captured_graphs;
  k["unique_graphs"] = c.unique_graphs;
  k["atlas_slots"] = c.atlas_slots;
  k["reused_slots"] = c.reused_slots;
  k["arena_bytes"] = c.arena_bytes;
  k["side_streams"] = c.side_streams;
  k["capture_ms"] = c.capture_ms;
  k["samples_per_second"] = c.samples_per_second;
  k["samples_per_second_per_gpu"] = c.samples_per_second_per_gpu;
  if (c.sequence) {
    const SequenceCounters& q = *c.sequence;
    k["tokens_per_second"] = q.tokens_per_second;
    k["tokens_per_second_per_gpu"] = q.tokens_per_second_per_gpu;
    k["model_flops_per_token"] = q.flops_per_token;
    k["model_tflops_per_gpu"] = q.tflops_per_gpu;
    if (q.mfu) k["mfu"] = *q.mfu;
  }
  if (c.roofline) {
    const StepRooflineCounters& r = *c.roofline;
    k["graph_flops_per_step"] = r.flops_per_step;
    k["graph_tflops_per_gpu"] = r.tflops_per_gpu;
    if (r.flop_utilisation) k["graph_flop_utilisation"] = *r.flop_utilisation;
    if (r.bound_ms) k["roofline_bound_ms"] = *r.bound_ms;
    if (r.of_roofline) k["of_roofline"] = *r.of_roofline;
  }
  if (c.device_memory) {
    k["device_memory_before_bytes"] = c.device_memory->before_bytes;
    k["device_memory_peak_bytes"] = c.device_memory->peak_bytes;
    k["device_memory_session_bytes"] = c.device_memory->peak_bytes - c.device_memory->before_bytes;
  }
  if (c.cupti) {
    const CuptiCounters& u = *c.cupti;
    k["cupti_kernel_launches_per_step"] = u.kernel_launches;
    k["cupti_graph_launches_per_step"] = u.graph_launches;
    k["cupti_memcpy_per_step"] = u.memcpy;
    k["gpu_kernel_ms_per_step"] = u.resident.kernel_ms;
    k["gpu_resident_fraction"] = u.resident.fraction;
    if (u.resident.raw) k["gpu_resident_fraction_raw"] = *u.resident.raw;
    k["gpu_idle_us_per_step"] = u.resident.idle_us;
    k["traced_step_ms"] = u.resident.traced_step_ms;
    k["gpu_kernels_per_step"] = u.gpu_kernels;
    k["launch_crosscheck_ok"] = u.launches_agree ? 1 : 0;
    if (u.busy) write_busy_counters(*u.busy, k);
  }
  if (c.allreduce) {
    const AllreduceCounters& a = *c.allreduce;
    k["grad_allreduce_bytes_per_step"] = a.bytes;
    k["grad_allreduce_messages_per_step"] = a.messages;
    k["grad_allreduce_ms_per_step"] = a.in_step_ms;
    k["allreduce_alone_ms_per_step"] = a.alone_ms;
    k["grad_allreduce_busbw_gbps"] = a.in_step_busbw_gbps;
    k["allreduce_alone_busbw_gbps"] = a.alone_busbw_gbps;
    k["grad_allreduce_in_backward_bytes_per_step"] = a.in_backward_bytes;
    k["grad_allreduce_in_backward_messages_per_step"] = a.in_backward_messages;
  }
}

void write_busy_counters(const TracedBusy& b, std::map<std::string, double>& k) {
  k["gpu_busy_fraction"] = b.fraction;
  if (b.raw) k["gpu_busy_fraction_raw"] = *b.raw;
  k["gpu_busy_idle_us_per_step"] = b.idle_us;
  k["gpu_busy_kernel_ms_per_step"] = b.kernel_ms;
  k["gpu_busy_traced_step_ms"] = b.traced_step_ms;
}

}  // namespace tr::bench
