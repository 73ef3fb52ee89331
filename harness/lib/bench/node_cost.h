#pragma once
// What one node of a compiled graph costs the hardware: its floating-point
// operations and the bytes it moves, from its operands' shapes and element
// types in one variant (Note [step roofline], step_roofline.h, says how the
// step adds them up). A COMPUTE node's cost is in compute_node_cost.cpp, a
// RANGE node's in range_node_cost.cpp.
#include <span>

#include "framework/graph/memory_plan.h"
#include "framework/ops/op_call.h"
#include "framework/ops/op_kind.h"

namespace tr::bench {

// FLOPs by what does them, so a reader (and a test) sees the products apart
// from the few-FLOPs-per-element work around them.
struct NodeFlops {
  double products = 0;     // matrix products and convolutions: 2 x M x N x K
  double attention = 0;    // attention's QK^T and PV products (and their gradients) over the causal pairs
  double elementwise = 0;  // everything else, a few FLOPs per element
  double total() const { return products + attention + elementwise; }
  NodeFlops& operator+=(const NodeFlops& o) {
    products += o.products;
    attention += o.attention;
    elementwise += o.elementwise;
    return *this;
  }
};

struct NodeCost {
  NodeFlops flops;
  double bytes = 0;  // every operand the node reads, read once; every output, written once
};

// A COMPUTE node of kind k as a call (op_call.h) whose pointers are never
// read: its operands' shapes and element types in its op table line's order
// (Note [operands by name], op_signature.h), its attributes and its variant
// (the input preparation reads variant->batch rows of its staging-sized inputs).
NodeCost compute_node_cost(OpKind k, const OpCall& call);

// A RANGE node over its resolved operands (PlanSet::resolve). Collectives
// (AllReduceSum) cost nothing here: the interconnect bounds them, not the
// GPU's own peaks, and the gradient all-reduce has counters of its own.
NodeCost range_node_cost(RangeOp k, const RangeAttrs& a, std::span<const ResolvedRange> ops);

}  // namespace tr::bench
