#pragma once
// Softmax cross-entropy with label smoothing, mean over variant.global_batch.
//   in: logits[N,M], labels i32[N]
//   out: (with_grad) dlogits[N,M] = loss_scale * (softmax - target) / global_batch,
//        metrics f32[4] = (sum of per-sample loss, correct count, N, 0)  (overwritten)
//   target = (1-s)*onehot + s/M; loss_scale from env.scalars (read on the device).
#include "framework/ops/shape_ctx.h"

namespace tr {

void softmax_xent_shapes(const ShapeCtx& c, Shape* out, int n_out);
void softmax_xent_cpu(const OpCall& c);
void softmax_xent_cuda(const OpCall& c);

}  // namespace tr
