// CPU AMP and step-bookkeeping RANGE ops (amp_ops.h): casts, the NaN check and
// its flag, unscaling, the loss scale and AdvanceStep, on hand-checkable data.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "framework/core/bf16.h"
#include "framework/core/error.h"
#include "framework/core/half.h"
#include "framework/ops/kernels/range_util.h"
#include "framework/ops/range/amp_ops.h"
#include "framework/ops/range/region_ops.h"
#include "tests/range_ops_test_util.h"

namespace tr {
namespace {

using namespace range_test;

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

// bf16 is the top half of an f32, rounded to nearest even on the 16 bits
// dropped: 1 + 2^-8 is a tie and stays 1 (even); 1 + 3 * 2^-8 is a tie and
// goes up to the even 1 + 2^-6 (0x3f82); anything above a tie goes up; the
// largest float rounds to inf; f32 subnormals survive (bf16 has f32's range);
// NaN becomes the canonical quiet NaN 0x7fff, as cvt.rn.bf16.f32 writes it.
// Back to f32 is exact, and the NaN check sees bf16's NaN and inf.
TEST(RangeOpsAmp, CastF32ToBF16RoundsToNearestEvenAndBack) {
  auto from_bits = [](uint32_t b) {
    float x;
    std::memcpy(&x, &b, 4);
    return x;
  };
  std::vector<float> f = {1.f,
                          -2.f,
                          from_bits(0x3f808000u),
                          from_bits(0x3f818000u),
                          from_bits(0x3f808001u),
                          std::numeric_limits<float>::max(),
                          from_bits(0x00018000u),
                          NAN,
                          -INFINITY,
                          1e30f};
  std::vector<bf16_t> h(f.size(), bf16_t{0x1234});
  Call c;
  c.set_ops({operand(f), operand(h)});
  c.run(cast_cpu);
  const uint16_t want[] = {0x3f80, 0xc000, 0x3f80, 0x3f82, 0x3f81, 0x7f80, 0x0002, 0x7fff, 0xff80, 0x714a};
  for (size_t i = 0; i < f.size(); ++i) EXPECT_EQ(h[i].bits, want[i]) << i;
  std::vector<float> back(f.size(), 0.f);
  c.scalars.pending_inf = 0;
  c.attrs.check_finite = true;
  c.set_ops({operand(h), operand(back)});
  c.run(cast_cpu);
  EXPECT_EQ(c.scalars.pending_inf, 1) << "inf and NaN among the bf16 values";
  EXPECT_EQ(back[0], 1.f);
  EXPECT_EQ(back[3], 1.f + 1.f / 64.f);
  EXPECT_EQ(back[6], from_bits(0x00020000u));
  EXPECT_TRUE(std::isnan(back[7]));
  EXPECT_EQ(back[9], from_bits(0x714a0000u));
  // Every bf16 that is not a NaN makes the round trip unchanged.
  for (uint32_t b = 0; b < 0x10000u; ++b) {
    if ((b & 0x7f80u) == 0x7f80u && (b & 0x7fu) != 0) continue;
    ASSERT_EQ(float_to_bf16(bf16_to_float(bf16_t{uint16_t(b)})).bits, b);
  }
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

}  // namespace
}  // namespace tr
