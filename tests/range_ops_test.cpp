// CPU region RANGE ops (region_ops.h): exact semantics on small
// hand-checkable data. The AMP ops and the optimizers: range_ops_amp_test.cpp,
// range_ops_optim_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "framework/core/error.h"
#include "framework/ops/range/region_ops.h"
#include "tests/range_ops_test_util.h"

namespace tr {
namespace {

using namespace range_test;

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

}  // namespace
}  // namespace tr
