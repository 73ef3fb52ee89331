// CPU fused optimizers (optimizers.h) against a straightforward
// double-precision reference, SGD's fused tail against the ops it replaces,
// and one training step of the AMP pipeline.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "framework/core/error.h"
#include "framework/core/half.h"
#include "framework/ops/kernels/range_util.h"
#include "framework/ops/range/amp_ops.h"
#include "framework/ops/range/grad_norm.h"
#include "framework/ops/range/optimizers.h"
#include "framework/ops/range/region_ops.h"
#include "tests/range_ops_test_util.h"

namespace tr {
namespace {

using namespace range_test;

// Three tensors with padding between them and at the end: a decayed weight of
// 200, a bias of 10 (no decay), a decayed weight of 130.
struct Layout {
  std::vector<Segment> segs = {{0, 200, true}, {256, 10, false}, {384, 130, true}};
  int64_t elems = 640;
  bool in_seg(int64_t i) const {
    for (const Segment& s : segs)
      if (i >= s.offset && i < s.offset + s.elems) return true;
    return false;
  }
  std::vector<float> random(std::mt19937& rng, float lo, float hi) const {
    std::uniform_real_distribution<float> u(lo, hi);
    std::vector<float> v(elems, 0.f);
    for (int64_t i = 0; i < elems; ++i)
      if (in_seg(i)) v[i] = u(rng);
    return v;
  }
};

void expect_padding_zero(const Layout& l, const std::vector<float>& v, const char* what) {
  for (int64_t i = 0; i < l.elems; ++i)
    if (!l.in_seg(i)) {
      ASSERT_EQ(bits(v[i]), 0u) << what << " padding at " << i;
    }
}

// |got - want| <= tol * (1 + |want|): relative for values above 1, absolute below (an f32 rounding is
// relative, and state near 0 would otherwise get no room at all).
void expect_near_rel(const std::vector<float>& got, const std::vector<double>& want, double tol, const char* what) {
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], tol * (1.0 + std::fabs(want[i]))) << what << " at " << i;
}

std::vector<double> to_double(const std::vector<float>& v) { return {v.begin(), v.end()}; }

TEST(RangeOpsOptim, SgdNesterovMatchesAReferenceAndDecaysOnlyDecaySegments) {
  Layout l;
  std::mt19937 rng(1);
  std::vector<float> p = l.random(rng, -1, 1), v = l.random(rng, -0.1f, 0.1f), g;
  std::vector<double> rp = to_double(p), rv = to_double(v);
  Call c;
  c.attrs.momentum = 0.9f;
  c.attrs.weight_decay = 0.05f;
  c.scalars.lr = 0.1f;
  for (int step = 0; step < 4; ++step) {
    g = l.random(rng, -1, 1);
    c.set_ops({operand(p, &l.segs), operand(g, &l.segs), operand(v, &l.segs)});
    c.run(sgd_nesterov_cpu);
    for (const Segment& s : l.segs)
      for (int64_t i = s.offset; i < s.offset + s.elems; ++i) {
        const double gd = g[i] + (s.decay ? 0.05 * rp[i] : 0.0);
        rv[i] = 0.9 * rv[i] + gd;
        rp[i] -= 0.1 * (gd + 0.9 * rv[i]);
      }
  }
  // f32 state over 4 steps (a few roundings of 6e-8 of values of a few units per step) and the op's f32
  // constants (0.9f, 0.1f: 3e-8 relative off the reference's): a few 1e-7; 1e-5 leaves about 30x. A decay
  // applied to the bias, or missed, moves p by lr * wd * p = 5e-3 * p a step.
  expect_near_rel(p, rp, 1e-5, "param");
  expect_near_rel(v, rv, 1e-5, "momentum");
  expect_padding_zero(l, p, "param");
  expect_padding_zero(l, v, "momentum");
}

TEST(RangeOpsOptim, AdamWMatchesAReferenceAndDecaysOnlyDecaySegments) {
  Layout l;
  std::mt19937 rng(2);
  std::vector<float> p = l.random(rng, -1, 1), m(l.elems, 0.f), v(l.elems, 0.f), g;
  std::vector<double> rp = to_double(p), rm(l.elems, 0.0), rv(l.elems, 0.0);
  Call c;
  c.attrs.weight_decay = 0.1f;
  c.attrs.beta1 = 0.9f;
  c.attrs.beta2 = 0.999f;
  c.attrs.adam_eps = 1e-8f;
  c.scalars.lr = 0.01f;
  const double b1 = 0.9f, b2 = 0.999f, lr = 0.01f, wd = 0.1f;
  for (int t = 1; t <= 5; ++t) {
    c.scalars.step = t;
    g = l.random(rng, -1, 1);
    c.set_ops({operand(p, &l.segs), operand(g, &l.segs), operand(m, &l.segs), operand(v, &l.segs)});
    c.run(adamw_cpu);
    for (const Segment& s : l.segs)
      for (int64_t i = s.offset; i < s.offset + s.elems; ++i) {
        if (s.decay) rp[i] -= lr * wd * rp[i];
        rm[i] = b1 * rm[i] + (1 - b1) * g[i];
        rv[i] = b2 * rv[i] + (1 - b2) * double(g[i]) * g[i];
        const double mh = rm[i] / (1 - std::pow(b1, t)), vh = rv[i] / (1 - std::pow(b2, t));
        rp[i] -= lr * mh / (std::sqrt(vh) + 1e-8);
      }
  }
  // f32 state over 5 steps, with a division and a square root per element: roundings of about 3e-7 of
  // the update (0.01 a step) and 6e-8 of |p|: a few 1e-7; 2e-5 leaves about 50x. A bias correction left
  // out scales the update by 2.4 to 32, a decay misplaced moves p by lr * wd * p = 1e-3 * p a step.
  expect_near_rel(p, rp, 2e-5, "param");
  expect_near_rel(m, rm, 2e-5, "m");
  expect_near_rel(v, rv, 2e-5, "v");
  expect_padding_zero(l, p, "param");
  expect_padding_zero(l, m, "m");
  expect_padding_zero(l, v, "v");
}

// Note [16-bit gradients in the optimizer]: GradNorm, SgdNesterov and AdamW
// on f16 or bf16 gradients give the bits they give on the gradients' f32 casts
// (the GPU's side: RangeOpsGpuOptim.HalfGradientsGiveTheBitsOfTheirF32Casts).
TEST(RangeOpsOptim, HalfGradientsGiveTheBitsOfTheirF32Casts) {
  Layout l;
  std::mt19937 rng(7);
  for (const DType dt : {DType::F16, DType::BF16}) {
    SCOPED_TRACE(dtype_name(dt));
    std::vector<uint16_t> g16;
    std::vector<float> g;
    for (float x : l.random(rng, -1, 1)) {
      g16.push_back(dt == DType::BF16 ? float_to_bf16(x).bits : float_to_half(x).bits);
      g.push_back(dt == DType::BF16 ? bf16_to_float(bf16_t{g16.back()}) : half_to_float(half_t{g16.back()}));
    }
    const RangeOperand in[2] = {operand16(g16, dt, &l.segs), operand(g, &l.segs)};
    const std::vector<float> p0 = l.random(rng, -1, 1);
    std::vector<double> partials(kGradNormPartials);
    RangeOperand part;
    part.data = partials.data();
    part.dtype = DType::F64;
    part.elems = int64_t(partials.size());
    float norm[2];
    std::vector<float> after[2][2];  // [gradients][SgdNesterov, AdamW with the clip]: the parameters
    for (int k = 0; k < 2; ++k) {
      Call c;
      c.attrs.max_norm = 1.f;
      c.set_ops({in[k], part});
      c.run(grad_norm_cpu);
      norm[k] = c.scalars.grad_norm;
      for (int opt = 0; opt < 2; ++opt) {
        std::vector<float> p = p0, m(l.elems, 0.01f), v(l.elems, 0.001f);
        Call o;
        o.attrs.momentum = 0.9f, o.attrs.beta1 = 0.9f, o.attrs.beta2 = 0.999f, o.attrs.adam_eps = 1e-8f;
        o.attrs.weight_decay = 0.1f, o.attrs.clip = opt == 1;
        o.scalars.lr = 0.01f, o.scalars.step = 1, o.scalars.clip_scale = c.scalars.clip_scale;
        if (opt == 0) o.set_ops({operand(p, &l.segs), in[k], operand(m, &l.segs)});
        else o.set_ops({operand(p, &l.segs), in[k], operand(m, &l.segs), operand(v, &l.segs)});
        o.run(opt == 0 ? sgd_nesterov_cpu : adamw_cpu);
        after[k][opt] = p;
      }
    }
    EXPECT_EQ(bits(norm[0]), bits(norm[1]));
    EXPECT_GT(norm[0], 1.f);  // about 10 for 340 gradients in [-1, 1]: the clip binds
    for (int opt = 0; opt < 2; ++opt) {
      EXPECT_NE(after[0][opt], p0);
      EXPECT_EQ(std::memcmp(after[0][opt].data(), after[1][opt].data(), 4 * size_t(l.elems)), 0) << "optimizer " << opt;
    }
  }
}

TEST(RangeOpsOptim, AdamWDecayOnlyTouchesDecaySegments) {
  Layout l;
  std::mt19937 rng(3);
  const std::vector<float> p0 = l.random(rng, -1, 1);
  std::vector<float> p = p0, g(l.elems, 0.f), m(l.elems, 0.f), v(l.elems, 0.f);
  Call c;
  c.attrs.weight_decay = 0.5f;
  c.scalars.lr = 0.1f;
  c.scalars.step = 1;
  c.set_ops({operand(p, &l.segs), operand(g, &l.segs), operand(m, &l.segs), operand(v, &l.segs)});
  c.run(adamw_cpu);  // zero gradient: only the decoupled decay moves p
  for (const Segment& s : l.segs)
    for (int64_t i = s.offset; i < s.offset + s.elems; ++i)
      EXPECT_EQ(p[i], s.decay ? p0[i] - 0.05f * p0[i] : p0[i]) << i;
}

// LARS reference: per tensor trust from the norms, in double.
void lars_reference(const Layout& l, std::vector<double>& p, const std::vector<float>& g, std::vector<double>& v,
                    double lr, double mu, double wd, double coef) {
  for (const Segment& s : l.segs) {
    double pn = 0, gn = 0;
    for (int64_t i = s.offset; i < s.offset + s.elems; ++i) {
      pn += p[i] * p[i];
      gn += double(g[i]) * g[i];
    }
    pn = std::sqrt(pn);
    gn = std::sqrt(gn);
    const double trust = (pn == 0 || gn == 0) ? 1.0 : coef * pn / (gn + wd * pn);
    for (int64_t i = s.offset; i < s.offset + s.elems; ++i) {
      const double gd = s.decay ? trust * (g[i] + wd * p[i]) : g[i];
      v[i] = mu * v[i] + gd;
      p[i] -= lr * v[i];
    }
  }
}

TEST(RangeOpsOptim, LarsMatchesAReferenceWithPerTensorTrustRatios) {
  Layout l;
  std::mt19937 rng(4);
  std::vector<float> p = l.random(rng, -1, 1), v(l.elems, 0.f), g;
  std::vector<double> rp = to_double(p), rv(l.elems, 0.0);
  Call c;
  c.attrs.momentum = 0.9f;
  c.attrs.weight_decay = 5e-4f;
  c.attrs.trust_coef = 0.02f;
  c.scalars.lr = 0.5f;
  for (int step = 0; step < 4; ++step) {
    g = l.random(rng, -1, 1);
    c.set_ops({operand(p, &l.segs), operand(g, &l.segs), operand(v, &l.segs)});
    c.run(lars_cpu);
    lars_reference(l, rp, g, rv, 0.5f, 0.9f, 5e-4f, 0.02f);
  }
  // Norms in double, the update in f32 over 4 steps: a few roundings of 6e-8 of values of a few units a
  // step; 1e-5 leaves about 30x. A trust ratio on the bias (0.02 for 1) or another tensor's (percents off)
  // moves p by 1e-4 or more.
  expect_near_rel(p, rp, 1e-5, "param");
  expect_near_rel(v, rv, 1e-5, "momentum");
  expect_padding_zero(l, p, "param");
  expect_padding_zero(l, v, "momentum");
}

TEST(RangeOpsOptim, LarsTrustIsOneWhenANormIsZero) {
  Layout l;
  std::mt19937 rng(5);
  std::vector<float> p = l.random(rng, -1, 1), v(l.elems, 0.f), g = l.random(rng, -1, 1);
  // First weight: zero parameters; second weight: zero gradient.
  for (int64_t i = 0; i < 200; ++i) p[i] = 0.f;
  for (int64_t i = 384; i < 514; ++i) g[i] = 0.f;
  const std::vector<float> p0 = p;
  Call c;
  c.attrs.momentum = 0.9f;
  c.attrs.weight_decay = 0.5f;
  c.attrs.trust_coef = 0.001f;
  c.scalars.lr = 0.1f;
  c.set_ops({operand(p, &l.segs), operand(g, &l.segs), operand(v, &l.segs)});
  c.run(lars_cpu);
  for (int64_t i = 0; i < 200; ++i) {  // trust 1: g' = g + wd*0 = g
    EXPECT_EQ(v[i], g[i]) << i;
    EXPECT_EQ(p[i], -0.1f * g[i]) << i;
  }
  for (int64_t i = 384; i < 514; ++i) {  // trust 1: g' = 0 + wd*p
    EXPECT_EQ(v[i], 0.5f * p0[i]) << i;
  }
}

TEST(RangeOpsOptim, AFoundInfStepLeavesParamsAndStateBitIdentical) {
  Layout l;
  std::mt19937 rng(6);
  std::vector<float> p = l.random(rng, -1, 1), g = l.random(rng, -1, 1), a = l.random(rng, -1, 1),
                     b = l.random(rng, 0, 1);
  g[5] = NAN;
  const std::vector<float> p0 = p, a0 = a, b0 = b;
  auto same = [](const std::vector<float>& x, const std::vector<float>& y) {
    return std::memcmp(x.data(), y.data(), x.size() * 4) == 0;
  };
  Call c;
  c.scalars.found_inf = 1;
  c.scalars.lr = 0.1f;
  c.scalars.step = 3;
  c.attrs.weight_decay = 0.1f;
  c.set_ops({operand(p, &l.segs), operand(g, &l.segs), operand(a, &l.segs)});
  c.run(sgd_nesterov_cpu);
  c.run(lars_cpu);
  c.set_ops({operand(p, &l.segs), operand(g, &l.segs), operand(a, &l.segs), operand(b, &l.segs)});
  c.run(adamw_cpu);
  EXPECT_TRUE(same(p, p0));
  EXPECT_TRUE(same(a, a0));
  EXPECT_TRUE(same(b, b0));
}

// Note [optimizer tail]: SgdNesterov with the unscale, the EMA, the f16
// compute copy and BatchNorm's statistics folded in gives the bits of
// UnscaleGrads, SgdNesterov, Lerp, Cast and the statistics' two Lerps run one
// after another, at a loss scale whose inverse rounds (3) and one
// whose does not (1024); with a found Inf it changes nothing.
TEST(RangeOpsOptim, SgdWithItsTailIsTheUnfusedOpsInOne) {
  Layout l;
  std::mt19937 rng(8);
  for (float scale : {3.f, 1024.f}) {
    std::vector<float> p = l.random(rng, -1, 1), g = l.random(rng, -scale, scale), v = l.random(rng, -0.1f, 0.1f),
                       ema = l.random(rng, -1, 1);
    std::vector<half_t> p16(size_t(l.elems), half_t{});
    // BatchNorm's running, batch and EMA statistics (attrs.bn_stats): 1001
    // values, not a whole number of tiles.
    std::vector<float> run(1001), batch(1001), run_ema(1001);
    for (auto* x : {&run, &batch, &run_ema})
      for (float& y : *x) y = std::uniform_real_distribution<float>(-2.f, 2.f)(rng);
    std::vector<float> p2 = p, g2 = g, v2 = v, ema2 = ema, run2 = run, run_ema2 = run_ema;
    const std::vector<float> p0 = p;
    std::vector<half_t> p16_2 = p16;
    Call fused;
    fused.scalars.lr = 0.1f;
    fused.scalars.loss_scale = scale;
    fused.scalars.grad_unscale = range::unscale_factor(scale);  // as AdvanceStep records it
    fused.attrs.weight_decay = 0.01f;
    fused.attrs.unscale = true;
    fused.attrs.ema = true;
    fused.attrs.ema_t = 0.01f;
    fused.attrs.bn_stats = true;
    fused.attrs.t = 0.1f;
    RangeOperand h = operand(p16);
    h.segs = l.segs.data();
    h.n_segs = int(l.segs.size());
    fused.set_ops({operand(p, &l.segs), operand(g, &l.segs), operand(v, &l.segs), operand(ema, &l.segs), h,
                   operand(run), operand(batch), operand(run_ema)});
    fused.run(sgd_nesterov_cpu);
    Call apart;
    apart.scalars = fused.scalars;
    apart.attrs.weight_decay = 0.01f;
    apart.set_ops({operand(g2, &l.segs)});
    apart.run(unscale_grads_cpu);
    apart.set_ops({operand(p2, &l.segs), operand(g2, &l.segs), operand(v2, &l.segs)});
    apart.run(sgd_nesterov_cpu);
    apart.attrs.t = 0.01f;
    apart.attrs.skip_on_inf = true;
    apart.set_ops({operand(ema2), operand(p2)});
    apart.run(lerp_cpu);
    apart.set_ops({operand(p2), operand(p16_2)});
    apart.run(cast_cpu);
    apart.attrs.t = 0.1f;  // UPDATE_STATS's Lerp, then the EMA's
    apart.set_ops({operand(run2), operand(batch)});
    apart.run(lerp_cpu);
    apart.attrs.t = 0.01f;
    apart.set_ops({operand(run_ema2), operand(run2)});
    apart.run(lerp_cpu);
    EXPECT_EQ(std::memcmp(run.data(), run2.data(), run.size() * 4), 0);
    EXPECT_EQ(std::memcmp(run_ema.data(), run_ema2.data(), run.size() * 4), 0);
    for (int64_t i = 0; i < l.elems; ++i) {
      ASSERT_EQ(bits(p[i]), bits(p2[i])) << "param at " << i << ", scale " << scale;
      ASSERT_EQ(bits(v[i]), bits(v2[i])) << "momentum at " << i;
      ASSERT_EQ(bits(ema[i]), bits(ema2[i])) << "ema at " << i;
      ASSERT_EQ(std::memcmp(&p16[size_t(i)], &p16_2[size_t(i)], 2), 0) << "f16 copy at " << i;
    }
    EXPECT_NE(std::memcmp(p.data(), p0.data(), p.size() * 4), 0);  // the update did run
    const std::vector<float> before = p, ema_before = ema, run_before = run;
    fused.scalars.found_inf = 1;
    fused.run(sgd_nesterov_cpu);
    EXPECT_EQ(std::memcmp(p.data(), before.data(), p.size() * 4), 0);
    EXPECT_EQ(std::memcmp(ema.data(), ema_before.data(), ema.size() * 4), 0);
    EXPECT_EQ(std::memcmp(run.data(), run_before.data(), run.size() * 4), 0);
    std::vector<float> short_ema(1000);  // statistics of different sizes
    fused.set_ops({operand(p, &l.segs), operand(g, &l.segs), operand(v, &l.segs), operand(ema, &l.segs), h,
                   operand(run), operand(batch), operand(short_ema)});
    EXPECT_THROW(fused.run(sgd_nesterov_cpu), Error);
  }
}

// Without an EMA (attrs.ema false, ema_decay 0) the tails take neither EMA
// operand and move everything else as they do with one: SgdNesterov with the
// compute copy and BatchNorm's running statistics, AdamW with the compute
// copy, bit for bit. A list that does not match attrs.ema is refused.
TEST(RangeOpsOptim, TailsWithoutAnEmaMoveTheRestAsWithOne) {
  Layout l;
  std::mt19937 rng(31);
  for (bool adam : {false, true}) {
    const std::vector<float> p0 = l.random(rng, -1, 1), g = l.random(rng, -1, 1), s0 = l.random(rng, -0.1f, 0.1f),
                             ema0 = l.random(rng, -1, 1);
    std::vector<float> run0(77), batch(77);
    for (auto* x : {&run0, &batch})
      for (float& y : *x) y = std::uniform_real_distribution<float>(-2.f, 2.f)(rng);
    struct Side {
      std::vector<float> p, s1, s2, ema, run, run_ema;
      std::vector<half_t> p16;
    };
    auto run_tail = [&](bool with_ema, Side& d) {
      d = {p0,   s0,   std::vector<float>(size_t(l.elems), 0.f),      ema0,
           run0, run0, std::vector<half_t>(size_t(l.elems), half_t{})};
      std::vector<float> gi = g;
      Call c;
      c.scalars.lr = 0.05f;
      c.scalars.step = 1;
      c.attrs.weight_decay = 0.01f;
      c.attrs.ema = with_ema;
      c.attrs.ema_t = 0.01f;
      c.attrs.bn_stats = !adam;
      c.attrs.t = 0.1f;
      RangeOperand h = operand(d.p16);
      h.segs = l.segs.data();
      h.n_segs = int(l.segs.size());
      std::vector<RangeOperand> ops = {operand(d.p, &l.segs), operand(gi, &l.segs), operand(d.s1, &l.segs)};
      if (adam) ops.push_back(operand(d.s2, &l.segs));
      if (with_ema) ops.push_back(operand(d.ema, &l.segs));
      ops.push_back(h);
      if (!adam) {
        ops.push_back(operand(d.run));
        ops.push_back(operand(batch));
        if (with_ema) ops.push_back(operand(d.run_ema));
      }
      c.ops = ops;
      c.run(adam ? adamw_cpu : sgd_nesterov_cpu);
      // The list of the other setting: an EMA operand too many or too few.
      c.attrs.ema = !with_ema;
      EXPECT_THROW(c.run(adam ? adamw_cpu : sgd_nesterov_cpu), Error) << (adam ? "AdamW" : "SgdNesterov");
    };
    Side with, without;
    run_tail(true, with);
    run_tail(false, without);
    const char* op = adam ? "AdamW" : "SgdNesterov";
    EXPECT_NE(std::memcmp(with.p.data(), p0.data(), p0.size() * 4), 0) << op << ": the update ran";
    EXPECT_NE(std::memcmp(with.ema.data(), ema0.data(), ema0.size() * 4), 0) << op << ": the EMA moved";
    EXPECT_EQ(std::memcmp(without.ema.data(), ema0.data(), ema0.size() * 4), 0) << op << ": no EMA moved";
    EXPECT_EQ(std::memcmp(with.p.data(), without.p.data(), p0.size() * 4), 0) << op << ": param";
    EXPECT_EQ(std::memcmp(with.s1.data(), without.s1.data(), s0.size() * 4), 0) << op << ": first state";
    EXPECT_EQ(std::memcmp(with.s2.data(), without.s2.data(), s0.size() * 4), 0) << op << ": second state";
    EXPECT_EQ(std::memcmp(with.p16.data(), without.p16.data(), with.p16.size() * 2), 0) << op << ": compute copy";
    EXPECT_EQ(std::memcmp(with.run.data(), without.run.data(), run0.size() * 4), 0) << op << ": running statistics";
    if (!adam) {
      EXPECT_NE(std::memcmp(with.run.data(), run0.data(), run0.size() * 4), 0) << "the statistics moved";
      EXPECT_NE(std::memcmp(with.run_ema.data(), run0.data(), run0.size() * 4), 0) << "their EMA moved";
    }
    EXPECT_EQ(std::memcmp(without.run_ema.data(), run0.data(), run0.size() * 4), 0) << op << ": no statistics' EMA";
  }
}

TEST(RangeOpsOptim, OneTrainingStepOfTheAmpPipeline) {
  // CheckFinite -> AdvanceStep -> UnscaleGrads -> UpdateLossScale -> SgdNesterov, twice:
  // a finite step applies the update with the table's lr, an overflow step changes nothing
  // but the loss scale and the skip counter.
  Layout l;
  std::mt19937 rng(7);
  std::vector<float> p = l.random(rng, -1, 1), v(l.elems, 0.f), g = l.random(rng, -8, 8);
  std::vector<float> table = {0.5f, 0.25f};
  Call c;
  c.scalars.loss_scale = 8.f;
  c.scalars.schedule_len = 2;
  c.attrs.momentum = 0.f;
  auto step = [&] {
    c.set_ops({operand(g, &l.segs)});
    c.run(check_finite_cpu);
    c.set_ops({operand(table)});
    c.run(advance_step_cpu);
    c.set_ops({operand(g, &l.segs)});
    c.run(unscale_grads_cpu);
    c.ops.clear();
    c.run(update_loss_scale_cpu);
    c.set_ops({operand(p, &l.segs), operand(g, &l.segs), operand(v, &l.segs)});
    c.run(sgd_nesterov_cpu);
  };
  const std::vector<float> p0 = p, g0 = g;
  step();
  EXPECT_EQ(c.scalars.step, 1);
  EXPECT_EQ(c.scalars.lr, 0.5f);
  for (int64_t i = 0; i < l.elems; ++i) EXPECT_EQ(p[i], p0[i] - 0.5f * (g0[i] * 0.125f)) << i;
  const std::vector<float> p1 = p;
  g[l.segs[2].offset + l.segs[2].elems - 1] = INFINITY;
  step();
  EXPECT_EQ(c.scalars.found_inf, 1);
  EXPECT_EQ(c.scalars.step, 1);
  EXPECT_EQ(c.scalars.loss_scale, 4.f);
  EXPECT_EQ(c.scalars.skipped_steps, 1);
  EXPECT_EQ(std::memcmp(p.data(), p1.data(), p.size() * 4), 0);
}

}  // namespace
}  // namespace tr
