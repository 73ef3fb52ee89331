// CPU RANGE ops: exact semantics on small hand-checkable data, and the fused
// optimizers against a straightforward double-precision reference.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "framework/core/error.h"
#include "framework/core/half.h"
#include "framework/ops/amp_ops.h"
#include "framework/ops/optimizers.h"
#include "framework/ops/range_util.h"
#include "framework/ops/region_ops.h"

namespace tr {
namespace {

RangeOperand operand(std::vector<float>& v, const std::vector<Segment>* segs = nullptr) {
  RangeOperand o;
  o.data = v.data();
  o.dtype = DType::F32;
  o.elems = int64_t(v.size());
  if (segs) {
    o.segs = segs->data();
    o.n_segs = int(segs->size());
  }
  return o;
}

RangeOperand operand(std::vector<half_t>& v) {
  RangeOperand o;
  o.data = v.data();
  o.dtype = DType::F16;
  o.elems = int64_t(v.size());
  return o;
}

// One RANGE call with its own env, scalars and attributes.
struct Call {
  TrainScalars scalars;
  RangeAttrs attrs;
  ExecEnv env;
  std::vector<RangeOperand> ops;
  Call() { env.scalars = &scalars; }
  // A fresh vector each time: assigning the list in place trips GCC 12's
  // -Wnonnull at -O3 inside vector::assign.
  void set_ops(std::initializer_list<RangeOperand> o) { ops = std::vector<RangeOperand>(o); }
  void run(RangeFn fn) {
    RangeCall c;
    c.ops = ops.data();
    c.n_ops = int(ops.size());
    c.attrs = &attrs;
    c.env = &env;
    fn(c);
  }
};

uint32_t bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

// ---------------------------------------------------------------- region ops

TEST(RangeOpsRegion, CopyInCopiesTheSelectedStagingSlot) {
  const std::vector<uint8_t> img_a = {1, 2, 3, 4, 5, 6}, img_b = {9, 8, 7, 6, 5, 4};
  const std::vector<int32_t> lab_a = {3, 1}, lab_b = {7, 0};
  HostBatch staging[2] = {{img_a.data(), lab_a.data()}, {img_b.data(), lab_b.data()}};
  std::vector<uint8_t> images(6, 0);
  std::vector<int32_t> labels(2, -1);
  Call c;
  c.env.staging = staging;
  c.set_ops({{images.data(), DType::U8, 6}, {labels.data(), DType::I32, 2}});
  c.attrs.slot = 1;
  c.run(copy_in_cpu);
  EXPECT_EQ(images, img_b);
  EXPECT_EQ(labels, lab_b);
  c.attrs.slot = 0;
  c.run(copy_in_cpu);
  EXPECT_EQ(images, img_a);
  EXPECT_EQ(labels, lab_a);
}

TEST(RangeOpsRegion, ClearZeroesEveryOperandWhateverItsDtype) {
  std::vector<float> a = {1.f, -2.f, NAN, 4.f};
  std::vector<half_t> h(5, half_t{0x3c00});
  Call c;
  c.set_ops({operand(a), operand(h)});
  c.run(clear_cpu);
  for (float x : a) EXPECT_EQ(bits(x), 0u);
  for (half_t x : h) EXPECT_EQ(x.bits, 0u);
}

TEST(RangeOpsRegion, LerpMovesDstTowardsSrcAndKeepsPaddingZero) {
  std::vector<float> d = {0.f, 1.f, 2.f, 4.f, 0.f, 0.f};  // last two: padding
  std::vector<float> s = {4.f, 3.f, 2.f, 0.f, 0.f, 0.f};
  Call c;
  c.set_ops({operand(d), operand(s)});
  c.attrs.t = 0.25f;
  c.run(lerp_cpu);
  EXPECT_EQ(d, (std::vector<float>{1.f, 1.5f, 2.f, 3.f, 0.f, 0.f}));
}

TEST(RangeOpsRegion, LerpSkipsOnInfOnlyWhenAsked) {
  std::vector<float> d = {0.f, 8.f}, s = {4.f, 0.f};
  Call c;
  c.set_ops({operand(d), operand(s)});
  c.attrs.t = 0.5f;
  c.scalars.found_inf = 1;
  c.attrs.skip_on_inf = true;
  c.run(lerp_cpu);
  EXPECT_EQ(d, (std::vector<float>{0.f, 8.f}));
  c.attrs.skip_on_inf = false;
  c.run(lerp_cpu);
  EXPECT_EQ(d, (std::vector<float>{2.f, 4.f}));
}

TEST(RangeOpsRegion, LerpTakesTwoOperands) {
  std::vector<float> d(8), s(8), f(8);
  Call c;
  c.attrs.t = 0.5f;
  c.set_ops({operand(d), operand(s), operand(f)});
  EXPECT_THROW(c.run(lerp_cpu), Error);
}

TEST(RangeOpsRegion, AccumulateAddsSrcIntoDst) {
  std::vector<float> d = {1.f, 2.f, -3.f, 0.f}, s = {0.5f, 0.25f, 3.f, 0.f};
  Call c;
  c.set_ops({operand(d), operand(s)});
  c.run(accumulate_cpu);
  EXPECT_EQ(d, (std::vector<float>{1.5f, 2.25f, 0.f, 0.f}));
  c.run(accumulate_cpu);
  EXPECT_EQ(d, (std::vector<float>{2.f, 2.5f, 3.f, 0.f}));
}

// ---------------------------------------------------------------- AMP

TEST(RangeOpsAmp, CastF32ToF16RoundsToNearestEvenAndBack) {
  std::vector<float> f = {1.f, -2.f, 0.1f, 65504.f, 65520.f, 1e-8f, 0.f, 1.f + 1.f / 2048.f};
  std::vector<half_t> h(f.size(), half_t{0xffff});
  Call c;
  c.set_ops({operand(f), operand(h)});
  c.run(cast_cpu);
  const uint16_t want[] = {0x3c00, 0xc000, 0x2e66, 0x7bff, 0x7c00, 0x0000, 0x0000, 0x3c00};
  for (size_t i = 0; i < f.size(); ++i) EXPECT_EQ(h[i].bits, want[i]) << i;
  std::vector<float> back(f.size(), NAN);
  c.set_ops({operand(h), operand(back)});
  c.run(cast_cpu);
  EXPECT_EQ(back[0], 1.f);
  EXPECT_EQ(back[1], -2.f);
  EXPECT_EQ(back[2], 0.0999755859375f);
  EXPECT_EQ(back[3], 65504.f);
  EXPECT_TRUE(std::isinf(back[4]));
  EXPECT_EQ(back[7], 1.f);
}

TEST(RangeOpsAmp, CastSameDtypeCopies) {
  std::vector<float> a = {1.f, 2.f, 3.f}, b(3, 0.f);
  Call c;
  c.set_ops({operand(a), operand(b)});
  c.run(cast_cpu);
  EXPECT_EQ(a, b);
}

TEST(RangeOpsAmp, CheckFiniteFindsNanAndInfInF32AndF16IncludingTheLastElement) {
  const float bad32[] = {NAN, INFINITY, -INFINITY};
  for (float b : bad32) {
    std::vector<float> g(37, 1.f);
    g.back() = b;
    Call c;
    c.set_ops({operand(g)});
    c.run(check_finite_cpu);
    EXPECT_EQ(c.scalars.pending_inf, 1) << b;
  }
  const uint16_t bad16[] = {0x7c00, 0xfc00, 0x7e00, 0xfe01};
  for (uint16_t b : bad16) {
    std::vector<half_t> g(37, half_t{0x3c00});
    g.back().bits = b;
    Call c;
    c.set_ops({operand(g)});
    c.run(check_finite_cpu);
    EXPECT_EQ(c.scalars.pending_inf, 1) << b;
  }
}

// Note [the check's flag]: a check only sets pending_inf; nothing it reads
// clears it, and AdvanceStep moves it into found_inf and clears it.
TEST(RangeOpsAmp, CheckFiniteOnlySetsThePendingFlagAndLooksAtEveryOperand) {
  std::vector<float> clean(16, 65504.f);
  std::vector<half_t> h(16, half_t{0x7bff});  // max finite half
  std::vector<float> table = {0.1f};
  Call c;
  c.set_ops({operand(clean), operand(h)});
  c.run(check_finite_cpu);
  EXPECT_EQ(c.scalars.pending_inf, 0);
  h[3].bits = 0x7c00;
  c.run(check_finite_cpu);
  EXPECT_EQ(c.scalars.pending_inf, 1);
  EXPECT_EQ(c.scalars.found_inf, 0);
  h[3].bits = 0x7bff;
  c.run(check_finite_cpu);
  EXPECT_EQ(c.scalars.pending_inf, 1);  // a clean check leaves an earlier find
  c.set_ops({operand(table)});
  c.run(advance_step_cpu);
  EXPECT_EQ(c.scalars.found_inf, 1);
  EXPECT_EQ(c.scalars.pending_inf, 0);
  c.set_ops({operand(clean), operand(h)});
  c.run(check_finite_cpu);
  c.set_ops({operand(table)});
  c.run(advance_step_cpu);
  EXPECT_EQ(c.scalars.found_inf, 0);
}

// Note [the check in the casts]: an f16 -> f32 Cast with check_finite sets
// the flag exactly when CheckFinite on its source would, and still casts.
TEST(RangeOpsAmp, CastWithTheCheckFlagsWhatCheckFiniteFlags) {
  for (uint16_t b : {uint16_t(0x3c00), uint16_t(0x7bff), uint16_t(0x7c00), uint16_t(0xfc00), uint16_t(0x7e00)}) {
    std::vector<half_t> h(37, half_t{0x3c00});
    h.back().bits = b;
    std::vector<float> f(37, 0.f);
    Call cast, check;
    cast.attrs.check_finite = true;
    cast.set_ops({operand(h), operand(f)});
    cast.run(cast_cpu);
    check.set_ops({operand(h)});
    check.run(check_finite_cpu);
    EXPECT_EQ(cast.scalars.pending_inf, check.scalars.pending_inf) << b;
    EXPECT_EQ(cast.scalars.pending_inf, range::f16_bits_finite(b) ? 0 : 1) << b;
    const float want = half_to_float(h.back());
    EXPECT_EQ(std::memcmp(&f.back(), &want, 4), 0) << b;
  }
  Call plain;  // without the attribute a cast never touches the flag
  std::vector<half_t> h(4, half_t{0x7c00});
  std::vector<float> f(4);
  plain.set_ops({operand(h), operand(f)});
  plain.run(cast_cpu);
  EXPECT_EQ(plain.scalars.pending_inf, 0);
  Call wrong;  // only an f16 -> f32 cast can check
  std::vector<half_t> h2(4);
  wrong.attrs.check_finite = true;
  wrong.set_ops({operand(f), operand(h2)});
  EXPECT_THROW(wrong.run(cast_cpu), Error);
}

TEST(RangeOpsAmp, UnscaleGradsDividesByTheLossScaleUnlessInf) {
  std::vector<float> g1 = {4.f, -8.f, 0.f}, g2 = {1.f};
  Call c;
  c.scalars.loss_scale = 4.f;
  c.set_ops({operand(g1), operand(g2)});
  c.run(unscale_grads_cpu);
  EXPECT_EQ(g1, (std::vector<float>{1.f, -2.f, 0.f}));
  EXPECT_EQ(g2, (std::vector<float>{0.25f}));
  c.scalars.found_inf = 1;
  c.run(unscale_grads_cpu);
  EXPECT_EQ(g1, (std::vector<float>{1.f, -2.f, 0.f}));
  EXPECT_EQ(g2, (std::vector<float>{0.25f}));
}

TEST(RangeOpsAmp, UpdateLossScaleBacksOffOnInfAndGrowsAfterTheInterval) {
  Call c;
  c.scalars.loss_scale = 1024.f;
  c.attrs.growth_interval = 3;
  c.run(update_loss_scale_cpu);
  c.run(update_loss_scale_cpu);
  EXPECT_EQ(c.scalars.loss_scale, 1024.f);
  EXPECT_EQ(c.scalars.good_steps, 2);
  c.scalars.found_inf = 1;
  c.run(update_loss_scale_cpu);
  EXPECT_EQ(c.scalars.loss_scale, 512.f);
  EXPECT_EQ(c.scalars.good_steps, 0);
  EXPECT_EQ(c.scalars.skipped_steps, 1);
  c.scalars.found_inf = 0;
  for (int i = 0; i < 2; ++i) c.run(update_loss_scale_cpu);
  EXPECT_EQ(c.scalars.loss_scale, 512.f);
  c.run(update_loss_scale_cpu);  // third good step in a row
  EXPECT_EQ(c.scalars.loss_scale, 1024.f);
  EXPECT_EQ(c.scalars.good_steps, 0);
  EXPECT_EQ(c.scalars.skipped_steps, 1);
}

TEST(RangeOpsAmp, UpdateLossScaleFixedOnlyCountsSkips) {
  Call c;
  c.scalars.loss_scale = 128.f;
  c.attrs.dynamic_scale = false;
  c.attrs.growth_interval = 1;
  c.run(update_loss_scale_cpu);
  c.scalars.found_inf = 1;
  c.run(update_loss_scale_cpu);
  c.run(update_loss_scale_cpu);
  EXPECT_EQ(c.scalars.loss_scale, 128.f);
  EXPECT_EQ(c.scalars.skipped_steps, 2);
}

TEST(RangeOpsAmp, AdvanceStepFollowsTheTableSkipsInfAndClampsAtTheEnd) {
  std::vector<float> table = {0.1f, 0.2f, 0.3f};
  Call c;
  c.scalars.schedule_len = 3;
  c.set_ops({operand(table)});
  c.run(advance_step_cpu);
  EXPECT_EQ(c.scalars.step, 1);
  EXPECT_EQ(c.scalars.lr, 0.1f);
  c.scalars.pending_inf = 1;  // this step's check found a NaN
  c.run(advance_step_cpu);
  EXPECT_EQ(c.scalars.found_inf, 1);
  EXPECT_EQ(c.scalars.step, 1);
  EXPECT_EQ(c.scalars.lr, 0.1f);
  c.run(advance_step_cpu);
  EXPECT_EQ(c.scalars.found_inf, 0);
  EXPECT_EQ(c.scalars.step, 2);
  EXPECT_EQ(c.scalars.lr, 0.2f);
  for (int i = 0; i < 3; ++i) c.run(advance_step_cpu);
  EXPECT_EQ(c.scalars.step, 5);
  EXPECT_EQ(c.scalars.lr, 0.3f);
}

// AdvanceStep with a metrics pair is AdvanceStep then Accumulate, bit for
// bit (Note [the step's scalars in one kernel]); a mismatched pair is an error.
TEST(RangeOpsAmp, AdvanceStepWithTheMetricsIsAdvanceStepThenAccumulate) {
  std::vector<float> table = {0.1f, 0.2f};
  std::vector<float> epoch = {1e8f, 0.1f, 3.f, 0.f}, step = {1.f, 0.2f, 0.3f, 0.f};
  std::vector<float> epoch2 = epoch;
  Call one, two;
  one.scalars.schedule_len = two.scalars.schedule_len = 2;
  for (int k = 0; k < 3; ++k) {
    one.set_ops({operand(table), operand(epoch), operand(step)});
    one.run(advance_step_cpu);
    two.set_ops({operand(table)});
    two.run(advance_step_cpu);
    two.set_ops({operand(epoch2), operand(step)});
    two.run(accumulate_cpu);
  }
  EXPECT_EQ(std::memcmp(epoch.data(), epoch2.data(), epoch.size() * 4), 0);
  EXPECT_EQ(std::memcmp(&one.scalars, &two.scalars, sizeof(TrainScalars)), 0);
  EXPECT_NE(epoch[1], 0.1f);
  std::vector<float> short_step(3);
  one.set_ops({operand(table), operand(epoch), operand(short_step)});
  EXPECT_THROW(one.run(advance_step_cpu), Error);
  one.set_ops({operand(table), operand(epoch)});
  EXPECT_THROW(one.run(advance_step_cpu), Error);
}

// AdvanceStep with update_scale is AdvanceStep then UpdateLossScale, and it
// records the 1/scale of the step it applies before the scale moves.
TEST(RangeOpsAmp, AdvanceStepWithTheScaleIsTheTwoOpsInTurn) {
  std::vector<float> table = {0.1f, 0.2f, 0.3f};
  Call one, two;
  for (Call* c : {&one, &two}) {
    c->scalars.schedule_len = 3;
    c->scalars.loss_scale = 3.f * 1024.f;  // 1/scale is inexact
    c->attrs.growth_interval = 2;
  }
  one.attrs.update_scale = true;
  for (int pending : {0, 0, 1, 0, 0}) {
    const float inv = range::unscale_factor(one.scalars.loss_scale);
    one.scalars.pending_inf = two.scalars.pending_inf = pending;
    one.set_ops({operand(table)});
    one.run(advance_step_cpu);
    two.set_ops({operand(table)});
    two.run(advance_step_cpu);
    two.ops.clear();
    two.run(update_loss_scale_cpu);
    EXPECT_EQ(std::memcmp(&one.scalars.grad_unscale, &inv, 4), 0);
    EXPECT_EQ(std::memcmp(&one.scalars, &two.scalars, sizeof(TrainScalars)), 0) << "pending " << pending;
  }
  EXPECT_EQ(one.scalars.skipped_steps, 1);
  EXPECT_EQ(one.scalars.step, 4);
  EXPECT_NE(one.scalars.loss_scale, 3.f * 1024.f);  // it moved, back and up
}

// ---------------------------------------------------------------- optimizers

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

void expect_near_rel(const std::vector<float>& got, const std::vector<double>& want, double tol,
                     const char* what) {
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
  expect_near_rel(p, rp, 2e-5, "param");
  expect_near_rel(m, rm, 2e-5, "m");
  expect_near_rel(v, rv, 2e-5, "v");
  expect_padding_zero(l, p, "param");
  expect_padding_zero(l, m, "m");
  expect_padding_zero(l, v, "v");
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
void lars_reference(const Layout& l, std::vector<double>& p, const std::vector<float>& g,
                    std::vector<double>& v, double lr, double mu, double wd, double coef) {
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
