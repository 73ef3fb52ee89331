#include "framework/runtime/graph_runner.h"

#include <set>

#include "framework/core/error.h"
#include "framework/core/launch_tally.h"
#include "framework/runtime/nvtx.h"
#include "framework/runtime/stream_schedule.h"

namespace tr {

bool first_layer_bwd_waits_for_deep_comm(const ComputationGraph& cg) {
  return cg.has_collective(GraphId::DEEP_COMM) && cg.has_collective(GraphId::FIRST_LAYER_BWD);
}

bool deep_side_stream_may_stay_open(const ComputationGraph& cg) {
  if (cg.has_collective(GraphId::DEEP_FWD_BWD) || cg.has_collective(GraphId::FIRST_LAYER_BWD)) return false;
  std::set<TensorId> side;
  bool any_side = false;
  for (const Node& n : cg.nodes(GraphId::DEEP_FWD_BWD)) {
    if (n.stream != StreamKind::COMP_2) continue;
    any_side = true;
    side.insert(n.in.begin(), n.in.end());
    side.insert(n.out.begin(), n.out.end());
    for (const RangeRef& r : n.operands) {
      if (!r.is_tensor) return false;
      side.insert(r.tensor);
    }
  }
  if (!any_side) return false;
  for (const Node& n : cg.nodes(GraphId::FIRST_LAYER_BWD))
    if (n.stream == StreamKind::COMP_2 || touches(cg, n, side)) return false;
  return true;
}

GraphRunner::GraphRunner(const ComputationGraph& cg, const PlanSet& plans, const GraphAtlas& atlas,
                         const PreCaptureResult& captured, DeviceContext& ctx)
    : cg_(cg),
      plans_(plans),
      atlas_(atlas),
      ctx_(ctx),
      first_bwd_waits_(first_layer_bwd_waits_for_deep_comm(cg)),
      deep_side_may_stay_open_(ctx.backend() == Backend::Cuda && deep_side_stream_may_stay_open(cg)) {
  for (Variant v : kAllVariants) {
    for (int g = 0; g < kGraphIdCount; ++g) {
      const AtlasSlot& s = atlas.slot(v, static_cast<GraphId>(g));
      if (!s.present()) continue;
      const auto& cgraph = captured.graphs.at(static_cast<size_t>(s.captured_idx));
      if (cgraph && cgraph->ready(ctx.local_rank()))
        table_[static_cast<size_t>(vidx(v))][static_cast<size_t>(g)] = cgraph.get();
    }
  }
}

void GraphRunner::launch(GraphId g, Variant v) {
  const AtlasSlot& s = atlas_.slot(v, g);
  if (!s.present()) return;
  const CapturedGraph* c = table_[static_cast<size_t>(vidx(v))][static_cast<size_t>(g)];
  if (splice_) {
    TR_CHECK(c != nullptr, "step graph: ", graph_name(g), " of ", variant_name(v), " is not captured");
    if (g == GraphId::DEEP_FWD_BWD && deep_side_may_stay_open_) {
      // Captured straight into the step graph, COMP_2 left open (Note [the
      // deep weight gradients finish beside the first layer's backward]).
      StreamSchedule sched(ctx_, s.stream);
      run_nodes(g, s, sched);
      if (sched.join_except(StreamKind::COMP_2)) open_side_ = StreamKind::COMP_2;
      return;
    }
    c->splice(ctx_, *splice_);
    return;
  }
  nvtx::Range range(g);
  if (c) {
    c->launch(ctx_);
    return;
  }
  // Eager: interpret the nodes anew, as a framework without a compiled plan would.
  StreamSchedule sched(ctx_, s.stream);
  launch_tally().nodes += run_nodes(g, s, sched);
  sched.join();
}

int64_t GraphRunner::run_nodes(GraphId g, const AtlasSlot& s, StreamSchedule& sched) {
  int64_t n_run = 0;
  for (const Node& n : cg_.nodes(g)) {
    const StreamKind ns = node_stream(n, g);
    const PreparedNode p = prepare_node(n, cg_, plans_, *s.plan, ctx_, ns);
    sched.before(p, ns);
    p.run();
    sched.after(p, ns);
    ++n_run;
  }
  return n_run;
}

void GraphRunner::join_open_side_stream(StreamKind waiter) {
  if (open_side_ == StreamKind::COUNT) return;
  ctx_.stream_wait(waiter, open_side_);
  open_side_ = StreamKind::COUNT;
}

}  // namespace tr
