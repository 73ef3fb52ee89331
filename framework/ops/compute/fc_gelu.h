#pragma once
// A linear layer and the GELU next to it, one op each way (Note [fusion],
// [fc_gelu] and [fc_gelu_bwd]): a transformer MLP's up projection and, in the
// backward, the down projection's data gradient. Rows as in fc.h (R rows of
// K features, M outputs; x[..,K] with fc_last_dim):
//   FcGeluFwd:     x[R,K], w[M,K] (, b[M])  -> pre[R,M] = scale * x w^T (+ b),
//                                              y[R,M]   = GELU(pre)
//   FcBwdDataGelu: dy[R,M'], w[M',M], pre[R,M] -> dx[R,M] = GELU'(pre) * (scale * dy w)
// pre is the GELU's input, kept for the backward (and the shape of dx).
//
// The CPU reference is the composition of the ops it replaces, each rounding
// where it stores (FcFwd then GeluFwd; FcBwdData then GeluBwd): fusion changes
// no bit there. The GPU runs one cuBLASLt GEMM with a GELU epilogue
// (GELU_AUX_BIAS, DGELU: the tanh form, fc.h's fp32 compute), which applies the
// GELU to the f32 accumulator before the one rounding to T: y and dx differ
// from the unfused GPU ops by about a rounding of T, and stay within the op
// table's GPU bounds of the CPU. Both fuse only with more than
// kSmallFcMaxOutputs outputs (cuBLAS, not the small-fc kernels) and a GELU
// over a multiple of 8 channels (the epilogue's aux matrix), in every
// precision: the op table runs them on the GPU in f32, f16 and bf16.
#include "framework/ops/shape_ctx.h"

namespace tr {

void fc_gelu_fwd_shapes(const ShapeCtx& c, Shape* out, int n_out);
void fc_bwd_data_gelu_shapes(const ShapeCtx& c, Shape* out, int n_out);
void fc_gelu_fwd_cpu(const OpCall& c);
void fc_gelu_fwd_cuda(const OpCall& c);
void fc_bwd_data_gelu_cpu(const OpCall& c);
void fc_bwd_data_gelu_cuda(const OpCall& c);

}  // namespace tr
