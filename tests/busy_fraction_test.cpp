// Note [busy fraction]: the GPU busy fraction is at most 1 by construction,
// and a raw ratio above 1 (clock granularity) is reported beside it.
#include <gtest/gtest.h>

#include "harness/lib/bench/busy_fraction.h"

namespace tr::bench {
namespace {

TEST(BusyFraction, IsAtMostOneAndKeepsARawRatioAboveOne) {
  EXPECT_DOUBLE_EQ(busy_fraction(45, 50).value, 0.9);
  EXPECT_FALSE(busy_fraction(45, 50).raw.has_value());
  EXPECT_DOUBLE_EQ(busy_fraction(50, 50).value, 1.0);
  EXPECT_FALSE(busy_fraction(50, 50).raw.has_value());
  const BusyFraction over = busy_fraction(50.25, 50);
  EXPECT_DOUBLE_EQ(over.value, 1.0);
  ASSERT_TRUE(over.raw.has_value());
  EXPECT_DOUBLE_EQ(*over.raw, 1.005);
  // No window or no kernels: 0, never a division by zero or NaN.
  EXPECT_EQ(busy_fraction(10, 0).value, 0.0);
  EXPECT_EQ(busy_fraction(0, 10).value, 0.0);
  for (double k = 0; k <= 200; k += 7.5)
    for (double w = 1; w <= 150; w += 11) {
      const double v = busy_fraction(k, w).value;
      EXPECT_GE(v, 0.0);  // [0, 1]: the fraction's range by construction (Note [busy fraction])
      EXPECT_LE(v, 1.0);
    }
}

TEST(BusyFraction, KernelCoverageCountsOverlapsOnceWithinTheSpan) {
  // ns: [100,200) and [150,300) overlap; [400,450) stands alone; [410,420) lies inside it.
  const KernelCoverage c = kernel_coverage({{400, 450}, {100, 200}, {150, 300}, {410, 420}});
  EXPECT_DOUBLE_EQ(c.sum_ms, 310e-6);    // 100 + 150 + 50 + 10
  EXPECT_DOUBLE_EQ(c.union_ms, 250e-6);  // [100,300) + [400,450)
  EXPECT_DOUBLE_EQ(c.span_ms, 350e-6);   // 100 .. 450
  EXPECT_DOUBLE_EQ(busy_fraction(c.union_ms, c.span_ms).value, 250.0 / 350.0);
  // A kernel ending before an earlier-starting one ends: the span still ends at the latest end.
  const KernelCoverage nested = kernel_coverage({{0, 1000}, {10, 20}});
  EXPECT_DOUBLE_EQ(nested.union_ms, 1000e-6);
  EXPECT_DOUBLE_EQ(nested.span_ms, 1000e-6);
  EXPECT_DOUBLE_EQ(busy_fraction(nested.union_ms, nested.span_ms).value, 1.0);
  // Back-to-back kernels leave no idle time; nothing recorded is all zeros.
  const KernelCoverage touching = kernel_coverage({{0, 5}, {5, 9}});
  EXPECT_DOUBLE_EQ(touching.union_ms, touching.span_ms);
  const KernelCoverage none = kernel_coverage({});
  EXPECT_EQ(none.sum_ms, 0.0);
  EXPECT_EQ(none.union_ms, 0.0);
  EXPECT_EQ(none.span_ms, 0.0);
  EXPECT_EQ(busy_fraction(none.union_ms, none.span_ms).value, 0.0);
}

}  // namespace
}  // namespace tr::bench
