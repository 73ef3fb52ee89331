#pragma once
// Max pooling. Backward routes each output gradient to the first input position
// (in window scan order) that equals the output; odd trailing rows/cols get 0.
//   MaxPoolFwd:      x[N,H,W,C] -> y[N,H/2,W/2,C]   (floor)
//   MaxPoolBwd:      dy, x, y   -> dx[N,H,W,C]
//   GlobalMaxPoolFwd: x[N,H,W,C] -> y[N,C]
//   GlobalMaxPoolBwd: dy, x, y   -> dx[N,H,W,C]
#include "framework/ops/op_registry.h"

namespace tr {

void maxpool_fwd_shapes(const ShapeCtx& c, Shape* out, int n_out);
void maxpool_bwd_shapes(const ShapeCtx& c, Shape* out, int n_out);
void global_maxpool_fwd_shapes(const ShapeCtx& c, Shape* out, int n_out);
void global_maxpool_bwd_shapes(const ShapeCtx& c, Shape* out, int n_out);
void maxpool_fwd_cpu(const OpCall& c);
void maxpool_fwd_cuda(const OpCall& c);
void maxpool_bwd_cpu(const OpCall& c);
void maxpool_bwd_cuda(const OpCall& c);
void global_maxpool_fwd_cpu(const OpCall& c);
void global_maxpool_fwd_cuda(const OpCall& c);
void global_maxpool_bwd_cpu(const OpCall& c);
void global_maxpool_bwd_cuda(const OpCall& c);

}  // namespace tr
