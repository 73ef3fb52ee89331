#pragma once
// Convolution: square R x R window, stride, zero padding; no bias, dilation or
// groups; cross-correlation; NHWC activations, KRSC weights. Attributes:
// attrs.kernel = R (must equal w's dims 1 and 2), attrs.stride >= 1,
// 0 <= attrs.pad < R. Ho = (H + 2*pad - R) / stride + 1, likewise Wo.
//   ConvFwd:       x[N,H,W,C], w[K,R,R,C]                 -> y[N,Ho,Wo,K]
//   ConvBwdData:   dy[N,Ho,Wo,K], w, x[N,H,W,C] (shape)   -> dx[N,H,W,C]
//                  (x only says H and W: several H give the same Ho when stride > 1)
//   ConvBwdFilter: x, dy                                  -> dw[K,R,R,C]   (overwrites, no accumulation)
#include <cstdint>

#include "framework/ops/shape_ctx.h"

namespace tr {

// Output side of a window sweep over `in` (floor division); callers check
// in + 2*pad >= kernel first, so the window fits at least once.
constexpr int64_t conv_out_size(int64_t in, int64_t kernel, int64_t stride, int64_t pad) {
  return (in + 2 * pad - kernel) / stride + 1;
}

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
