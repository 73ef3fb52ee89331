// The element-wise FLOPs of every op kind (elementwise_flops.h; Note [step
// roofline] in step_roofline.h).
#include "harness/lib/bench/elementwise_flops.h"

#include <iterator>
#include <string_view>

namespace tr::bench {
namespace {

double elems(const Shape& s) { return double(s.numel()); }

// Element-wise work: FLOPs per element of one operand, counted from the op's
// formula as its CPU reference computes it, an add, a multiply, a comparison
// (a max, the ReLU's test), an exp, a tanh or a square root one FLOP each, a
// multiply-add two. They are estimates, good to a factor of about two; the
// step's count rests on the products, which no entry here touches.
enum class Extra : uint8_t {
  None,
  Relu,    // plus 1 where attrs.relu: the ReLU's max
  Window,  // plus kernel x kernel: a pool's compares or adds per output
  Bias,    // the term counts only where attrs.has_bias
};
struct Term {
  double flops = 0;
  Side side = Side::In;
  std::string_view operand;  // "": no term
  Extra extra = Extra::None;
};
struct Rate {
  OpKind kind;
  Term a = {}, b = {};
};
constexpr Side kIn = Side::In, kOut = Side::Out;
// BatchNorm's pieces, per element: the sums (x, and x^2 as a multiply-add) 3;
// the apply (one multiply-add with the per-channel scale and shift) 2; the
// backward's reduce (y again 2, its ReLU mask 1, sum g 1, sum g x as a
// multiply-add 2) 6; the backward's apply (the mask 3, dx as two multiply-adds
// with per-channel factors 4) 7. Softmax with cross-entropy per logit: the max,
// x - max, exp, the sum, the normalisation, minus the smoothed target: 6.
constexpr double kBnSums = 3, kBnApply = 2, kBnReduce = 6, kBnBwdApply = 7, kSoftmax = 6;

// Indexed by OpKind, in enum order (checked below, as op_registry.cpp checks its table).
constexpr Rate kRates[] = {
    {OpKind::InputPrep, {2, kOut, "x"}},  // (u8 / 255 - mean) / std, one multiply-add
    {OpKind::ConvFwd},
    {OpKind::ConvBwdData},
    {OpKind::ConvBwdFilter},
    {OpKind::BnStats, {kBnSums, kIn, "x"}},
    {OpKind::BnReluApply, {kBnApply, kIn, "x", Extra::Relu}},
    {OpKind::BnStatsReluApply, {kBnSums + kBnApply, kIn, "x", Extra::Relu}},
    {OpKind::BnAddReluApply, {kBnApply + 1, kIn, "x", Extra::Relu}},  // and the residual's add
    {OpKind::BnReluBwdReduce, {kBnReduce, kIn, "x"}},
    {OpKind::ReluBwdBnReduce, {1 + kBnReduce, kIn, "x"}},     // the ReLU's gradient first
    {OpKind::ReluBwdAddBnReduce, {2 + kBnReduce, kIn, "x"}},  // the add and the ReLU's gradient first
    {OpKind::BnReluBwdApply, {kBnBwdApply, kIn, "x"}},
    {OpKind::BnReluBwdReduceApply, {kBnReduce + kBnBwdApply, kIn, "x"}},
    {OpKind::BnReluInfer, {kBnApply, kIn, "x", Extra::Relu}},
    {OpKind::BnFold, {5, kIn, "gamma"}},  // scale = gamma / sqrt(var + eps) 3, shift = beta - mean scale 2
    {OpKind::MaxPoolFwd, {0, kOut, "y", Extra::Window}},
    {OpKind::MaxPoolArgmaxFwd, {0, kOut, "y", Extra::Window}},
    {OpKind::MaxPoolStatsFwd, {kBnSums, kOut, "y", Extra::Window}},
    {OpKind::PoolBnReluApply, {4 + kBnSums + kBnApply, kOut, "p", Extra::Relu}},  // the 2x2 window, then BN of p
    {OpKind::MaxPoolBwd, {1, kIn, "dy", Extra::Window}},                          // the search again, the add
    {OpKind::MaxPoolArgmaxBwd, {1, kIn, "dy"}},
    {OpKind::AvgPoolFwd, {0, kOut, "y", Extra::Window}},  // the window's adds and one multiply
    {OpKind::AvgPoolBwd, {1, kOut, "dx"}},
    {OpKind::GlobalMaxPoolFwd, {1, kIn, "x"}},
    {OpKind::GlobalMaxPoolBwd, {1, kOut, "dx"}},  // x against the max
    {OpKind::GlobalAvgPoolFwd, {1, kIn, "x"}},
    {OpKind::GlobalAvgPoolBwd, {1, kOut, "dx"}},
    {OpKind::Add, {1, kOut, "y", Extra::Relu}},
    {OpKind::FcFwd, {1, kOut, "y", Extra::Bias}},  // the bias; attrs.scale rides on the product's alpha
    {OpKind::FcBwdData},
    {OpKind::FcBwdWeight, {1, kIn, "dy", Extra::Bias}},  // db, dy summed over the rows
    {OpKind::ReluFwd, {1, kOut, "y"}},
    {OpKind::ReluBwd, {1, kOut, "dx"}},
    {OpKind::ReluBwdAdd, {2, kOut, "dx"}},
    {OpKind::SoftmaxXent, {kSoftmax, kIn, "logits"}},
    {OpKind::TtaMean, {2, kOut, "y"}},
    {OpKind::BnReluPool, {kBnApply + 1, kIn, "x", Extra::Relu}},           // the apply, then 3 compares per 4 inputs
    {OpKind::ClassifierHead, {2, kIn, "x"}, {kSoftmax, kOut, "dlogits"}},  // the max and its backward's compare
    {OpKind::BnReluClassifierHead, {kBnApply + 2, kIn, "x", Extra::Relu}, {kSoftmax, kOut, "dlogits"}},
    // tanh form: x^2, x^3, x + 0.044715 x^3, times sqrt(2/pi), tanh, 1 + t, times 0.5 x.
    {OpKind::GeluFwd, {9, kOut, "y"}},
    // The forward's tanh again 6, 1 - t^2 2, (1 + 3 a x^2) sqrt(2/pi) 3, 0.5 (1 + t) + 0.5 x (1 - t^2) (..) 4, dy 1.
    {OpKind::GeluBwd, {16, kOut, "dx"}},
    // The mean 1, the variance 3, (x - mean) rstd gamma + beta 4.
    {OpKind::LayerNormFwd, {8, kOut, "y"}},
    // x^ again 2, dgamma 2, dbeta 1, g = dy gamma 1, sum g and sum g x^ 3, rstd (g - mean g - x^ mean g x^) 4.
    {OpKind::LayerNormBwd, {13, kOut, "dx"}},
    {OpKind::EmbeddingFwd, {1, kOut, "y"}},  // the token's row plus the position's
    {OpKind::EmbeddingBwd, {2, kIn, "dy"}},  // added into dwte and dwpe
    {OpKind::AttentionFwd, {1, kOut, "y"}},  // y divided by the row's sum; the scores below
    {OpKind::AttentionBwd, {2, kIn, "y"}},   // delta = dy . y, a multiply-add per y element; the scores below
    {OpKind::TokenPrep},
    {OpKind::FcGeluFwd, {1, kOut, "pre", Extra::Bias}, {9, kOut, "y"}},    // FcFwd's bias, then GeluFwd's
    {OpKind::FcBwdDataGelu, {16, kOut, "dx"}},                             // GeluBwd's, after the product
    {OpKind::FcResidualFwd, {1, kOut, "y", Extra::Bias}, {1, kOut, "y"}},  // FcFwd's bias, then Add's
    {OpKind::LayerNormBwdAdd, {14, kOut, "dx"}},                           // LayerNormBwd's 13, then Add's
};
static_assert(std::size(kRates) == static_cast<size_t>(OpKind::Count), "kRates: one entry per OpKind");
constexpr bool rates_in_order() {
  for (size_t i = 0; i < std::size(kRates); ++i)
    if (static_cast<size_t>(kRates[i].kind) != i) return false;
  return true;
}
static_assert(rates_in_order(), "kRates: in OpKind order");

double term_flops(const Term& t, const OpAttrs& a, const OpOperands& o) {
  if (t.operand.empty() || (t.extra == Extra::Bias && !a.has_bias)) return 0;
  double per = t.flops;
  if (t.extra == Extra::Relu && a.relu) per += 1;
  if (t.extra == Extra::Window) per += double(a.kernel) * double(a.kernel);
  return per * elems((t.side == Side::In ? o.in(t.operand) : o.out(t.operand)).shape);
}

// Per score of causal attention (B H T(T+1)/2 of them): forward, the scale, the
// running max, exp and the sum, 4; backward, p = exp(s - lse) with the scale 3
// and ds = p (dp - delta) 2, 5.
double score_flops(OpKind k, const OpAttrs& a, const OpOperands& o) {
  if (k != OpKind::AttentionFwd && k != OpKind::AttentionBwd) return 0;
  const Shape& qkv = o.in("qkv").shape;
  const double scores = double(qkv[0]) * double(a.heads) * causal_pairs(qkv);
  return (k == OpKind::AttentionFwd ? 4 : 5) * scores;
}

}  // namespace

double causal_pairs(const Shape& qkv) { return double(qkv[1]) * double(qkv[1] + 1) / 2; }

double elementwise_flops(const OpOperands& o, const OpAttrs& a) {
  const OpKind k = o.kind();
  const Rate& r = kRates[static_cast<size_t>(k)];
  return term_flops(r.a, a, o) + term_flops(r.b, a, o) + score_flops(k, a, o);
}

}  // namespace tr::bench
