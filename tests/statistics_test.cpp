// Summary statistics and the Mann-Whitney U test on values worked out by hand
// (counting arrangements, or the normal-approximation formula written out
// here), cross-checked against scipy.stats.mannwhitneyu 1.10.1 (Debian 12's
// python3-scipy), which Google Benchmark's compare.py calls.
#include <gtest/gtest.h>

#include <cmath>

#include "framework/core/error.h"
#include "harness/lib/report/statistics.h"

namespace tr::bench {
namespace {

TEST(Statistics, Summary) {
  const std::vector<double> v = {2, 4, 4, 4, 5, 5, 7, 9};
  EXPECT_DOUBLE_EQ(mean(v), 5);
  EXPECT_DOUBLE_EQ(median(v), 4.5);                  // even count: mean of the middle two
  EXPECT_DOUBLE_EQ(stddev(v), std::sqrt(32.0 / 7));  // sample: sum of squares 32 over n-1
  EXPECT_DOUBLE_EQ(cv(v), std::sqrt(32.0 / 7) / 5);
  EXPECT_DOUBLE_EQ(min_value(v), 2);
  EXPECT_DOUBLE_EQ(max_value(v), 9);
  EXPECT_DOUBLE_EQ(median({3, 1, 2}), 2);  // unsorted, odd count
  const Summary s = summarize({1.5});
  EXPECT_EQ(s.n, 1);
  EXPECT_EQ(s.median, 1.5);
  EXPECT_EQ(s.stddev, 0);  // Google Benchmark: no spread from one value
  EXPECT_EQ(s.cv, 0);
  EXPECT_EQ(cv({0, 0, 0}), 0);  // no NaN for counters that are always zero
  EXPECT_THROW(median({}), Error);
}

TEST(Statistics, ExactNullDistribution) {
  // 3 vs 3: the 20 arrangements have U = 0..9 with counts 1 1 2 3 3 3 3 2 1 1.
  EXPECT_DOUBLE_EQ(mann_whitney_exact_sf(9, 3, 3), 1.0 / 20);
  EXPECT_DOUBLE_EQ(mann_whitney_exact_sf(6, 3, 3), 7.0 / 20);
  EXPECT_DOUBLE_EQ(mann_whitney_exact_sf(0, 3, 3), 1.0);
  // The floor of the two-sided p-value, 2 / C(n1 + n2, n1).
  EXPECT_DOUBLE_EQ(min_two_sided_p(3, 3), 2.0 / 20);
  EXPECT_DOUBLE_EQ(min_two_sided_p(3, 4), 2.0 / 35);
  EXPECT_DOUBLE_EQ(min_two_sided_p(4, 4), 2.0 / 70);
  EXPECT_DOUBLE_EQ(min_two_sided_p(5, 5), 2.0 / 252);
  EXPECT_DOUBLE_EQ(min_two_sided_p(1, 1), 1.0);  // clipped
}

TEST(Statistics, MannWhitneyExactCases) {
  // Complete separation, 3 vs 3: U = 0, p = 2 * 1/20.
  MannWhitney t = mann_whitney_u({1, 2, 3}, {4, 5, 6});
  ASSERT_TRUE(t.decidable);
  EXPECT_TRUE(t.exact);
  EXPECT_EQ(t.u, 0);
  EXPECT_DOUBLE_EQ(t.p_value, 0.1);  // scipy: 0.1
  // Interleaved: U1 = 3, larger tail U = 6, p = 2 * 7/20.
  t = mann_whitney_u({1, 3, 5}, {2, 4, 6});
  EXPECT_EQ(t.u, 3);
  EXPECT_DOUBLE_EQ(t.p_value, 0.7);  // scipy: 0.7
  // 5 vs 5 separated: 2 / 252.
  t = mann_whitney_u({10.0, 10.1, 9.9, 10.05, 9.95}, {11.0, 11.11, 10.89, 11.055, 10.945});
  EXPECT_TRUE(t.exact);
  // Exact counts in double and one division: 2/252 to the last bit or two (1.7e-18 each); 1e-15 is about 600 of them.
  EXPECT_NEAR(t.p_value, 0.007936507936507936, 1e-15);  // scipy
  // One side of at most 8 values and no ties is enough for the exact test.
  t = mann_whitney_u({1.0, 2.5, 3.2}, {0.5, 1.5, 2.0, 2.2, 2.7, 3.0, 3.5, 4.0, 4.5, 5.0, 5.5, 6.0});
  EXPECT_TRUE(t.exact);
  EXPECT_EQ(t.u, 11);
  // scipy's 17 digits against exact counts over C(15, 3) = 455: equal to about 1e-16; 1e-12 allows another
  // order of roundings, and U off by one moves p by at least 2/455.
  EXPECT_NEAR(t.p_value, 0.36483516483516487, 1e-12);  // scipy
}

// The normal approximation written out: z = (U - n1 n2 / 2 - 0.5) / s with
// s^2 = n1 n2 / 12 * ((n + 1) - sum(t^3 - t) / (n (n - 1))), p = 2 P(Z > z).
double normal_p(double u_big, double n1, double n2, double tie_term) {
  const double n = n1 + n2;
  const double s = std::sqrt(n1 * n2 / 12 * ((n + 1) - tie_term / (n * (n - 1))));
  return std::erfc((u_big - n1 * n2 / 2 - 0.5) / s / std::sqrt(2.0));
}

TEST(Statistics, MannWhitneyNormalApproximationWithTies) {
  // a = 1 2 2 3, b = 2 3 3 4. Mid-ranks: 1 -> 1; the three 2s -> 3; the three
  // 3s -> 6; 4 -> 8. R_a = 1 + 3 + 3 + 6 = 13, U_a = 13 - 10 = 3, larger tail
  // 16 - 3 = 13; ties: two groups of three, sum(t^3 - t) = 48.
  const MannWhitney t = mann_whitney_u({1, 2, 2, 3}, {2, 3, 3, 4});
  EXPECT_FALSE(t.exact);  // ties
  EXPECT_EQ(t.u, 3);
  // The same formula in double: a few roundings of 1.1e-16 of p <= 1 (1e-14 leaves 30x). scipy evaluates it
  // with its own normal tail: about 1e-16 apart, 1e-12 allows any libm's erfc. A missing continuity
  // correction or tie term moves p by percents.
  EXPECT_NEAR(t.p_value, normal_p(13, 4, 4, 48), 1e-14);
  EXPECT_NEAR(t.p_value, 0.1720337089218229, 1e-12);  // scipy
  // 1..10 vs 6..15: five tied pairs (t = 2 each, sum 30), U_a = 12.5.
  std::vector<double> a, b;
  for (int i = 1; i <= 10; ++i) a.push_back(i), b.push_back(i + 5);
  const MannWhitney u = mann_whitney_u(a, b);
  EXPECT_EQ(u.u, 12.5);
  EXPECT_NEAR(u.p_value, normal_p(100 - 12.5, 10, 10, 30), 1e-14);  // 1e-14 and 1e-12: as above
  EXPECT_NEAR(u.p_value, 0.005075392315273923, 1e-12);              // scipy
}

TEST(Statistics, MannWhitneyNormalApproximationLargeSamples) {
  // Both sides above 8 values: normal approximation even without ties.
  const MannWhitney t =
      mann_whitney_u({1.1, 2.3, 3.2, 4.8, 5.5, 6.1, 7.7, 8.4, 9.9}, {2.0, 3.9, 4.1, 5.0, 6.6, 7.2, 8.8, 9.5, 10.3});
  EXPECT_FALSE(t.exact);
  EXPECT_EQ(t.u, 33);
  EXPECT_NEAR(t.p_value, normal_p(48, 9, 9, 0), 1e-14);  // 1e-14 and 1e-12: as in the test above
  EXPECT_NEAR(t.p_value, 0.5364994693194564, 1e-12);     // scipy
  std::vector<double> a, b;
  for (int i = 0; i < 20; ++i) a.push_back(i), b.push_back(i + 5.5);
  EXPECT_NEAR(mann_whitney_u(a, b).p_value, 0.010581211443165648, 1e-12);  // scipy
}

TEST(Statistics, MannWhitneyEdgeCases) {
  // Identical samples: no evidence of a difference.
  EXPECT_EQ(mann_whitney_u({1, 1, 1}, {1, 1, 1}).p_value, 1.0);
  EXPECT_EQ(mann_whitney_u({1, 2, 3}, {1, 2, 3}).p_value, 1.0);
  // Symmetric in its arguments.
  const std::vector<double> a = {8, 12, 9, 11, 10}, b = {9, 13, 10, 12.5, 11};
  EXPECT_DOUBLE_EQ(mann_whitney_u(a, b).p_value, mann_whitney_u(b, a).p_value);
  // Normal approximation with ties against scipy: about 1e-16 apart; 1e-12 allows any libm's erfc.
  EXPECT_NEAR(mann_whitney_u(a, b).p_value, 0.34278171114791145, 1e-12);  // scipy
  // Too few repetitions: not decided at all.
  const MannWhitney t = mann_whitney_u({1, 2}, {5, 6, 7, 8});
  EXPECT_FALSE(t.decidable);
  EXPECT_EQ(t.n1, 2);
  EXPECT_FALSE(mann_whitney_u({1, 2, 3}, {}).decidable);
}

TEST(Statistics, NormalTail) {
  EXPECT_DOUBLE_EQ(normal_sf(0), 0.5);
  // The quantile to 16 digits moves the tail by pdf * 1e-16 (6e-18) and erfc errs by about 1e-16 of 0.025:
  // 1e-12 allows any libm; 1 - normal_sf(1) (0.84) rounds by 1.1e-16 and erfc by a few ulps: 1e-15 leaves 3x.
  EXPECT_NEAR(normal_sf(1.959963984540054), 0.025, 1e-12);
  EXPECT_NEAR(normal_sf(-1), 1 - normal_sf(1), 1e-15);
}

}  // namespace
}  // namespace tr::bench
