#pragma once
// Fully connected layer over rows: x is [N, ...] flattened to [N,K] (flatten
// is a view), or with attrs.fc_last_dim x is [.., K] and every leading dim is
// a row dim (a transformer's tokens: [B,T,C] -> [B,T,M]). R = numel(x) / K rows:
//   FcFwd:       x[N,K..], w[M,K] (, b[M])  -> y[N,M] = scale * x w^T (+ b)   (y[..,M] with fc_last_dim)
//   FcBwdData:   dy[N,M], w[M,K], x         -> dx = scale * dy w, in the shape of x
//                (x is read for its shape only: the image an fc flattened, e.g. [N,7,7,512])
//   FcBwdWeight: x, dy                      -> dw[M,K] = scale * dy^T x  (, db[M] = sum over rows of dy)
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
