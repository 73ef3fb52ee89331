// What a COMPUTE node costs (node_cost.h; Note [step roofline] in step_roofline.h):
// its products from its operands' shapes, the element-wise rest from
// elementwise_flops.h's table, and the bytes of the operands it reads and writes.
#include <algorithm>
#include <string_view>

#include "framework/core/error.h"
#include "framework/ops/op_signature.h"
#include "harness/lib/bench/elementwise_flops.h"
#include "harness/lib/bench/node_cost.h"

namespace tr::bench {
namespace {

double elems(const Shape& s) { return double(s.numel()); }

// Matrix products and convolutions, 2 FLOPs (a multiply and an add) per
// multiply-accumulate: 2 x M x N x K. Shapes as op_kind.h gives them. No
// convolution here has groups (w is [K,R,R,C] with C the input's channels).
double product_flops(const OpOperands& o) {
  auto in = [&](std::string_view n) -> const Shape& { return o.in(n).shape; };
  auto out = [&](std::string_view n) -> const Shape& { return o.out(n).shape; };
  switch (o.kind()) {
    case OpKind::ConvFwd:  // y [N,Ho,Wo,K], each R x R x C multiply-adds: 2 N Ho Wo K R R C
      return 2.0 * elems(out("y")) * double(in("w").inner());
    case OpKind::ConvBwdData:  // the same products, dy [N,Ho,Wo,K] through w [K,R,R,C]
      return 2.0 * elems(in("dy")) * double(in("w").inner());
    case OpKind::ConvBwdFilter:  // dy [N,Ho,Wo,K] against x's R x R x C windows
      return 2.0 * elems(in("dy")) * double(out("dw").inner());
    case OpKind::FcFwd:  // x [rows,K] . w [M,K]^T: 2 rows K M
    case OpKind::FcGeluFwd:
    case OpKind::FcResidualFwd: return 2.0 * elems(in("x")) * double(in("w")[0]);
    case OpKind::FcBwdData:  // dy [rows,M] . w [M,K]
    case OpKind::FcBwdDataGelu: return 2.0 * elems(in("dy")) * double(in("w")[1]);
    case OpKind::FcBwdWeight:  // dy^T [M,rows] . x [rows,K]
      return 2.0 * elems(in("x")) * double(out("dw")[0]);
    case OpKind::ClassifierHead:
    case OpKind::BnReluClassifierHead:  // logits p [N,C] . w [M,C]^T, then dp = dlogits [N,M] . w
      return 2 * 2.0 * double(in("x")[0]) * elems(in("w"));
    default: return 0;
  }
}

// Causal self-attention over qkv [B,T,3C] in H heads of d = C / H: each
// product costs 2 d FLOPs per causal pair and head, 2 C over the heads. The
// forward does two (QK^T, PV), the backward five: it computes the scores
// again from lse, then dP = dY V^T, dV = P^T dY, dQ = dS K, dK = dS^T Q
// (attention.h). The masked half is not computed, so not counted.
double attention_flops(const OpOperands& o) {
  const OpKind k = o.kind();
  if (k != OpKind::AttentionFwd && k != OpKind::AttentionBwd) return 0;
  const Shape& qkv = o.in("qkv").shape;
  const double products = k == OpKind::AttentionFwd ? 2 : 5;
  return products * 2.0 * double(qkv[0]) * causal_pairs(qkv) * double(qkv[2] / 3);
}

// Inputs a node reads only for their shape (op_kind.h's "(shape only)").
bool shape_only(OpKind k, std::string_view name) {
  switch (k) {
    case OpKind::ConvBwdData:
    case OpKind::FcBwdData:
    case OpKind::MaxPoolArgmaxBwd:
    case OpKind::AvgPoolBwd:
    case OpKind::GlobalAvgPoolBwd: return name == "x";
    case OpKind::EmbeddingBwd: return name == "wte" || name == "wpe";
    default: return false;
  }
}

// The part of an input a node reads: the input preparation reads this
// variant's rows of buffers sized for the largest batch; the embedding
// gathers a token row per id (every row at most once) and the first T
// position rows.
double read_fraction(const OpOperands& o, std::string_view name, const Shape& s, const VariantDims& d) {
  const OpKind k = o.kind();
  const bool staging = (k == OpKind::InputPrep && (name == "images" || name == "labels_src")) ||
                       (k == OpKind::TokenPrep && name == "tokens");
  if (staging) return std::min(1.0, double(d.batch) / double(s[0]));
  if (k == OpKind::EmbeddingFwd && name == "wte") return std::min(1.0, elems(o.in("ids").shape) / double(s[0]));
  if (k == OpKind::EmbeddingFwd && name == "wpe") return std::min(1.0, double(o.in("ids").shape[1]) / double(s[0]));
  return 1;
}

double tensor_bytes(const TensorRef& t) { return elems(t.shape) * double(dtype_size(t.dtype)); }

double io_bytes(const OpOperands& o, const OpCall& c) {
  double bytes = 0;
  for (const OperandName& n : operand_names(o.kind(), Side::In)) {
    const TensorRef* x = operand_present(n, *c.attrs) ? &o.in(n.name) : nullptr;
    if (x == nullptr || shape_only(o.kind(), n.name)) continue;
    bytes += tensor_bytes(*x) * read_fraction(o, n.name, x->shape, *c.variant);
  }
  for (int i = 0; i < c.n_out; ++i) bytes += tensor_bytes(c.out[i]);
  return bytes;
}

}  // namespace

NodeCost compute_node_cost(OpKind k, const OpCall& call) {
  TR_CHECK(call.attrs != nullptr && call.variant != nullptr, op_name(k), ": a cost needs attributes and a variant");
  const OpOperands o(k, call);
  NodeCost c;
  c.flops.products = product_flops(o);
  c.flops.attention = attention_flops(o);
  c.flops.elementwise = elementwise_flops(o, *call.attrs);
  c.bytes = io_bytes(o, call);
  return c;
}

}  // namespace tr::bench
