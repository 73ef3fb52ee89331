#pragma once
// Average pooling, k x k windows with a stride (no padding), and global.
// Geometry and visiting order: Note [pool window order] in pool_window.h.
//   AvgPoolFwd:       x[N,H,W,C] -> y[N,Ho,Wo,C], Ho = (H - k)/stride + 1 (floor),
//                     y = mean of the k*k window (attrs.kernel = k, attrs.stride),
//                     computed as (sum of the window, row-major) / (k*k).
//                     rule: k >= 1, stride >= 1, pad == 0, H, W >= k.
//   AvgPoolBwd:       dy[N,Ho,Wo,C], x (shape only) -> dx[N,H,W,C]:
//                     every input position gets dy/(k*k) from each window that holds it
//                     (rows/cols no window reaches get 0); computed as a gather:
//                     (sum of dy over those windows, oh then ow ascending) / (k*k)
//   GlobalAvgPoolFwd: x[N,H,W,C] -> y[N,C], the mean over H*W: (sum over p = h*W+w
//                     ascending) / (H*W)
//   GlobalAvgPoolBwd: dy[N,C], x (shape only) -> dx[N,H,W,C] = dy/(H*W)
// Sums run in f32 (f64 for F64) from 0 in the order above, then one IEEE
// division by the count, then one rounding to the storage type: two runs agree
// bit for bit and so do the CPU and CUDA implementations.
#include "framework/ops/shape_ctx.h"

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
