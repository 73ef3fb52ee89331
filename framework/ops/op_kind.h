#pragma once
// Every COMPUTE op and RANGE op the compiled graph can hold.
// Adding an op: its own trio of files (op.h shape rule, op_cpu.cpp, op_cuda.cu)
// plus one line in op_registry.cpp, which names its operands (Note [operands
// by name], op_signature.h). One kind per form: a kind's operand list is fixed
// (an operand may depend on an attribute, as FcFwd's bias on has_bias), so no
// kernel learns its form from how many operands it got.
#include <cstdint>
#include <string_view>

namespace tr {

// COMPUTE ops act on tensor ids. Tensor conventions (T = compute dtype, f32, f16 or bf16):
// clang-format off
enum class OpKind : uint8_t {
  InputPrep,          // in: images u8[Bmax,H0,W0,C], labels_src i32[Bmax]   out: x T[N,h,w,C], labels i32[N]
                      //   (x T[2N,h,w,C] with attrs.tta_flip: the images, then their mirrors)
  ConvFwd,            // in: x T[N,H,W,C], w T[K,R,R,C]                       out: y T[N,Ho,Wo,K]
                      //   R = attrs.kernel; Ho = (H + 2*pad - R)/stride + 1 (attrs.stride, attrs.pad)
  ConvBwdData,        // in: dy T[N,Ho,Wo,K], w T[K,R,R,C], x T[N,H,W,C] (shape only)  out: dx T[N,H,W,C]
  ConvBwdFilter,      // in: x T[N,H,W,C], dy T[N,Ho,Wo,K]                     out: dw T[K,R,R,C]
  BnStats,            // in: x T[N,H,W,C]                                     out: sums f32[2,C] (sum x, sum x^2)
  BnReluApply,        // in: x T, sums f32[2,C], gamma T[C], beta T[C]
                      //   out: y T, batch f32[2,C] (mean, biased var), affine f32[2,C]
  BnStatsReluApply,   // in: x T, gamma T[C], beta T[C]                      out: y T, batch, affine, sums f32[2,C]
                      //   BnStats then BnReluApply in one (Note [one kernel per BatchNorm])
  BnAddReluApply,     // in: x T, sums, gamma, beta, residual T (x's shape)   out: y T, batch, affine
                      //   y = relu(BN(x) + residual), the sum rounded once (Note [fusion])
  BnReluBwdReduce,    // in: dy T, affine f32[2,C], x T, batch f32[2,C]
                      //   out: dgamma T[C], dbeta T[C], dsums f32[2,C]
  ReluBwdBnReduce,    // in: a T, affine, x T, batch, y T                     out: dgamma, dbeta, dsums, g T
                      //   g = ReluBwd(a, y), then BnReluBwdReduce of g (Note [the ReLU's gradient in the reduce])
  ReluBwdAddBnReduce, // in: a T, affine, x T, batch, y T, b T               out: dgamma, dbeta, dsums, g T
                      //   g = ReluBwdAdd(a, y, b), then BnReluBwdReduce of g
  BnReluBwdApply,     // in: dy T, affine f32[2,C], x T, batch f32[2,C], gamma T[C], dsums f32[2,C]   out: dx T
  BnReluBwdReduceApply,  // in: dy T, affine, x T, batch, gamma T[C]
                         //   out: dx T, dgamma T[C], dbeta T[C], dsums f32[2,C]
                      //   BnReluBwdReduce then BnReluBwdApply in one
  BnReluInfer,        // in: x T, affine f32[2,C] (scale, shift)              out: y T
  BnFold,             // in: gamma f32[C], beta f32[C], running f32[2,C]      out: affine f32[2,C]
  MaxPoolFwd,         // in: x T[N,H,W,C]                                     out: y T[N,Ho,Wo,C] (kernel, stride, pad)
  MaxPoolArgmaxFwd,   // in: x T[N,H,W,C]
                      //   out: y T, argmax u8[N,Ho,Wo,C] (each window's winner)
  MaxPoolStatsFwd,    // in: x T[N,H,W,C]
                      //   out: y T, argmax u8, sums f32[2,C] (BnStats of y; 2x2/s2)
  PoolBnReluApply,    // in: x T, gamma T[C], beta T[C]
                      //   out: p T, argmax u8, sums f32[2,C], y T, batch, affine
                      //   MaxPoolStatsFwd, then BnReluApply of its p (2x2/s2; Note [one kernel per BatchNorm])
  MaxPoolBwd,         // in: dy T[N,Ho,Wo,C], x T, y T
                      //   out: dx T[N,H,W,C] (searches each window again)
  MaxPoolArgmaxBwd,   // in: dy T[N,Ho,Wo,C], x T (shape only), argmax u8
                      //   out: dx T[N,H,W,C] (routes to the recorded winners)
  AvgPoolFwd,         // in: x T[N,H,W,C]
                      //   out: y T[N,Ho,Wo,C] (kernel, stride; pad 0)
  AvgPoolBwd,         // in: dy T[N,Ho,Wo,C], x T (shape only)                out: dx T[N,H,W,C]
  GlobalMaxPoolFwd,   // in: x T[N,H,W,C]                                     out: y T[N,C]
  GlobalMaxPoolBwd,   // in: dy T[N,C], x T, y T                              out: dx T[N,H,W,C]
  GlobalAvgPoolFwd,   // in: x T[N,H,W,C]                                     out: y T[N,C]
  GlobalAvgPoolBwd,   // in: dy T[N,C], x T (shape only)                      out: dx T[N,H,W,C]
  Add,                // in: a T, b T (same shape)                            out: y T = a + b (then ReLU if attrs.relu)
  FcFwd,              // in: x T[N,K..], w T[M,K] (, b T[M])                  out: y T[N,M]
  FcBwdData,          // in: dy T[N,M], w T[M,K], x T[N,K..] (shape only)     out: dx T[N,K..] (x's shape)
  FcBwdWeight,        // in: x T[N,K..], dy T[N,M]                            out: dw T[M,K] (, db T[M])
  ReluFwd,            // in: x T                                              out: y T
  ReluBwd,            // in: dy T, y T                                        out: dx T = dy * (y > 0)
  ReluBwdAdd,         // in: dy T, y T, dy2 T
                      //   out: dx T = (dy + dy2) * (y > 0), the sum rounded as Add rounds it
  SoftmaxXent,        // in: logits T[N,M], labels i32[N]
                      //   out: (dlogits T[N,M] if with_grad,) metrics f32[4]
  TtaMean,            // in: x T[2N,M]                                        out: y T[N,M] = (x[n] + x[N+n]) / 2
  BnReluPool,         // in: x T, sums f32[2,C], gamma T[C], beta T[C]
                      //   out: p T[N,H/2,W/2,C], argmax u8, batch f32[2,C], affine f32[2,C]
                      //   MaxPoolFwd 2x2/s2 of BnReluApply's y, y never stored (bn_relu_pool.h)
  ClassifierHead,     // in: x T[N,H,W,C], w T[M,C], labels i32[N]
                      //   out: p T[N,C], dlogits T[N,M], metrics f32[4], dx T[N,H,W,C]
                      //   GlobalMaxPoolFwd, FcFwd, SoftmaxXent, FcBwdData, GlobalMaxPoolBwd in one (classifier_head.h)
  BnReluClassifierHead,  // in: x T, w, labels, sums f32[2,C], gamma T[C], beta T[C]
                         //   out: p, dlogits, metrics, dx, batch, affine
                      //   BnReluApply of x in front of the head, its y never stored (Note [the head's BatchNorm])
  GeluFwd,            // in: x T                                              out: y T = GELU(x), tanh form (gelu.h)
  GeluBwd,            // in: dy T, x T                                        out: dx T = dy * GELU'(x)
  LayerNormFwd,       // in: x T[..,C], gamma T[C], beta T[C]                 out: y T, stats f32[rows,2] (layernorm.h)
  LayerNormBwd,       // in: dy T, x T, gamma T[C], stats f32[rows,2]         out: dx T, dgamma T[C], dbeta T[C]
  EmbeddingFwd,       // in: ids i32[B,T], wte T[V,C], wpe T[P,C]             out: y T[B,T,C] (embedding.h)
  EmbeddingBwd,       // in: dy T[B,T,C], ids i32[B,T], order i32[B*T], wte, wpe (shapes only)
                      //   out: dwte T[V,C], dwpe T[P,C] (deterministic scatter-add)
  AttentionFwd,       // in: qkv T[B,T,3C]                                    out: y T[B,T,C], lse f32[B,H,T]
                      //   causal multi-head self-attention, H = attrs.heads (attention.h)
  AttentionBwd,       // in: dy T[B,T,C], qkv T, y T, lse f32[B,H,T]          out: dqkv T[B,T,3C], delta f32[B,H,T]
  TokenPrep,          // in: tokens i32[Bmax,T0+1]                            out: ids i32[N,T], labels i32[N,T],
                      //   order i32[N*T] (N = variant.batch, T = variant.height; token_prep.h)
  FcGeluFwd,          // in: x T[..,K], w T[M,K], b T[M] (has_bias)            out: pre T[..,M], y T = GELU(pre)
                      //   FcFwd then GeluFwd in one (fc_gelu.h, Note [fusion])
  FcBwdDataGelu,      // in: dy T[..,M'], w T[M',M], pre T[..,M]               out: dx T = GELU'(pre) * (dy w)
                      //   FcBwdData then GeluBwd in one (fc_gelu.h)
  FcResidualFwd,      // in: x T[..,K], w T[M,K], r T[..,M], b T[M] (has_bias) out: y T = (x w^T (+ b)) + r
                      //   FcFwd then Add in one (fc_residual.h, Note [fusion])
  LayerNormBwdAdd,    // in: dy T, x T[.., C], gamma T[C], stats f32[rows,2], r T   out: dx T (+ r), dgamma, dbeta
                      //   LayerNormBwd then the gradient fan-in Add in one (layernorm.h)
  Count
};
// clang-format on

// RANGE ops act on whole regions of the arena (see memory_plan.h Regions).
// clang-format off
enum class RangeOp : uint8_t {
  CopyIn,             // ops: dst (host staging slot -> arena); attrs.slot selects staging A/B
  Clear,              // ops: dst                                   dst = 0
  Cast,               // ops: src, dst (f16<->f32, same layout)     dst = src (check_finite: as CheckFinite too)
  CheckFinite,        // ops: grads...                              scalars.pending_inf |= any non-finite
  UnscaleGrads,       // ops: grads...                              g *= 1/loss_scale (when finite)
  GradNorm,           // ops: grads..., partials f64                scalars.grad_norm = |g|, clip_scale (grad_norm.h)
  UpdateLossScale,    // ops: none                                  dynamic loss scale, growth/backoff
  AdvanceStep,        // ops: lr_table[, dst, src]                  found_inf = pending_inf; batches++; if finite:
                      //   step++, lr = table[step-1]; dst += src; update_scale: the loss scale too
  Lerp,               // ops: dst, src                              dst += t*(src-dst) (skipped on inf if skip_on_inf)
  Accumulate,         // ops: dst, src                              dst += src
  AllReduceSum,       // ops: buf                                   sum over ranks (then *1/ranks if attrs.average)
  SgdNesterov,        // ops: param, grad, momentum[, ema[, param f16]]  (skipped on inf; optimizers.h)
  AdamW,              // ops: param, grad, m, v                     (skipped on inf; attrs.clip: g *= clip_scale)
  Lars,               // ops: param, grad, momentum; segment subset (skipped on inf)
  Count
};
// clang-format on

std::string_view op_name(OpKind k);
std::string_view range_op_name(RangeOp k);

}  // namespace tr
