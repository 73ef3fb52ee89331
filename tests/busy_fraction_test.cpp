// Note [busy fraction]: the GPU busy fraction is at most 1 by construction,
// and a raw ratio above 1 (clock granularity) is reported beside it.
#include <gtest/gtest.h>

#include "harness/lib/busy_fraction.h"

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
      EXPECT_GE(v, 0.0);
      EXPECT_LE(v, 1.0);
    }
}

}  // namespace
}  // namespace tr::bench
