#pragma once
// ReLU.  ReluFwd: x -> y = max(x,0).  ReluBwd: dy, y -> dx = dy * (y > 0).
#include "framework/ops/op_registry.h"

namespace tr {

void relu_fwd_shapes(const ShapeCtx& c, Shape* out, int n_out);
void relu_bwd_shapes(const ShapeCtx& c, Shape* out, int n_out);
void relu_fwd_cpu(const OpCall& c);
void relu_fwd_cuda(const OpCall& c);
void relu_bwd_cpu(const OpCall& c);
void relu_bwd_cuda(const OpCall& c);

}  // namespace tr
