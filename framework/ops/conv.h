#pragma once
// 3x3 convolution, stride 1, zero padding 1, no bias, NHWC, weights [K,3,3,C].
//   ConvFwd:       x[N,H,W,C], w[K,3,3,C] -> y[N,H,W,K]
//   ConvBwdData:   dy[N,H,W,K], w          -> dx[N,H,W,C]
//   ConvBwdFilter: x, dy                   -> dw[K,3,3,C]   (overwrites, no accumulation)
#include "framework/ops/op_registry.h"

namespace tr {

void conv_fwd_shapes(const ShapeCtx& c, Shape* out, int n_out);
void conv_bwd_data_shapes(const ShapeCtx& c, Shape* out, int n_out);
void conv_bwd_filter_shapes(const ShapeCtx& c, Shape* out, int n_out);
void conv_fwd_cpu(const OpCall& c);
void conv_fwd_cuda(const OpCall& c);
void conv_bwd_data_cpu(const OpCall& c);
void conv_bwd_data_cuda(const OpCall& c);
void conv_bwd_filter_cpu(const OpCall& c);
void conv_bwd_filter_cuda(const OpCall& c);

}  // namespace tr
