#pragma once
// Per-element math of the RANGE ops, compiled into both the CPU loops
// (*_cpu.cpp) and the CUDA kernels (*_cuda.cu), so both backends run the same
// operations in the same order.
//
// Note [range op rounding]
// Every float operation below goes through an rn_* helper: on the device these
// are the __f*_rn intrinsics, which nvcc never contracts into FMAs; on the host
// they are plain IEEE operations (the x86-64 baseline has no FMA, so GCC cannot
// contract them either; a build with -march=native/-mfma must add
// -ffp-contract=off to keep this). Division and sqrt are correctly rounded on
// both sides. Hence every elementwise RANGE op (Cast, Lerp, Accumulate,
// UnscaleGrads, SgdNesterov, AdamW, the LARS update for a given trust ratio),
// UpdateLossScale and AdvanceStep give bit-identical results on CPU and GPU.
// Only the LARS norms differ in summation order (both sum squares in double;
// see lars_trust), which leaves them within a rounding of the float norm.
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "framework/core/bf16.h"
#include "framework/core/error.h"
#include "framework/core/half.h"
#include "framework/ops/op_call.h"
#include "framework/ops/train_scalars.h"

#if defined(__CUDACC__)
#define TR_RANGE_HD __host__ __device__ __forceinline__
#else
#define TR_RANGE_HD inline
#endif

namespace tr::range {

TR_RANGE_HD float rn_add(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
TR_RANGE_HD float rn_sub(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}
TR_RANGE_HD float rn_mul(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
TR_RANGE_HD float rn_div(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}
TR_RANGE_HD float rn_sqrt(float a) {
#ifdef __CUDA_ARCH__
  return __fsqrt_rn(a);
#else
  return std::sqrt(a);
#endif
}
TR_RANGE_HD double rn_dadd(double a, double b) {
#ifdef __CUDA_ARCH__
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}
TR_RANGE_HD double rn_dmul(double a, double b) {
#ifdef __CUDA_ARCH__
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}
TR_RANGE_HD double rn_dsqrt(double a) {
#ifdef __CUDA_ARCH__
  return __dsqrt_rn(a);
#else
  return std::sqrt(a);
#endif
}

// ---- finiteness on raw bits (independent of -ffast-math style flags) ----
TR_RANGE_HD bool f32_bits_finite(uint32_t bits) { return (bits & 0x7f800000u) != 0x7f800000u; }
TR_RANGE_HD bool f16_bits_finite(uint16_t bits) { return (bits & 0x7c00u) != 0x7c00u; }
TR_RANGE_HD bool bf16_bits_finite(uint16_t bits) { return (bits & 0x7f80u) != 0x7f80u; }
// A 16-bit compute copy's bits: f16, or bf16 (the top half of an f32).
TR_RANGE_HD bool half_bits_finite(uint16_t bits, bool bf16) {
  return bf16 ? bf16_bits_finite(bits) : f16_bits_finite(bits);
}

// ---- region ops ----
TR_RANGE_HD float lerp_elem(float d, float s, float t) { return rn_add(d, rn_mul(t, rn_sub(s, d))); }
TR_RANGE_HD float accumulate_elem(float d, float s) { return rn_add(d, s); }

// ---- AMP ----
TR_RANGE_HD float unscale_factor(float loss_scale) { return rn_div(1.f, loss_scale); }

// UpdateLossScale on the scalars (one thread on the GPU).
TR_RANGE_HD void update_loss_scale(TrainScalars& s, float growth, float backoff, int interval, bool dynamic) {
  if (s.found_inf) {
    ++s.skipped_steps;
    if (dynamic) {
      s.loss_scale = rn_mul(s.loss_scale, backoff);
      s.good_steps = 0;
    }
    return;
  }
  if (!dynamic) return;
  if (++s.good_steps >= interval) {
    s.loss_scale = rn_mul(s.loss_scale, growth);
    s.good_steps = 0;
  }
}

// AdvanceStep on the scalars (one thread on the GPU). table: f32[table_elems];
// the usable length is min(schedule_len, table_elems) (table_elems when
// schedule_len is not set), so a bad schedule_len never reads past the table.
// It first publishes the step's check (Note [the check's flag]) and records
// the factor that unscales this step's gradients.
TR_RANGE_HD void advance_step(TrainScalars& s, const float* table, int64_t table_elems) {
  s.found_inf = s.pending_inf;
  s.pending_inf = 0;
  s.grad_unscale = unscale_factor(s.loss_scale);
  ++s.batches;
  if (s.found_inf) return;
  ++s.step;
  int64_t len = table_elems;
  if (s.schedule_len > 0 && s.schedule_len < len) len = s.schedule_len;
  if (len <= 0) return;
  int64_t i = int64_t(s.step) - 1;
  if (i > len - 1) i = len - 1;
  s.lr = table[i];
}

// ---- optimizers (f32) ----
// SgdNesterov: g' = g + wd*p (decay);  v = mu*v + g';  p -= lr*(g' + mu*v)
TR_RANGE_HD void sgd_nesterov_elem(float& p, float g, float& v, float lr, float mu, float wd, bool decay) {
  const float gd = decay ? rn_add(g, rn_mul(wd, p)) : g;
  v = rn_add(rn_mul(mu, v), gd);
  p = rn_sub(p, rn_mul(lr, rn_add(gd, rn_mul(mu, v))));
}

// b^e by binary exponentiation in double: the same multiplications on both
// backends (std::pow / CUDA pow are not guaranteed to agree to the last bit).
TR_RANGE_HD double pow_int(double b, int e) {
  double r = 1.0;
  while (e > 0) {
    if (e & 1) r = rn_dmul(r, b);
    b = rn_dmul(b, b);
    e >>= 1;
  }
  return r;
}

struct AdamCoef {
  float lr, lr_wd, b1, omb1, b2, omb2, eps, bc1, bc2;
};

// t = scalars.step after AdvanceStep (>= 1; 0 is treated as 1).
TR_RANGE_HD AdamCoef adam_coef(float lr, float wd, float b1, float b2, float eps, int t) {
  if (t < 1) t = 1;
  AdamCoef k;
  k.lr = lr;
  k.lr_wd = rn_mul(lr, wd);
  k.b1 = b1;
  k.omb1 = rn_sub(1.f, b1);
  k.b2 = b2;
  k.omb2 = rn_sub(1.f, b2);
  k.eps = eps;
  k.bc1 = float(rn_dadd(1.0, -pow_int(double(b1), t)));
  k.bc2 = float(rn_dadd(1.0, -pow_int(double(b2), t)));
  return k;
}

// AdamW: p -= lr*wd*p (decay); m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
//        p -= lr * (m/bc1) / (sqrt(v/bc2) + eps)
TR_RANGE_HD void adamw_elem(float& p, float g, float& m, float& v, const AdamCoef& k, bool decay) {
  if (decay) p = rn_sub(p, rn_mul(k.lr_wd, p));
  m = rn_add(rn_mul(k.b1, m), rn_mul(k.omb1, g));
  v = rn_add(rn_mul(k.b2, v), rn_mul(k.omb2, rn_mul(g, g)));
  const float mhat = rn_div(m, k.bc1);
  const float vhat = rn_div(v, k.bc2);
  p = rn_sub(p, rn_div(rn_mul(k.lr, mhat), rn_add(rn_sqrt(vhat), k.eps)));
}

// LARS trust ratio from the sums of squares (accumulated in double by both
// backends, in different orders): trust_coef*|p| / (|g| + wd*|p|), 1 when a norm is 0.
TR_RANGE_HD float lars_trust(double sum_p2, double sum_g2, float trust_coef, float wd) {
  const float pn = float(rn_dsqrt(sum_p2));
  const float gn = float(rn_dsqrt(sum_g2));
  if (pn == 0.f || gn == 0.f) return 1.f;
  return rn_div(rn_mul(trust_coef, pn), rn_add(gn, rn_mul(wd, pn)));
}

// LARS: g' = trust*(g + wd*p) (decay) or g;  v = mu*v + g';  p -= lr*v
// GradNorm's factor for a gradient of norm `norm`: min(1, max_norm / (norm + 1e-6)),
// as torch.nn.utils.clip_grad_norm_ computes it; 1 for a NaN norm (that step is skipped).
TR_RANGE_HD float clip_scale_of(float norm, float max_norm) {
  const float s = rn_div(max_norm, rn_add(norm, 1e-6f));
  return s < 1.f ? s : 1.f;
}

TR_RANGE_HD void lars_elem(float& p, float g, float& v, float lr, float mu, float wd, float trust, bool decay) {
  const float gd = decay ? rn_mul(trust, rn_add(g, rn_mul(wd, p))) : g;
  v = rn_add(rn_mul(mu, v), gd);
  p = rn_sub(p, rn_mul(lr, v));
}

// ---- launch-time checks shared by both backends (host only) ----
inline void check_n_ops(const RangeCall& c, int n, const char* op) {
  TR_CHECK(c.ops != nullptr && c.n_ops >= n, op, ": needs ", n, " operands, got ", c.n_ops);
  TR_CHECK(c.env != nullptr, op, ": no ExecEnv");
}
inline void check_f32(const RangeOperand& o, const char* op) {
  TR_CHECK(o.dtype == DType::F32, op, ": operand must be f32, got ", dtype_name(o.dtype));
}
// Parallel regions (param/grad/state, dst/src): same size and the same segments.
inline void check_parallel(const RangeOperand& a, const RangeOperand& b, const char* op) {
  TR_CHECK(a.elems == b.elems, op, ": operand sizes differ (", a.elems, " vs ", b.elems, ")");
  TR_CHECK(a.n_segs == b.n_segs, op, ": operand segment counts differ");
  for (int i = 0; i < a.n_segs && a.segs != b.segs; ++i)
    TR_CHECK(a.segs[i].offset == b.segs[i].offset && a.segs[i].elems == b.segs[i].elems, op,
             ": operand segments differ at ", i);
}
// Lerp's and Accumulate's operands: dst and src, f32 regions of one size.
// Lerp's attributes too: skip_on_inf needs the step's scalars.
struct BinaryOperands {
  const RangeOperand* dst = nullptr;
  const RangeOperand* src = nullptr;
};
inline BinaryOperands binary_operands(const RangeCall& c, const char* op) {
  check_n_ops(c, 2, op);
  TR_CHECK(c.n_ops == 2, op, ": takes 2 operands, got ", c.n_ops);
  const BinaryOperands o{&c.ops[0], &c.ops[1]};
  check_f32(*o.dst, op);
  check_f32(*o.src, op);
  TR_CHECK(o.dst->elems == o.src->elems, op, ": operand sizes differ");
  return o;
}
inline BinaryOperands lerp_operands(const RangeCall& c) {
  TR_CHECK(c.attrs != nullptr && c.env != nullptr, "Lerp: no attributes");
  TR_CHECK(!c.attrs->skip_on_inf || c.env->scalars != nullptr, "Lerp: skip_on_inf without scalars");
  return binary_operands(c, "Lerp");
}
// CopyIn's source: the staging slot's images and labels, for operands 0 and 1.
inline std::array<const void*, 2> copy_in_sources(const RangeCall& c) {
  check_n_ops(c, 1, "CopyIn");
  TR_CHECK(c.attrs != nullptr && c.env->staging != nullptr, "CopyIn: no staging buffers");
  TR_CHECK(c.attrs->slot == 0 || c.attrs->slot == 1, "CopyIn: bad staging slot ", c.attrs->slot);
  const HostBatch& src = c.env->staging[c.attrs->slot];
  return {src.images, src.labels};
}
inline void check_copy_in_source(const RangeCall& c, const void* from, int i) {
  TR_CHECK(from != nullptr, "CopyIn: staging slot ", c.attrs->slot, " has no ", i == 0 ? "images" : "labels");
}

// The operands of SgdNesterov and AdamW (optimizers.h), in order: param,
// grad, the optimizer's `states` f32 states (SgdNesterov: momentum; AdamW: m,
// v), with attrs.ema the EMA of the weights, optionally the 16-bit compute
// copy, then with attrs.bn_stats (SgdNesterov) BatchNorm's running and batch
// statistics and, with attrs.ema, their EMA. Checks the count, the compute
// copy and the statistics; returns where each one is.
struct OptimizerOperands {
  int f32 = 0;       // param, grad, states[, ema]: f32 but for a 16-bit grad (check_optimizer_operands)
  int ema = -1;      // the weights' EMA, or -1
  int compute = -1;  // the compute copy (f16|bf16), or -1
  int bn = -1;       // running statistics (batch at bn + 1, their EMA at bn + 2 with attrs.ema), or -1
};
inline OptimizerOperands optimizer_operands(const RangeCall& c, int states, const char* op) {
  TR_CHECK(c.ops != nullptr && c.attrs != nullptr, op, ": no operands or attributes");
  const RangeAttrs& a = *c.attrs;
  const int stats = a.bn_stats ? (a.ema ? 3 : 2) : 0;
  OptimizerOperands o;
  o.f32 = 2 + states + (a.ema ? 1 : 0);
  const int own = c.n_ops - stats;
  TR_CHECK(own == o.f32 || own == o.f32 + 1, op, ": needs ", o.f32, " or ", o.f32 + 1, " operands",
           a.bn_stats ? " and the BatchNorm statistics" : "", a.ema ? " (with the EMA)" : "", ", got ", c.n_ops);
  if (a.ema) o.ema = 2 + states;
  if (own == o.f32 + 1) {
    o.compute = o.f32;
    TR_CHECK(is_half(c.ops[o.compute].dtype), op, ": the compute copy must be f16 or bf16, got ",
             dtype_name(c.ops[o.compute].dtype));
    check_parallel(c.ops[0], c.ops[o.compute], op);
  }
  if (stats > 0) {
    o.bn = own;
    for (int k = own; k < c.n_ops; ++k) {
      check_f32(c.ops[k], op);
      TR_CHECK(c.ops[k].elems == c.ops[own].elems, op, ": BatchNorm statistics of different sizes");
    }
  }
  return o;
}
// Cast with attrs.check_finite (amp_ops.h): only an f16|bf16 -> f32 cast may check
// (its source is what CheckFinite would see, exactly), and it needs the
// scalars. False without the attribute.
inline bool cast_checks_finite(const RangeCall& c) {
  if (c.attrs == nullptr || !c.attrs->check_finite) return false;
  TR_CHECK(is_half(c.ops[0].dtype) && c.ops[1].dtype == DType::F32,
           "Cast: check_finite needs an f16 or bf16 -> f32 cast, got ", dtype_name(c.ops[0].dtype), " -> ",
           dtype_name(c.ops[1].dtype));
  TR_CHECK(c.env->scalars != nullptr, "Cast: check_finite without scalars");
  return true;
}
// AdvanceStep's operands (amp_ops.h): lr_table[, dst, src]. With the pair it
// also does Accumulate's dst += src; true then.
inline bool advance_step_accumulates(const RangeCall& c) {
  TR_CHECK(c.ops != nullptr && (c.n_ops == 1 || c.n_ops == 3), "AdvanceStep: needs 1 or 3 operands, got ", c.n_ops);
  TR_CHECK(c.env != nullptr && c.env->scalars != nullptr, "AdvanceStep: no scalars");
  check_f32(c.ops[0], "AdvanceStep");
  if (c.n_ops == 1) return false;
  check_f32(c.ops[1], "AdvanceStep");
  check_f32(c.ops[2], "AdvanceStep");
  TR_CHECK(c.ops[1].elems == c.ops[2].elems, "AdvanceStep: accumulated operand sizes differ (", c.ops[1].elems, " vs ",
           c.ops[2].elems, ")");
  return true;
}
inline void check_segs(const RangeOperand& o, const char* op) {
  TR_CHECK(o.n_segs == 0 || o.segs != nullptr, op, ": segments missing");
  for (int i = 0; i < o.n_segs; ++i)
    TR_CHECK(o.segs[i].offset >= 0 && o.segs[i].elems >= 0 && o.segs[i].offset + o.segs[i].elems <= o.elems, op,
             ": segment ", i, " [", o.segs[i].offset, ", +", o.segs[i].elems, ") outside the region of ", o.elems);
}
// A gradient operand as the CPU references read it: f32, or f16|bf16 widened
// exactly (Note [16-bit gradients in the optimizer]). Host only.
struct GradView {
  const void* p = nullptr;
  DType dtype = DType::F32;
  explicit GradView(const RangeOperand& o) : p(o.data), dtype(o.dtype) {}
  float operator[](int64_t i) const {
    if (dtype == DType::F32) return static_cast<const float*>(p)[i];
    const uint16_t b = static_cast<const uint16_t*>(p)[i];
    return dtype == DType::BF16 ? bf16_to_float(bf16_t{b}) : half_to_float(half_t{b});
  }
};

// The checks the optimizers share on both backends: n operands with the same
// layout, attributes and the step's scalars. All f32, except that the gradient
// (operand 1) may be f16 or bf16 where half_grad allows it (Note [16-bit
// gradients in the optimizer]).
inline void check_optimizer_operands(const RangeCall& c, int n, const char* op, bool half_grad = false) {
  check_n_ops(c, n, op);
  TR_CHECK(c.attrs != nullptr && c.env->scalars != nullptr, op, ": no attributes or scalars");
  check_segs(c.ops[0], op);
  for (int k = 0; k < n; ++k) {
    if (k != 1 || !half_grad || !is_half(c.ops[k].dtype)) check_f32(c.ops[k], op);
    check_parallel(c.ops[0], c.ops[k], op);
  }
}

}  // namespace tr::range
