#pragma once
// BatchNorm (training statistics) fused with ReLU, split in phases so that the
// per-channel sums can be all-reduced between them (synchronised BN across ranks).
// count = variant.global_batch * H * W (the sums all-reduced over ranks), or
// batch * H * W with attrs.bn_rank_local (each rank's own statistics).
// f32 statistics; x, y, gamma, beta in T.
//   BnStats:         x[N,H,W,C]                          -> sums[2,C] = (sum x, sum x^2)
//   BnReluApply:     x, sums, gamma[C], beta[C]          -> y, batch[2,C] = (mean, biased var),
//                                                           affine[2,C] = (scale, shift)
//                    y = relu(scale * x + shift), scale = gamma * rsqrt(var + eps), shift = beta - mean * scale
//   BnReluBwdReduce: dy, affine, x, batch                -> dgamma[C], dbeta[C], dsums[2,C]
//                    g = dy * (scale * x + shift > 0); dsums = (sum g, sum g*xhat); dgamma = dsums[1], dbeta = dsums[0]
//   BnReluBwdReduce may take the ReLU's gradient in front (Note [the ReLU's
//   gradient in the reduce]): a, affine, x, batch, y[, b] -> dgamma, dbeta, dsums, g
//                    g = ReluBwd(a, y[, b]) = (a [+ b]) * (y > 0), rounded to T as
//                    ReluBwd stores it; then the reduce with dy = g
//   BnReluBwdApply:  dy, affine, x, batch, gamma, dsums  -> dx
//                    dx = gamma*rstd*(g - dsums[0]/count - xhat*dsums[1]/count)
//   BnReluApply may take a fifth input, residual (x's shape):
//                    y = relu(scale * x + shift + residual), the sum rounded once to T
//                    (the fusion of a BatchNorm and the residual Add + ReLU after it,
//                    Note [fusion] in framework/graph/fusion.h).
//   The backward recomputes the ReLU's input from the forward's own affine (the
//   same float it clamped, bn_pre_relu) instead of reading y: one activation
//   read fewer in each backward phase. y > 0 and the pre-activation > 0 agree
//   except where a positive pre-activation rounds to 0 in T.
//   BnReluInfer:     x, affine[2,C] = (scale, shift)     -> y = relu(scale*x + shift)
//   BnFold:          gamma f32[C], beta f32[C], running[2,C] = (mean, var) -> affine[2,C]
//                    scale = gamma*rsqrt(var+eps), shift = beta - mean*scale
// (relu=false in attrs drops the ReLU everywhere.)
//
// Note [the ReLU's gradient in the reduce]
// A residual block's output is relu(BN(x) + shortcut). Its gradient g is
// ReluBwd of the gradients that reach the output (two where the next block
// also takes it as its shortcut: Note [fusion]), and the block's last
// BatchNorm reduces g right after. Apart, ReluBwd writes g and the reduce
// reads it back; with the ReLU's gradient in front the reduce makes g from
// (a, y[, b]) as it walks the rows and stores it for g's other readers (the
// BatchNorm's apply, a projection's BatchNorm, the shortcut's gradient): one
// kernel and one pass over g fewer per block. g is ReluBwd's own value (the
// sum in f32, rounded once to T), and the reduce runs on it with the grid and
// order it has apart, so the bits are those of the two ops: on the CPU the
// node runs them apart, on the GPU the kernel is launched only where the
// ReLU's tensors allow the reduce's vector width (else the two kernels run).
#include "framework/ops/op_registry.h"

namespace tr {

void bn_stats_shapes(const ShapeCtx& c, Shape* out, int n_out);
void bn_relu_apply_shapes(const ShapeCtx& c, Shape* out, int n_out);
void bn_relu_bwd_reduce_shapes(const ShapeCtx& c, Shape* out, int n_out);
void bn_relu_bwd_apply_shapes(const ShapeCtx& c, Shape* out, int n_out);
void bn_relu_infer_shapes(const ShapeCtx& c, Shape* out, int n_out);
void bn_fold_shapes(const ShapeCtx& c, Shape* out, int n_out);
void bn_stats_cpu(const OpCall& c);
void bn_stats_cuda(const OpCall& c);
void bn_relu_apply_cpu(const OpCall& c);
void bn_relu_apply_cuda(const OpCall& c);
void bn_relu_bwd_reduce_cpu(const OpCall& c);
void bn_relu_bwd_reduce_cuda(const OpCall& c);
void bn_relu_bwd_apply_cpu(const OpCall& c);
void bn_relu_bwd_apply_cuda(const OpCall& c);
void bn_relu_infer_cpu(const OpCall& c);
void bn_relu_infer_cuda(const OpCall& c);
void bn_fold_cpu(const OpCall& c);
void bn_fold_cuda(const OpCall& c);

}  // namespace tr
