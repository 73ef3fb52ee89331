// CPU reference of the AMP / step bookkeeping RANGE ops (see amp_ops.h).
#include <cstring>

#include "framework/core/bf16.h"
#include "framework/core/half.h"
#include "framework/ops/kernels/range_util.h"
#include "framework/ops/range/amp_ops.h"

namespace tr {

void cast_cpu(const RangeCall& c) {
  range::check_n_ops(c, 2, "Cast");
  range::cast_checks_finite(c);  // a bad attribute is an error whatever the operand sizes
  const RangeOperand& src = c.ops[0];
  const RangeOperand& dst = c.ops[1];
  TR_CHECK(src.elems == dst.elems, "Cast: operand sizes differ (", src.elems, " vs ", dst.elems, ")");
  const int64_t n = src.elems;
  if (src.dtype == dst.dtype) {
    TR_CHECK(src.dtype == DType::F32 || is_half(src.dtype), "Cast: unsupported dtype");
    if (n > 0 && src.data != dst.data) std::memcpy(dst.data, src.data, size_t(n) * dtype_size(src.dtype));
  } else if (src.dtype == DType::F32 && dst.dtype == DType::F16) {
    const float* s = static_cast<const float*>(src.data);
    half_t* d = static_cast<half_t*>(dst.data);
    for (int64_t i = 0; i < n; ++i) d[i] = float_to_half(s[i]);
  } else if (src.dtype == DType::F32 && dst.dtype == DType::BF16) {
    const float* s = static_cast<const float*>(src.data);
    bf16_t* d = static_cast<bf16_t*>(dst.data);
    for (int64_t i = 0; i < n; ++i) d[i] = float_to_bf16(s[i]);
  } else if (is_half(src.dtype) && dst.dtype == DType::F32) {
    const bool bf = src.dtype == DType::BF16;
    const uint16_t* s = static_cast<const uint16_t*>(src.data);
    float* d = static_cast<float*>(dst.data);
    int32_t bad = 0;
    for (int64_t i = 0; i < n; ++i) {
      d[i] = bf ? bf16_to_float(bf16_t{s[i]}) : half_to_float(half_t{s[i]});
      bad |= !range::half_bits_finite(s[i], bf);
    }
    if (range::cast_checks_finite(c) && bad) c.env->scalars->pending_inf = 1;
  } else {
    TR_CHECK(false, "Cast: unsupported ", dtype_name(src.dtype), " -> ", dtype_name(dst.dtype));
  }
}

void check_finite_cpu(const RangeCall& c) {
  TR_CHECK(c.env != nullptr && c.env->scalars != nullptr, "CheckFinite: no scalars");
  int32_t bad = 0;
  for (int k = 0; k < c.n_ops && !bad; ++k) {
    const RangeOperand& o = c.ops[k];
    if (o.dtype == DType::F32) {
      const uint32_t* x = static_cast<const uint32_t*>(o.data);
      for (int64_t i = 0; i < o.elems; ++i) bad |= !range::f32_bits_finite(x[i]);
    } else if (is_half(o.dtype)) {
      const uint16_t* x = static_cast<const uint16_t*>(o.data);
      for (int64_t i = 0; i < o.elems; ++i) bad |= !range::half_bits_finite(x[i], o.dtype == DType::BF16);
    } else {
      TR_CHECK(false, "CheckFinite: operand ", k, " must be f32, f16 or bf16, got ", dtype_name(o.dtype));
    }
  }
  if (bad) c.env->scalars->pending_inf = 1;  // Note [the check's flag]
}

void unscale_grads_cpu(const RangeCall& c) {
  TR_CHECK(c.env != nullptr && c.env->scalars != nullptr, "UnscaleGrads: no scalars");
  for (int k = 0; k < c.n_ops; ++k) range::check_f32(c.ops[k], "UnscaleGrads");
  const TrainScalars& s = *c.env->scalars;
  if (s.found_inf) return;
  const float inv = range::unscale_factor(s.loss_scale);
  for (int k = 0; k < c.n_ops; ++k) {
    float* g = static_cast<float*>(c.ops[k].data);
    for (int64_t i = 0; i < c.ops[k].elems; ++i) g[i] = range::rn_mul(g[i], inv);
  }
}

void update_loss_scale_cpu(const RangeCall& c) {
  TR_CHECK(c.env != nullptr && c.env->scalars != nullptr && c.attrs != nullptr,
           "UpdateLossScale: no scalars or attributes");
  const RangeAttrs& a = *c.attrs;
  range::update_loss_scale(*c.env->scalars, a.growth_factor, a.backoff_factor, a.growth_interval, a.dynamic_scale);
}

void advance_step_cpu(const RangeCall& c) {
  const bool accumulate = range::advance_step_accumulates(c);  // checks the operands first
  range::advance_step(*c.env->scalars, static_cast<const float*>(c.ops[0].data), c.ops[0].elems);
  if (accumulate) {
    float* d = static_cast<float*>(c.ops[1].data);
    const float* s = static_cast<const float*>(c.ops[2].data);
    for (int64_t i = 0; i < c.ops[1].elems; ++i) d[i] = range::accumulate_elem(d[i], s[i]);
  }
  if (c.attrs != nullptr && c.attrs->update_scale) {
    const RangeAttrs& a = *c.attrs;
    range::update_loss_scale(*c.env->scalars, a.growth_factor, a.backoff_factor, a.growth_interval, a.dynamic_scale);
  }
}

}  // namespace tr
