#include "framework/runtime/captured_graph.h"

#include "framework/core/launch_tally.h"

namespace tr {

void CapturedGraph::launch(DeviceContext& ctx) const {
  const size_t r = static_cast<size_t>(ctx.rank());
  ++launch_tally().graph_launches;
  if (const auto& n = native_.at(r)) {
    n->launch(ctx, stream_for(key_.gid));
    return;
  }
  for (const PreparedNode& p : cpu_ops_.at(r)) p.run();
}

}  // namespace tr
