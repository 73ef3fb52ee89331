#pragma once
// A linear layer and the residual join after it, one op (Note [fusion],
// [fc_residual]): a transformer block's attention projection and MLP down
// projection, each added to the residual stream. Rows as in fc.h (R rows of K
// features, M outputs; x[..,K] with fc_last_dim):
//   FcResidualFwd: x[R,K], w[M,K], r[R,M] (, b[M]) -> y[R,M] = (scale * x w^T (+ b)) + r
// r is the residual stream (in y's shape); y is the next one. Its backward is
// the fc's and the Add's, unchanged: the gradient of y flows to r as it is, and
// into FcBwdData and FcBwdWeight as the fc's output gradient.
//
// The CPU reference is the composition of the ops it replaces, each rounding
// where it stores (FcFwd, then Add without ReLU): fusion changes no bit there.
// The GPU runs one cuBLASLt GEMM that adds r as its C matrix (beta = 1) and the
// bias in its epilogue, in f32, then rounds once to T: y differs from the
// unfused GPU ops by about a rounding of T (the fc's output is never rounded),
// within the op table's GPU bounds of the CPU. It fuses only with more than
// kSmallFcMaxOutputs outputs (cuBLAS, not the small-fc kernels), in every
// precision.
#include "framework/ops/shape_ctx.h"

namespace tr {

void fc_residual_fwd_shapes(const ShapeCtx& c, Shape* out, int n_out);
void fc_residual_fwd_cpu(const OpCall& c);
void fc_residual_fwd_cuda(const OpCall& c);

}  // namespace tr
