#include "harness/lib/bench/step_roofline.h"

#include <algorithm>
#include <cstdio>

#include "framework/core/error.h"
#include "framework/graph/shape_inference.h"

namespace tr::bench {
namespace {

// A node's operands in plan p: a RANGE node's regions resolved, a COMPUTE
// node's tensors as a call without pointers (node_cost.h).
NodeCost cost_of(const Node& n, const ComputationGraph& cg, const PlanSet& plans, const MemoryPlan& p) {
  if (n.kind == Node::Kind::Range) {
    std::vector<ResolvedRange> ops;
    for (const RangeRef& r : n.operands) ops.push_back(plans.resolve(cg, r, p));
    return range_node_cost(n.range_op, n.range_attrs, ops);
  }
  auto refs = [&](const std::vector<TensorId>& ids) {
    std::vector<TensorRef> v;
    for (TensorId t : ids) v.push_back(TensorRef{nullptr, cg.tensor(t).dtype, p.shape_of(t)});
    return v;
  };
  const std::vector<TensorRef> in = refs(n.in), out = refs(n.out);
  const OpCall call{in.data(), int(in.size()), out.data(), int(out.size()), &n.attrs, &p.dims, nullptr};
  return compute_node_cost(n.op, call);
}

}  // namespace

std::vector<GraphId> step_graph_ids(const ComputationGraph& cg, Variant v) {
  std::vector<GraphId> out;
  if (!is_train(v)) {  // val_step: the main weights' forward on one buffer, then the EMA's
    for (GraphId g : {GraphId::INF_MAIN_A, GraphId::INF_EMA})
      if (cg.has(g)) out.push_back(g);
    return out;
  }
  for (GraphId g : graphs_of(cg, v)) {
    switch (g) {
      case GraphId::TRANSFER_A:
      case GraphId::TRANSFER_B:         // the next batch, beside the compute, over the host's link
      case GraphId::ZERO_GRAD:          // once an epoch (Note [gradients are overwritten])
      case GraphId::CLEAR_METRICS:      // once an epoch
      case GraphId::FIRST_LAYER_FWD_B:  // FIRST_LAYER_FWD_A's nodes on the other buffer
        continue;
      default: out.push_back(g);
    }
  }
  return out;
}

double node_bound_s(const NodeCost& c, const Peaks& p) {
  return std::max(c.flops.total() / p.flops, c.bytes / p.bytes);
}

StepCost step_cost(const CompiledModel& m, const PlanSet& plans, Variant v, const std::optional<Peaks>& peaks) {
  const MemoryPlan& p = plans.plan(v);
  TR_CHECK(p.present(), "variant ", variant_name(v), " is not planned");
  StepCost s;
  for (GraphId g : step_graph_ids(m.cg, v)) {
    for (const Node& n : m.cg.nodes(g)) {
      if (n.collective) continue;  // the interconnect's (see the Note)
      const NodeCost c = cost_of(n, m.cg, plans, p);
      s.flops += c.flops;
      s.bytes += c.bytes;
      ++s.nodes;
      if (peaks) s.bound_s += node_bound_s(c, *peaks);
    }
  }
  return s;
}

StepRooflineCounters step_roofline_counters(const StepCost& s, int ranks, double median_step_ms,
                                            const std::optional<Peaks>& peaks) {
  TR_CHECK(ranks >= 1 && median_step_ms > 0, "a step of ", median_step_ms, " ms on ", ranks, " ranks");
  StepRooflineCounters r;
  r.flops_per_step = double(ranks) * s.flops.total();
  r.tflops_per_gpu = r.flops_per_step / double(ranks) / (median_step_ms * 1e-3) / 1e12;
  if (peaks) {
    r.flop_utilisation = r.tflops_per_gpu * 1e12 / peaks->flops;
    r.bound_ms = 1e3 * s.bound_s;
    r.of_roofline = *r.bound_ms / median_step_ms;
  }
  return r;
}

void warn_if_bound_beaten(const std::string& case_name, const StepRooflineCounters& c) {
  if (!c.of_roofline || *c.of_roofline <= 1) return;
  std::fprintf(stderr,
               "tr-bench: warning: %s: the step (%.4g ms) beat its roofline bound (%.4g ms, of_roofline %.3f): "
               "nodes overlapped or a FLOP or byte count is too high (Note [step roofline])\n",
               case_name.c_str(), *c.bound_ms / *c.of_roofline, *c.bound_ms, *c.of_roofline);
}

}  // namespace tr::bench
