#pragma once
// Elementwise sum of two tensors of one shape: the residual connection's join,
// and the sum of the gradients of a tensor that feeds two layers.
//   Add: a T, b T -> y T = a + b, then ReLU (y > 0 ? y : 0) when attrs.relu.
// The sum is rounded once to T (f16 adds in f32), so the CPU and CUDA agree bit
// for bit. Its backward needs no op of its own: without ReLU the gradient
// passes to both inputs unchanged; with ReLU it is ReluBwd(dy, y).
#include "framework/ops/shape_ctx.h"

namespace tr {

void add_shapes(const ShapeCtx& c, Shape* out, int n_out);
void add_cpu(const OpCall& c);
void add_cuda(const OpCall& c);

}  // namespace tr
