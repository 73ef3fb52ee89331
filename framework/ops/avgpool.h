#pragma once
// Average pooling, k x k windows with a stride (no padding), and global.
//   AvgPoolFwd:       x[N,H,W,C] -> y[N,Ho,Wo,C], Ho = (H - k)/stride + 1 (floor),
//                     y = mean of the k*k window (attrs.kernel = k, attrs.stride)
//   AvgPoolBwd:       dy[N,Ho,Wo,C], x (shape only) -> dx[N,H,W,C]:
//                     every input position gets dy/(k*k) from each window that holds it
//                     (rows/cols no window reaches get 0)
//   GlobalAvgPoolFwd: x[N,H,W,C] -> y[N,C], the mean over H*W
//   GlobalAvgPoolBwd: dy[N,C], x (shape only) -> dx[N,H,W,C] = dy/(H*W)
// Sums run in f32 (f64 for F64) in a fixed order, so two runs agree bit for bit.
#include "framework/ops/op_registry.h"

namespace tr {

void avgpool_fwd_shapes(const ShapeCtx& c, Shape* out, int n_out);
void avgpool_bwd_shapes(const ShapeCtx& c, Shape* out, int n_out);
void global_avgpool_fwd_shapes(const ShapeCtx& c, Shape* out, int n_out);
void global_avgpool_bwd_shapes(const ShapeCtx& c, Shape* out, int n_out);
void avgpool_fwd_cpu(const OpCall& c);
void avgpool_fwd_cuda(const OpCall& c);
void avgpool_bwd_cpu(const OpCall& c);
void avgpool_bwd_cuda(const OpCall& c);
void global_avgpool_fwd_cpu(const OpCall& c);
void global_avgpool_fwd_cuda(const OpCall& c);
void global_avgpool_bwd_cpu(const OpCall& c);
void global_avgpool_bwd_cuda(const OpCall& c);

}  // namespace tr
