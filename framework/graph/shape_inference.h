#pragma once
// Shapes of every tensor for one variant: fixed shapes as declared, activation
// shapes by running each op's shape rule over the variant's graphs in order.
#include <vector>

#include "framework/core/variant_dims.h"
#include "framework/graph/computation_graph.h"
#include "framework/graph/variant.h"

namespace tr {

// Graphs a variant executes, in the canonical step order (GraphId order).
std::vector<GraphId> graphs_of(const ComputationGraph& cg, Variant v);

// shapes[id]; activations a variant never touches keep rank 0.
// Throws UserError when a shape rule rejects the variant (e.g. an fc that does
// not match a low-resolution input).
std::vector<Shape> infer_shapes(const ComputationGraph& cg, Variant v, const VariantDims& d);

}  // namespace tr
