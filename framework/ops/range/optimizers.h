#pragma once
// Fused multi-tensor optimizers over parallel regions (same segments), f32.
// All read lr (and step) from env.scalars and do nothing when scalars.found_inf.
// Weight decay applies to segments with decay=true.
//   SgdNesterov: ops = param, grad, momentum[, ema][, param_compute f16|bf16]
//       (ema with attrs.ema; range::optimizer_operands reads the list).
//       g' = g + wd*p;  v = mu*v + g';  p -= lr * (g' + mu*v)
//       With attrs.unscale, g is first multiplied by scalars.grad_unscale (the
//       1/loss_scale that AdvanceStep recorded), as UnscaleGrads does; with an
//       ema operand, ema += attrs.ema_t * (p - ema) on the updated p,
//       as Lerp does; with param_compute, it becomes p rounded to f16, as Cast
//       does. With attrs.bn_stats, more operands (BatchNorm's running and batch
//       statistics, and with attrs.ema their EMA) move as Lerps would move them
//       (running by attrs.t, then the EMA by attrs.ema_t), in the same kernel. The
//       same bits as those ops run one after another (Note [optimizer tail]
//       in framework/graph/recipe_graphs.h).
//   AdamW:       ops = param, grad, m, v[, ema][, param_compute].   t = scalars.step (already
//       advanced, >= 1). With attrs.unscale, g is first multiplied by scalars.grad_unscale, as
//       UnscaleGrads does; then, with attrs.clip, by scalars.clip_scale (GradNorm's, grad_norm.h).
//       p -= lr*wd*p (decay segs); m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
//       p -= lr * (m/(1-b1^t)) / (sqrt(v/(1-b2^t)) + eps)
//       The ema and compute-copy operands move as SgdNesterov's do (the same bits as Lerp and
//       Cast after it: Note [optimizer tail]).
//   Lars:        ops = param, grad, momentum; operands already restricted to the group's
//       segments. For decay segments: trust = trust_coef*|p|/(|g| + wd*|p|) (1 when a
//       norm is 0), g' = trust*(g + wd*p); others g' = g. v = mu*v + g'; p -= lr*v.
#include "framework/ops/op_call.h"

namespace tr {

void sgd_nesterov_cpu(const RangeCall& c);
void sgd_nesterov_cuda(const RangeCall& c);
void adamw_cpu(const RangeCall& c);
void adamw_cuda(const RangeCall& c);
void lars_cpu(const RangeCall& c);
void lars_cuda(const RangeCall& c);

}  // namespace tr
