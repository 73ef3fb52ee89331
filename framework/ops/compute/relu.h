#pragma once
// ReLU.  ReluFwd: x -> y = max(x,0).  ReluBwd: dy, y -> dx = dy * (y > 0).
// ReluBwdAdd takes a second gradient, dy, y, dy2 -> dx = (dy + dy2) * (y > 0):
// the fusion of a gradient fan-in Add and the ReLU behind it (Note [fusion] in
// framework/graph/fusion.h). The sum is rounded to T once, as Add does, so the
// fused op gives the bits of Add then ReluBwd.
#include "framework/ops/op_kind.h"
#include "framework/ops/shape_ctx.h"

namespace tr {

// ReluBwd's and ReluBwdAdd's operands by name (dy2 null for ReluBwd), checked
// once for both backends: every tensor has dy's type and element count.
struct ReluBwdOperands {
  const TensorRef* dy = nullptr;
  const TensorRef* y = nullptr;
  const TensorRef* dy2 = nullptr;
  const TensorRef* dx = nullptr;
};
ReluBwdOperands relu_bwd_operands(OpKind kind, const OpCall& c);

void relu_fwd_shapes(const ShapeCtx& c, Shape* out, int n_out);
void relu_bwd_shapes(const ShapeCtx& c, Shape* out, int n_out);
void relu_bwd_add_shapes(const ShapeCtx& c, Shape* out, int n_out);
void relu_fwd_cpu(const OpCall& c);
void relu_fwd_cuda(const OpCall& c);
void relu_bwd_cpu(const OpCall& c);
void relu_bwd_cuda(const OpCall& c);
void relu_bwd_add_cpu(const OpCall& c);
void relu_bwd_add_cuda(const OpCall& c);

}  // namespace tr
