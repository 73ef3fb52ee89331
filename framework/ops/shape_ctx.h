#pragma once
// What a shape rule sees: its node's input shapes and attributes. Every op
// header declares its rule with these, apart from the op table that lists the
// rules (op_registry.h).
#include "framework/core/shape.h"
#include "framework/core/variant_dims.h"
#include "framework/ops/op_call.h"

namespace tr {

struct ShapeCtx {
  const Shape* in = nullptr;  // input shapes, in the node's input order
  int n_in = 0;
  const OpAttrs* attrs = nullptr;
  const VariantDims* variant = nullptr;
};
// Writes the shapes of the node's outputs; throws UserError on inconsistent inputs.
// The counts match the kind's operand list (op_signature.h) before it is called.
using ShapeFn = void (*)(const ShapeCtx&, Shape* out, int n_out);

}  // namespace tr
