#pragma once
// Max pooling, k x k windows with a stride and padding (attrs.kernel, stride, pad;
// geometry and visiting order: Note [pool window order] in pool_window.h).
//   MaxPoolFwd:       x[N,H,W,C] -> y[N,Ho,Wo,C], Ho = (H + 2*pad - k)/stride + 1 (floor)
//                     rule: k >= 1, stride >= 1, 0 <= pad < k, Ho, Wo >= 1.
//                     Padding never wins; the first input position of the window
//                     (scan order) starts the max and only a strictly larger value
//                     replaces it.
//   MaxPoolBwd:       dy[N,Ho,Wo,C], x, y -> dx[N,H,W,C]: each output's gradient goes
//                     to the FIRST position of its window (row-major scan, padding
//                     skipped) whose value equals the output. With overlapping windows
//                     (k > stride) one input may win several outputs: their gradients
//                     are summed in f32 (f64 for F64), outputs in row-major order,
//                     rounded once. Positions that win nothing (ties after the first,
//                     rows no window reaches) get 0.
//   MaxPoolArgmaxFwd: x -> y, argmax: MaxPoolFwd that also records each output's winner:
//                     argmax u8[N,Ho,Wo,C] = kh * k + kw, its position in the window
//                     (from the window's corner, padding included; k <= 16). Then
//                     MaxPoolArgmaxBwd(dy, x, argmax) routes the gradients to the recorded
//                     winners in the same order and with the same sums (x gives
//                     the shape only). The same bits as the search from y, without
//                     rescanning every window. The max-pool layer records them
//                     for every window when it trains.
//   MaxPoolStatsFwd:  x -> y, argmax, sums (2x2 windows, stride 2, no padding): also
//                     the BatchNorm statistics of y, what BnStats(y)
//                     would: sums f32[2,C] = (sum y, sum y^2). The fusion of a
//                     max pool and the BatchNorm after it (Note [fusion]); on
//                     the GPU the same bits as BnStats, without reading y again.
//   PoolBnReluApply:  x, gamma, beta -> p, argmax, sums, y, batch, affine: MaxPoolStatsFwd
//                     of x into p, then BnReluApply of p (Note [one kernel per
//                     BatchNorm], bn_train_cuda.h)
//   GlobalMaxPoolFwd: x[N,H,W,C] -> y[N,C]
//   GlobalMaxPoolBwd: dy, x, y   -> dx[N,H,W,C]
#include "framework/ops/shape_ctx.h"

namespace tr {

void maxpool_fwd_shapes(const ShapeCtx& c, Shape* out, int n_out);
void maxpool_argmax_fwd_shapes(const ShapeCtx& c, Shape* out, int n_out);
void maxpool_stats_fwd_shapes(const ShapeCtx& c, Shape* out, int n_out);
void pool_bn_relu_apply_shapes(const ShapeCtx& c, Shape* out, int n_out);
void maxpool_bwd_shapes(const ShapeCtx& c, Shape* out, int n_out);
void maxpool_argmax_bwd_shapes(const ShapeCtx& c, Shape* out, int n_out);
void global_maxpool_fwd_shapes(const ShapeCtx& c, Shape* out, int n_out);
void global_maxpool_bwd_shapes(const ShapeCtx& c, Shape* out, int n_out);
void maxpool_fwd_cpu(const OpCall& c);
void maxpool_fwd_cuda(const OpCall& c);
void maxpool_argmax_fwd_cpu(const OpCall& c);
void maxpool_argmax_fwd_cuda(const OpCall& c);
void maxpool_stats_fwd_cpu(const OpCall& c);
void maxpool_stats_fwd_cuda(const OpCall& c);
void pool_bn_relu_apply_cpu(const OpCall& c);
void pool_bn_relu_apply_cuda(const OpCall& c);
void maxpool_argmax_bwd_cpu(const OpCall& c);
void maxpool_argmax_bwd_cuda(const OpCall& c);
void maxpool_bwd_cpu(const OpCall& c);
void maxpool_bwd_cuda(const OpCall& c);
void global_maxpool_fwd_cpu(const OpCall& c);
void global_maxpool_fwd_cuda(const OpCall& c);
void global_maxpool_bwd_cpu(const OpCall& c);
void global_maxpool_bwd_cuda(const OpCall& c);

}  // namespace tr
