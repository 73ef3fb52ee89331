#pragma once
// Note [step roofline]: how close a step is to the hardware, from the step's
// own graph rather than a formula (Note [model FLOPs] has the formula, for
// GPT models only; Note [roofline] the same bound for one op).
//
// The step is what one rank runs per step of the variant a case times: for
// a training variant the graphs train_step launches (step_loop.cpp) on one
// input buffer, for a validation variant INF_MAIN and INF_EMA. Left out: the
// transfer of the next batch (on its own stream beside the compute, bounded
// by the host's link, not HBM), the once-an-epoch clears (Note [gradients
// are overwritten]) and the collectives (the interconnect bounds them; the
// grad_allreduce_* counters measure them). Per node, from its operands'
// shapes and element types in that variant's memory plan (node_cost.h):
//   F  its floating-point operations: products (fc and convolution forward
//      and both gradients, 2 x M x N x K: a convolution 2 N Ho Wo K R R C,
//      none with groups), attention (QK^T and PV over the causal pairs
//      T (T + 1) / 2, two products forward, five backward, which computes the
//      scores again) and element-wise work, a few FLOPs per element for each
//      other op (elementwise_flops.cpp, range_node_cost.cpp; a fused kind's
//      rate is the sum of its parts', so fusion moves bytes, not FLOPs). The
//      products dominate a step at the batches a GPU runs; at a small batch
//      the optimizer's 16-20 FLOPs per weight do not (the mlp at batch 8: a
//      third of its count);
//   B  its bytes: each operand it reads, read once, each it writes, written
//      once, at its element type's size. Inputs read for their shape only
//      are not read; a gather reads the rows it gathers.
// One rank's step then gives
//   graph FLOPs per step = ranks x sum F (every rank runs the same graph on its
//      share of the batch: Note [uneven last batch]);
//   roofline bound       = sum over nodes of max(F / peak FLOP/s, B / peak bandwidth):
//      each node alone at the limit of compute or of HBM, one after another;
//   of_roofline          = roofline bound / the measured median step, at most 1:
//      what is left is launch and dependency gaps, and kernels below their
//      own roofline (the op benchmarks' of_roofline finds which).
// The peaks (roofline.h's device_peaks): a 16-bit run's FLOPs against the dense
// tensor peak, an fp32 run's against the fp32 peak; element-wise work runs on
// CUDA cores, slower than the tensor peak, so its share of the bound is low,
// never high. A bound cannot be beaten unless nodes overlap: weight gradients
// on a side stream (Note [streams inside a graph]) or LARS's three groups can
// run a compute-bound node beside a memory-bound one. tr-bench keeps an
// of_roofline above 1 and warns, since it means such overlap or a count too high.
#include <optional>
#include <string>
#include <vector>

#include "framework/graph/memory_plan.h"
#include "harness/lib/bench/node_cost.h"
#include "harness/lib/bench/roofline.h"
#include "harness/lib/bench/step_counters.h"

namespace tr::bench {

// The graphs of one step of v, in order (see the Note).
std::vector<GraphId> step_graph_ids(const ComputationGraph& cg, Variant v);

// One rank's step of v.
struct StepCost {
  NodeFlops flops;     // summed over its nodes, by kind
  double bytes = 0;    // summed over its nodes
  int64_t nodes = 0;   // the nodes counted
  double bound_s = 0;  // the roofline bound; 0 without peaks
};
StepCost step_cost(const CompiledModel& m, const PlanSet& plans, Variant v, const std::optional<Peaks>& peaks);

// One node alone at the hardware's limit: max(F / peak FLOP/s, B / peak bandwidth).
double node_bound_s(const NodeCost& c, const Peaks& p);

// The counters of one case (step_counters.h): the step's cost on `ranks`
// ranks against its measured median step; with peaks (CUDA, a known GPU),
// the utilisation and the bound too.
StepRooflineCounters step_roofline_counters(const StepCost& s, int ranks, double median_step_ms,
                                            const std::optional<Peaks>& peaks);

// A warning line on stderr when a case's step beat its roofline bound.
void warn_if_bound_beaten(const std::string& case_name, const StepRooflineCounters& c);

}  // namespace tr::bench
