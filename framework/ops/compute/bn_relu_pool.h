#pragma once
// BatchNorm (training statistics) + ReLU + 2x2 max pool in one pass: the fusion
// of BnReluApply and the MaxPoolFwd that reads its output (where a VGG block
// ends; Note [fusion] in framework/graph/fusion.h). The BatchNorm's output is
// never stored: its backward reads x (BnReluBwdReduce / BnReluBwdApply) and
// the pool's backward reads the winners (MaxPoolBwd from argmax).
//   BnReluPool: x T[N,H,W,C], sums f32[2,C], gamma T[C], beta T[C]
//            -> p T[N,H/2,W/2,C], argmax u8[N,H/2,W/2,C], batch f32[2,C], affine f32[2,C]
//   y = BnReluApply(x, sums, gamma, beta) as it would be stored in T;
//   p, argmax = MaxPoolFwd(y) with 2x2 windows of stride 2 (floor: an odd last
//   row or column is in no window); batch and affine as BnReluApply writes
//   them. So the op gives the pair's bits.
//   attrs: BnReluApply's (eps, relu, bn_rank_local) and the window (kernel 2,
//   stride 2, pad 0; anything else is refused).
#include "framework/ops/shape_ctx.h"

namespace tr {

void bn_relu_pool_shapes(const ShapeCtx& c, Shape* out, int n_out);
void bn_relu_pool_cpu(const OpCall& c);
void bn_relu_pool_cuda(const OpCall& c);

}  // namespace tr
