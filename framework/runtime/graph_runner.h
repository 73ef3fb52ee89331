#pragma once
// GraphRunner: one rank's view of a prepared run. Before the epoch loop it
// resolves every (variant, GraphId) to its executable once (the exec table);
// launch() then does no lookups for captured graphs. Graphs the mode keeps
// eager are interpreted node by node at every launch.
#include <array>

#include "framework/runtime/pre_capture.h"
#include "framework/runtime/stream_schedule.h"

namespace tr {

// Note [one collective at a time] (step_loop.h): both graphs hold collectives.
bool first_layer_bwd_waits_for_deep_comm(const ComputationGraph& cg);

// Note [the deep weight gradients finish beside the first layer's backward]
// DEEP_FWD_BWD ends with the data gradient of the layer after the first, on
// COMP_1, while COMP_2 still computes that layer's weight gradient (the cnn at
// batch 256 on the H200: 30-60 us of it). As a child node of the step graph,
// DEEP_FWD_BWD ends only when both have, so FIRST_LAYER_BWD, which needs only
// the data gradient, waited for the weight gradient. So where it is safe
// (deep_side_stream_may_stay_open), a step graph captures DEEP_FWD_BWD's nodes
// straight into itself and leaves COMP_2 unjoined: FIRST_LAYER_BWD follows the
// data gradient, and UPDATE waits for COMP_2 before the deep gradients' cast
// (join_open_side_stream, step_loop.cpp); the step graph's end joins every
// stream. The memory plan keeps DEEP_FWD_BWD's side tensors alive to
// FIRST_LAYER_BWD's end (side_streams_joined_by). Each kernel and its
// arguments stay the same, so no bit changes; eager and partial capture join
// at the graph's end as before.
// Safe: neither graph holds a collective, FIRST_LAYER_BWD has no node on COMP_2
// (its kernels would share COMP_2's workspace with the unjoined ones) and
// touches no tensor that a COMP_2 node of DEEP_FWD_BWD touches (touches(): by
// id, or through a region of the tensor's role); a COMP_2 node with a region
// operand keeps the join.
bool deep_side_stream_may_stay_open(const ComputationGraph& cg);

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
  void splice_into(std::vector<const CapturedGraph*>* cpu_seq) {
    splice_ = cpu_seq;
    open_side_ = StreamKind::COUNT;
  }
  // Makes `waiter` wait for a side stream a spliced graph left unjoined, if
  // any (Note [the deep weight gradients finish beside the first layer's
  // backward]).
  void join_open_side_stream(StreamKind waiter);

 private:
  // Prepares and runs graph g's nodes on their streams, ordered by sched, and
  // leaves the joins to the caller; returns how many ran.
  int64_t run_nodes(GraphId g, const AtlasSlot& s, StreamSchedule& sched);

  const ComputationGraph& cg_;
  const PlanSet& plans_;
  const GraphAtlas& atlas_;
  DeviceContext& ctx_;
  std::array<std::array<const CapturedGraph*, kGraphIdCount>, kVariantCount> table_{};
  std::vector<const CapturedGraph*>* splice_ = nullptr;
  bool first_bwd_waits_ = false;
  bool deep_side_may_stay_open_ = false;
  StreamKind open_side_ = StreamKind::COUNT;  // left unjoined by the last spliced graph
};

}  // namespace tr
