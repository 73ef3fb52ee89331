// CPU reference of the fused optimizers (see optimizers.h). Walks the segments
// of parallel f32 regions; padding between segments is never touched.
#include "framework/core/bf16.h"
#include "framework/core/half.h"
#include "framework/ops/kernels/range_util.h"
#include "framework/ops/range/optimizers.h"

namespace tr {
namespace {

// Checks shared by the three optimizers, on both backends (range_util.h);
// SgdNesterov and AdamW read 16-bit gradients too (half_grad).
void check_optimizer(const RangeCall& c, int n, const char* op, bool half_grad = false) {
  range::check_optimizer_operands(c, n, op, half_grad);
}

float* f32(const RangeOperand& o) { return static_cast<float*>(o.data); }

// The 16-bit compute copy (f16 or bf16) an optimizer refreshes from the new
// f32 weights; false when the model has none.
struct ComputeCopy {
  uint16_t* bits = nullptr;
  bool bf16 = false;
  explicit ComputeCopy(const RangeOperand* o)
      : bits(o ? static_cast<uint16_t*>(o->data) : nullptr), bf16(o && o->dtype == DType::BF16) {}
  explicit operator bool() const { return bits != nullptr; }
  void store(int64_t i, float x) const { bits[i] = bf16 ? float_to_bf16(x).bits : float_to_half(x).bits; }
};

}  // namespace

void sgd_nesterov_cpu(const RangeCall& c) {
  const range::OptimizerOperands o = range::optimizer_operands(c, 1, "SgdNesterov");
  check_optimizer(c, o.f32, "SgdNesterov", true);
  const TrainScalars& s = *c.env->scalars;
  if (s.found_inf) return;
  const RangeAttrs& a = *c.attrs;
  if (o.bn >= 0) {  // the BatchNorm statistics: running by t, then their EMA by ema_t
    float* run = f32(c.ops[o.bn]);
    const float* batch = f32(c.ops[o.bn + 1]);
    float* run_ema = a.ema ? f32(c.ops[o.bn + 2]) : nullptr;
    for (int64_t i = 0; i < c.ops[o.bn].elems; ++i) {
      run[i] = range::lerp_elem(run[i], batch[i], a.t);
      if (run_ema) run_ema[i] = range::lerp_elem(run_ema[i], run[i], a.ema_t);
    }
  }
  float* p = f32(c.ops[0]);
  const range::GradView g(c.ops[1]);
  float* v = f32(c.ops[2]);
  float* ema = o.ema >= 0 ? f32(c.ops[o.ema]) : nullptr;
  const ComputeCopy p16(o.compute >= 0 ? &c.ops[o.compute] : nullptr);
  const float inv = s.grad_unscale;  // AdvanceStep's 1/loss_scale (Note [the check's flag])
  for (int k = 0; k < c.ops[0].n_segs; ++k) {
    const Segment& seg = c.ops[0].segs[k];
    for (int64_t i = seg.offset; i < seg.offset + seg.elems; ++i) {
      const float gi = a.unscale ? range::rn_mul(g[i], inv) : g[i];
      range::sgd_nesterov_elem(p[i], gi, v[i], s.lr, a.momentum, a.weight_decay, seg.decay);
      if (ema) ema[i] = range::lerp_elem(ema[i], p[i], a.ema_t);
      if (p16) p16.store(i, p[i]);
    }
  }
}

void adamw_cpu(const RangeCall& c) {
  const range::OptimizerOperands o = range::optimizer_operands(c, 2, "AdamW");
  TR_CHECK(o.bn < 0, "AdamW: takes no BatchNorm statistics");
  check_optimizer(c, o.f32, "AdamW", true);
  const TrainScalars& s = *c.env->scalars;
  if (s.found_inf) return;
  const RangeAttrs& a = *c.attrs;
  const range::AdamCoef k = range::adam_coef(s.lr, a.weight_decay, a.beta1, a.beta2, a.adam_eps, s.step);
  float* p = f32(c.ops[0]);
  const range::GradView g(c.ops[1]);
  float* m = f32(c.ops[2]);
  float* v = f32(c.ops[3]);
  float* ema = o.ema >= 0 ? f32(c.ops[o.ema]) : nullptr;
  const ComputeCopy p16(o.compute >= 0 ? &c.ops[o.compute] : nullptr);
  const float inv = s.grad_unscale;                // AdvanceStep's 1/loss_scale
  const float clip = a.clip ? s.clip_scale : 1.f;  // GradNorm's (grad_norm.h)
  for (int j = 0; j < c.ops[0].n_segs; ++j) {
    const Segment& seg = c.ops[0].segs[j];
    for (int64_t i = seg.offset; i < seg.offset + seg.elems; ++i) {
      float gi = a.unscale ? range::rn_mul(g[i], inv) : g[i];
      if (a.clip) gi = range::rn_mul(gi, clip);
      range::adamw_elem(p[i], gi, m[i], v[i], k, seg.decay);
      if (ema) ema[i] = range::lerp_elem(ema[i], p[i], a.ema_t);
      if (p16) p16.store(i, p[i]);
    }
  }
}

void lars_cpu(const RangeCall& c) {
  check_optimizer(c, 3, "Lars");
  const TrainScalars& s = *c.env->scalars;
  if (s.found_inf) return;
  const RangeAttrs& a = *c.attrs;
  float* p = f32(c.ops[0]);
  const float* g = f32(c.ops[1]);
  float* v = f32(c.ops[2]);
  for (int k = 0; k < c.ops[0].n_segs; ++k) {
    const Segment& seg = c.ops[0].segs[k];
    const int64_t end = seg.offset + seg.elems;
    float trust = 1.f;
    if (seg.decay) {  // norms of this tensor, before its update; squares summed in double
      double sp = 0, sg = 0;
      for (int64_t i = seg.offset; i < end; ++i) {
        sp = range::rn_dadd(sp, range::rn_dmul(p[i], p[i]));
        sg = range::rn_dadd(sg, range::rn_dmul(g[i], g[i]));
      }
      trust = range::lars_trust(sp, sg, a.trust_coef, a.weight_decay);
    }
    for (int64_t i = seg.offset; i < end; ++i)
      range::lars_elem(p[i], g[i], v[i], s.lr, a.momentum, a.weight_decay, trust, seg.decay);
  }
}

}  // namespace tr
