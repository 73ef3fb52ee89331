#pragma once
// A classifier's head, forward and backward, in one op: the fusion of
// GlobalMaxPoolFwd, FcFwd (no bias), SoftmaxXent (with its gradient),
// FcBwdData and GlobalMaxPoolBwd (Note [fusion] in framework/graph/fusion.h).
// Each sample's pool, logits, loss gradient, feature gradient and routed
// gradient depend only on that sample, so the GPU does them in one kernel per
// sample instead of six dependent kernels; the logits and the feature
// gradient are never stored.
//   ClassifierHead: x T[N,H,W,C], w T[M,C], labels i32[N]
//                -> p T[N,C], dlogits T[N,M], metrics f32[4], dx T[N,H,W,C]
//   p = GlobalMaxPoolFwd(x); z = FcFwd(p, w) (attrs.scale); dlogits, metrics =
//   SoftmaxXent(z, labels) (attrs.label_smoothing); dp = FcBwdData(dlogits, w);
//   dx = GlobalMaxPoolBwd(dp, x, p). Each intermediate is rounded to T as the
//   op that produced it stores it, so the op gives the five ops' bits (on the
//   GPU with M <= kSmallFcMaxOutputs, where FcFwd and FcBwdData run tr's own
//   kernels: Note [small fc]). FcBwdWeight stays apart (it reads p and dlogits).
//   attrs: scale, label_smoothing; has_bias must be false and with_grad true.
// With the BatchNorm + ReLU in front (Note [the head's BatchNorm], fusion.h):
//   BnReluClassifierHead: x T[N,H,W,C], w, labels, sums f32[2,C], gamma T[C], beta T[C]
//                -> p, dlogits, metrics, dx, batch f32[2,C], affine f32[2,C]
//   y, batch, affine = BnReluApply(x, sums, gamma, beta) (attrs eps, relu,
//   bn_rank_local), then the head above on y; y is never stored: the pool and
//   the routing of its gradient recompute it, rounded to T as BnReluApply
//   stores it, so the op gives the six ops' bits. dx is the gradient of y.
#include "framework/ops/op_kind.h"
#include "framework/ops/shape_ctx.h"

namespace tr {

// The two kinds' operands by name (Note [operands by name], op_signature.h);
// the BatchNorm's are null for ClassifierHead. Built by head_operands, which
// checks the attributes both backends need (no bias, the loss's gradient).
struct HeadOperands {
  const TensorRef *x = nullptr, *w = nullptr, *labels = nullptr;
  const TensorRef *p = nullptr, *dlogits = nullptr, *metrics = nullptr, *dx = nullptr;
  const TensorRef *sums = nullptr, *gamma = nullptr, *beta = nullptr, *batch = nullptr, *affine = nullptr;
  bool with_bn() const { return sums != nullptr; }
};
HeadOperands head_operands(OpKind kind, const OpCall& c);

void classifier_head_shapes(const ShapeCtx& c, Shape* out, int n_out);
void bn_relu_classifier_head_shapes(const ShapeCtx& c, Shape* out, int n_out);
void classifier_head_cpu(const OpCall& c);
void classifier_head_cuda(const OpCall& c);
void bn_relu_classifier_head_cpu(const OpCall& c);
void bn_relu_classifier_head_cuda(const OpCall& c);

}  // namespace tr
