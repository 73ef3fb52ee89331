#pragma once
// GraphRunner: one rank's view of a prepared run. Before the epoch loop it
// resolves every (variant, GraphId) to its executable once (the exec table);
// launch() then does no lookups for captured graphs. Graphs the mode keeps
// eager are interpreted node by node at every launch.
#include <array>

#include "framework/runtime/pre_capture.h"

namespace tr {

// Note [one collective at a time] (step_loop.h): both graphs hold collectives.
bool first_layer_bwd_waits_for_deep_comm(const ComputationGraph& cg);

class GraphRunner {
 public:
  GraphRunner(const ComputationGraph& cg, const PlanSet& plans, const GraphAtlas& atlas,
              const PreCaptureResult& captured, DeviceContext& ctx);

  // Launches graph g of variant v on its stream. A graph the variant lacks is a
  // no-op (e.g. DEEP_COMM with one rank, casts without AMP).
  void launch(GraphId g, Variant v);
  bool has(GraphId g, Variant v) const { return atlas_.slot(v, g).present(); }
  DeviceContext& ctx() { return ctx_; }
  // Note [one collective at a time] (step_loop.h), resolved once with the exec table.
  bool first_bwd_waits_for_deep_comm() const { return first_bwd_waits_; }
  const ComputationGraph& graph() const { return cg_; }

  // While a target is set, launch() adds each captured graph to a step graph
  // being built (CapturedGraph::splice) instead of running it; every graph
  // launched then must be captured. Null ends splicing.
  void splice_into(std::vector<const CapturedGraph*>* cpu_seq) { splice_ = cpu_seq; }

 private:
  const ComputationGraph& cg_;
  const PlanSet& plans_;
  const GraphAtlas& atlas_;
  DeviceContext& ctx_;
  std::array<std::array<const CapturedGraph*, kGraphIdCount>, kVariantCount> table_{};
  std::vector<const CapturedGraph*>* splice_ = nullptr;
  bool first_bwd_waits_ = false;
};

}  // namespace tr
