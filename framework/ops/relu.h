#pragma once
// ReLU.  ReluFwd: x -> y = max(x,0).  ReluBwd: dy, y -> dx = dy * (y > 0).
// ReluBwd also takes a second gradient, dy, y, dy2 -> dx = (dy + dy2) * (y > 0):
// the fusion of a gradient fan-in Add and the ReLU behind it (Note [fusion] in
// framework/graph/fusion.h). The sum is rounded to T once, as Add does, so the
// fused op gives the bits of Add then ReluBwd.
#include "framework/ops/op_registry.h"

namespace tr {

void relu_fwd_shapes(const ShapeCtx& c, Shape* out, int n_out);
void relu_bwd_shapes(const ShapeCtx& c, Shape* out, int n_out);
void relu_fwd_cpu(const OpCall& c);
void relu_fwd_cuda(const OpCall& c);
void relu_bwd_cpu(const OpCall& c);
void relu_bwd_cuda(const OpCall& c);

}  // namespace tr
