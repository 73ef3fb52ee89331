#pragma once
// Fully connected layer; x is [N, ...] flattened to [N,K] (flatten is a view).
//   FcFwd:       x[N,K..], w[M,K] (, b[M])  -> y[N,M] = scale * x w^T (+ b)
//   FcBwdData:   dy[N,M], w[M,K] (, x)      -> dx = scale * dy w: [N,K], or the shape of x when given
//                (x is read for its shape only: the image an fc flattened, e.g. [N,7,7,512])
//   FcBwdWeight: x, dy                      -> dw[M,K] = scale * dy^T x  (, db[M] = sum_n dy)
#include "framework/ops/shape_ctx.h"

namespace tr {

// Up to this many outputs the GPU runs FcFwd and FcBwdData on tr's own kernels
// (Note [small fc], fc_small_cuda.h), and a classifier head may fuse
// (classifier_head.h).
constexpr int64_t kSmallFcMaxOutputs = 32;

void fc_fwd_shapes(const ShapeCtx& c, Shape* out, int n_out);
void fc_bwd_data_shapes(const ShapeCtx& c, Shape* out, int n_out);
void fc_bwd_weight_shapes(const ShapeCtx& c, Shape* out, int n_out);
void fc_fwd_cpu(const OpCall& c);
void fc_fwd_cuda(const OpCall& c);
void fc_bwd_data_cpu(const OpCall& c);
void fc_bwd_data_cuda(const OpCall& c);
void fc_bwd_weight_cpu(const OpCall& c);
void fc_bwd_weight_cuda(const OpCall& c);

}  // namespace tr
