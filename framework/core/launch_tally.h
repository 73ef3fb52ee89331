#pragma once
// Note [launch accounting]: host-side submissions counted where they happen, per
// thread (one thread drives one rank): kernels our launchers start
// (TR_LAUNCH_CHECK counts them), library calls that start kernels inside cuDNN /
// cuBLAS, async memcpys, graph launches, cross-stream event operations, and
// nodes interpreted by the eager path. A captured graph's kernels are launched
// by the driver at replay and never pass through here: in full capture the
// step's kernel count is zero by construction, and tr-bench checks it against
// CUPTI's independent count.
#include <cstdint>

namespace tr {

struct LaunchTally {
  int64_t kernels = 0;         // our own kernel launches
  int64_t library_calls = 0;   // cuDNN / cuBLAS calls that launch kernels
  int64_t memcpys = 0;         // cudaMemcpyAsync
  int64_t memsets = 0;         // cudaMemsetAsync
  int64_t graph_launches = 0;  // cudaGraphLaunch (or a CPU replay of a prepared graph)
  int64_t event_ops = 0;       // cudaEventRecord + cudaStreamWaitEvent
  int64_t nodes = 0;           // graph nodes run one by one (eager path)

  LaunchTally operator-(const LaunchTally& o) const {
    return {kernels - o.kernels, library_calls - o.library_calls,   memcpys - o.memcpys,
            memsets - o.memsets, graph_launches - o.graph_launches, event_ops - o.event_ops,
            nodes - o.nodes};
  }
  LaunchTally& operator+=(const LaunchTally& o) {
    kernels += o.kernels;
    library_calls += o.library_calls;
    memcpys += o.memcpys;
    memsets += o.memsets;
    graph_launches += o.graph_launches;
    event_ops += o.event_ops;
    nodes += o.nodes;
    return *this;
  }
};

// The calling thread's tally.
inline LaunchTally& launch_tally() {
  thread_local LaunchTally t;
  return t;
}

}  // namespace tr
