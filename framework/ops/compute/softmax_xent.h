#pragma once
// Softmax cross-entropy with label smoothing over rows of M logits, the mean
// over every row of the global batch.
//   in: logits[N,M], labels i32[N]; or a sequence model's logits[N,T,M], labels i32[N,T]
//       (labels: the logits' shape without M; R = numel / M rows, R / N per sample)
//   out: (with_grad) dlogits = loss_scale * (softmax - target) / (global_batch * R / N),
//        metrics f32[4] = (sum of the rows' losses, correct count, R, 0)  (overwritten)
//   target = (1-s)*onehot + s/M; loss_scale from env.scalars (read on the device).
#include "framework/ops/shape_ctx.h"

namespace tr {

void softmax_xent_shapes(const ShapeCtx& c, Shape* out, int n_out);
void softmax_xent_cpu(const OpCall& c);
void softmax_xent_cuda(const OpCall& c);

}  // namespace tr
