#pragma once
// What a shape rule sees: its node's input shapes and attributes. Every op
// header declares its rule with these, apart from the op table that lists the
// rules (op_registry.h).
#include "framework/core/error.h"
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

// The checks most shape rules start with, one line each ("relu_fwd: x has a
// non-positive dim: [2,0,3]"): every dim positive; and at least one dim too.
inline void check_positive_dims(const Shape& s, const char* op, const char* what) {
  for (int i = 0; i < s.rank; ++i) TR_USER_CHECK(s[i] > 0, op, ": ", what, " has a non-positive dim: ", s.str());
}
inline void check_tensor_dims(const Shape& s, const char* op, const char* what) {
  TR_USER_CHECK(s.rank >= 1, op, ": ", what, " has no dims");
  check_positive_dims(s, op, what);
}

}  // namespace tr
