#pragma once
// A compute node's tensors by the names its kind's line in the op table gives
// them (Note [operands by name], framework/ops/op_signature.h), for graph
// rewrites that must not depend on operand positions (fusion.h).
#include <initializer_list>
#include <string_view>

#include "framework/graph/computation_graph.h"
#include "framework/ops/op_signature.h"

namespace tr {

// The tensor of that name; Error when the kind has none or its attribute leaves it out.
TensorId input_of(const Node& n, std::string_view name);
TensorId output_of(const Node& n, std::string_view name);

struct Named {
  std::string_view name;
  TensorId tensor;
};

// Makes n a node of kind k with these operands, placed in the kind's order
// under n.attrs. Every operand present must be named once, and no other name
// may appear: Error otherwise.
void set_operands(Node& n, OpKind k, std::initializer_list<Named> in, std::initializer_list<Named> out);

}  // namespace tr
