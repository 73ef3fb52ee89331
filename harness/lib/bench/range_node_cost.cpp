// What a RANGE node costs (node_cost.h; Note [step roofline] in step_roofline.h):
// FLOPs per element of the regions it walks, and each operand's bytes, read
// once where the op reads it and written once where it writes it. Regions
// count with their alignment padding, which the kernels walk too.
#include "harness/lib/bench/node_cost.h"

namespace tr::bench {
namespace {

double elems(const ResolvedRange& r) { return double(r.elems); }

// How a RANGE op touches one of its operands.
struct Access {
  bool read = true, write = false;
  bool one_element = false;  // AdvanceStep's learning-rate table: it reads the step's entry
};

// The optimizer's own operands, before BatchNorm's three statistics
// (SgdNesterov with attrs.bn_stats: running, batch, EMA; optimizers.h).
// SgdNesterov's and AdamW's own operands, before BatchNorm's statistics
// (range::optimizer_operands: running and batch, and their EMA with attrs.ema).
int own_operands(RangeOp k, const RangeAttrs& a, int n) {
  return k == RangeOp::SgdNesterov && a.bn_stats ? n - (a.ema ? 3 : 2) : n;
}
// Where the 16-bit compute copy would be: after param, grad, the states and the EMA.
int compute_copy_index(RangeOp k, const RangeAttrs& a) { return (k == RangeOp::SgdNesterov ? 3 : 4) + (a.ema ? 1 : 0); }

// Operand i of n, as the ops' headers give them (region_ops.h, amp_ops.h,
// grad_norm.h, optimizers.h).
Access access(RangeOp k, const RangeAttrs& a, int i, int n) {
  switch (k) {
    case RangeOp::CopyIn:  // the host's side is the link's, not HBM's
    case RangeOp::Clear: return {false, true};
    case RangeOp::Cast: return {i == 0, i == 1};
    case RangeOp::UnscaleGrads: return {true, true};
    case RangeOp::GradNorm: return {true, i == n - 1};         // the gradients; the partials written, then summed
    case RangeOp::AdvanceStep: return {true, i == 1, i == 0};  // lr_table's entry, metrics dst += src
    case RangeOp::Lerp:
    case RangeOp::Accumulate: return {true, i == 0};  // dst, src
    case RangeOp::SgdNesterov:
    case RangeOp::AdamW:
    case RangeOp::Lars: {
      const int own = own_operands(k, a, n);
      if (i >= own) return {true, i != own + 1};                // running and EMA statistics moved, the batch's read
      if (i == compute_copy_index(k, a)) return {false, true};  // the f16 weights: written only
      return {true, i != 1};  // the gradient read; weights, momentum or m and v, EMA moved
    }
    default: return {true, false};  // CheckFinite reads; UpdateLossScale has no operands
  }
}

double sum_elems(std::span<const ResolvedRange> ops) {
  double s = 0;
  for (const ResolvedRange& r : ops) s += elems(r);
  return s;
}

// An optimizer's FLOPs per weight, from its formula (optimizers.h), a
// multiply-add 2:
//   SgdNesterov: g + wd p 2, v = mu v + g' 2, p -= lr (g' + mu v) 4: 8;
//   AdamW: p -= lr wd p 2, m 3, v 4, the two bias corrections 2, sqrt, + eps
//     and the division 3, p -= lr (...) 2: 16;
//   Lars: |p|^2 and |g|^2 4, g' = trust (g + wd p) 3, v = mu v + g' 2,
//     p -= lr v 2: 11;
// plus 1 for attrs.unscale, 1 for AdamW's attrs.clip, 3 for an EMA operand
// (ema += t (p - ema)), and per BatchNorm statistic one such move, two with the EMA.
double optimizer_flops(RangeOp k, const RangeAttrs& a, std::span<const ResolvedRange> ops) {
  const int own = own_operands(k, a, int(ops.size()));
  const bool ema = k != RangeOp::Lars && a.ema;
  double per = k == RangeOp::SgdNesterov ? 8 : k == RangeOp::AdamW ? 16 : 11;
  per += (a.unscale ? 1 : 0) + (k == RangeOp::AdamW && a.clip ? 1 : 0) + (ema ? 3 : 0);
  const double bn = own < int(ops.size()) ? (ema ? 6 : 3) * elems(ops[size_t(own)]) : 0;
  return per * elems(ops[0]) + bn;
}

// FLOPs per element of the other ops, from their formulas: a conversion is no
// arithmetic (its finite check, attrs.check_finite, one compare); the check,
// the unscale and an accumulation one; the norm's g^2 summed 2 (and the unscale
// 1); a lerp dst += t (src - dst) 3; AdvanceStep's scalars nothing, its metrics' add 1.
double range_flops(RangeOp k, const RangeAttrs& a, std::span<const ResolvedRange> ops) {
  switch (k) {
    case RangeOp::Cast: return a.check_finite ? elems(ops[0]) : 0;
    case RangeOp::CheckFinite:
    case RangeOp::UnscaleGrads: return sum_elems(ops);
    case RangeOp::GradNorm: return (a.unscale ? 3 : 2) * (sum_elems(ops) - elems(ops.back()));
    case RangeOp::AdvanceStep: return ops.size() > 1 ? elems(ops[1]) : 0;
    case RangeOp::Lerp: return 3 * elems(ops[0]);
    case RangeOp::Accumulate: return elems(ops[0]);
    case RangeOp::SgdNesterov:
    case RangeOp::AdamW:
    case RangeOp::Lars: return optimizer_flops(k, a, ops);
    default: return 0;  // CopyIn, Clear, UpdateLossScale
  }
}

}  // namespace

NodeCost range_node_cost(RangeOp k, const RangeAttrs& a, std::span<const ResolvedRange> ops) {
  NodeCost c;
  if (k == RangeOp::AllReduceSum) return c;
  c.flops.elementwise = range_flops(k, a, ops);
  const int n = int(ops.size());
  for (int i = 0; i < n; ++i) {
    const Access x = access(k, a, i, n);
    const double size = double(dtype_size(ops[size_t(i)].dtype));
    const double bytes = x.one_element ? size : elems(ops[size_t(i)]) * size;
    c.bytes += (x.read ? bytes : 0) + (x.write ? bytes : 0);
  }
  return c;
}

}  // namespace tr::bench
