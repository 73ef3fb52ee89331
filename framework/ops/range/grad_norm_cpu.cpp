// GradNorm's CPU reference (see grad_norm.h).
#include <cmath>

#include "framework/ops/kernels/range_util.h"
#include "framework/ops/range/grad_norm.h"

namespace tr {

void check_grad_norm_operands(const RangeCall& c, const char* op) {
  range::check_n_ops(c, 2, op);
  TR_CHECK(c.attrs != nullptr && c.env->scalars != nullptr, op, ": no attributes or scalars");
  // Every gradient region f32, or every one f16 or bf16 of one dtype (Note [16-bit gradients in the optimizer]).
  for (int k = 0; k + 1 < c.n_ops; ++k) {
    const DType t = c.ops[k].dtype;
    TR_CHECK(t == DType::F32 || is_half(t), op, ": gradients must be f32, f16 or bf16, got ", dtype_name(t));
    TR_CHECK(t == c.ops[0].dtype, op, ": gradient regions of different dtypes (", dtype_name(c.ops[0].dtype), " and ",
             dtype_name(t), ")");
  }
  const RangeOperand& partials = c.ops[c.n_ops - 1];
  TR_CHECK(partials.dtype == DType::F64 && partials.elems >= kGradNormPartials, op,
           ": partials must be f64[>= ", kGradNormPartials, "], got ", dtype_name(partials.dtype), "[", partials.elems,
           "]");
}

void grad_norm_cpu(const RangeCall& c) {
  check_grad_norm_operands(c, "GradNorm");
  TrainScalars& s = *c.env->scalars;
  const bool unscale = c.attrs->unscale;
  // Before AdvanceStep (the check) the factor it will record; after it, the one it recorded.
  const float inv = c.attrs->check_finite ? range::unscale_factor(s.loss_scale) : s.grad_unscale;
  double sum = 0;
  for (int k = 0; k + 1 < c.n_ops; ++k) {
    const RangeOperand& g = c.ops[k];
    const range::GradView v(g);
    for (int j = 0; j < g.n_segs; ++j)
      for (int64_t i = g.segs[j].offset; i < g.segs[j].offset + g.segs[j].elems; ++i) {
        const double gi = unscale ? range::rn_mul(v[i], inv) : v[i];
        sum += gi * gi;
      }
  }
  if (c.attrs->check_finite && !std::isfinite(sum)) s.pending_inf = 1;
  s.grad_norm = float(std::sqrt(sum));
  s.clip_scale = range::clip_scale_of(s.grad_norm, c.attrs->max_norm);
}

}  // namespace tr
