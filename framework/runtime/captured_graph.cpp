#include "framework/runtime/captured_graph.h"

#include "framework/core/launch_tally.h"

namespace tr {

void CapturedGraph::launch(DeviceContext& ctx) const {
  const size_t r = static_cast<size_t>(ctx.local_rank());
  ++launch_tally().graph_launches;
  if (const auto& n = native_.at(r)) {
    n->launch(ctx, stream_for(key_.gid));
    return;
  }
  run_cpu(ctx);
}

void CapturedGraph::splice(DeviceContext& ctx, std::vector<const CapturedGraph*>& cpu_seq) const {
  if (const auto& n = native_.at(static_cast<size_t>(ctx.local_rank()))) {
    n->splice(ctx, stream_for(key_.gid));
    return;
  }
  cpu_seq.push_back(this);
}

void CapturedGraph::run_cpu(DeviceContext& ctx) const {
  for (const PreparedNode& p : cpu_ops_.at(static_cast<size_t>(ctx.local_rank()))) p.run();
}

}  // namespace tr
