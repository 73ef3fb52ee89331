#pragma once
// LayerNorm over the last dimension C of x (rows = numel / C), as GPT-2 uses it:
//   LayerNormFwd: x T[.., C], gamma T[C], beta T[C] -> y T[.., C], stats f32[rows, 2]
//                 stats = (mean, rstd), rstd = 1 / sqrt(var + attrs.eps), var biased;
//                 y = (x - mean) * rstd * gamma + beta with the stats as stored (f32)
//   LayerNormBwd: dy T, x T, gamma T[C], stats f32[rows, 2] -> dx T, dgamma T[C], dbeta T[C]
//                 xhat = (x - mean) * rstd, g = dy * gamma,
//                 dx = rstd * (g - mean_C(g) - xhat * mean_C(g * xhat)),
//                 dgamma = sum_rows(dy * xhat), dbeta = sum_rows(dy) (written, not added to)
//   LayerNormBwdAdd: dy, x, gamma, stats, r T (x's shape) -> dx T, dgamma, dbeta: LayerNormBwd,
//                 then dx = dx + r as Add computes it (dx rounded to T first, the sum in f32
//                 rounded once): the gradient fan-in at a transformer block's input (the
//                 residual stream's gradient r joins the LayerNorm's), one node (Note [fusion],
//                 [ln_bwd_add]); the same bits as the two ops, on the CPU and on the GPU.
// The CPU sums in double; CUDA in f32, one warp per row for the row sums, and
// for dgamma and dbeta 128 row groups per channel whose sums are added in a
// fixed order, so the backward gives the same bits on every run (Note
// [deterministic kernels]).
// f32 statistics are f64 when T is f64.
#include "framework/ops/shape_ctx.h"

namespace tr {

void layernorm_fwd_shapes(const ShapeCtx& c, Shape* out, int n_out);
void layernorm_bwd_shapes(const ShapeCtx& c, Shape* out, int n_out);
void layernorm_fwd_cpu(const OpCall& c);
void layernorm_fwd_cuda(const OpCall& c);
void layernorm_bwd_cpu(const OpCall& c);
void layernorm_bwd_cuda(const OpCall& c);
void layernorm_bwd_add_shapes(const ShapeCtx& c, Shape* out, int n_out);
void layernorm_bwd_add_cpu(const OpCall& c);
void layernorm_bwd_add_cuda(const OpCall& c);

}  // namespace tr
