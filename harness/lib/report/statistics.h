#pragma once
// Summary statistics over repetitions, and the Mann-Whitney U test that the
// gate (gate.h) uses to decide whether two sets of repetition timings differ.
//
// The definitions follow Google Benchmark's (src/statistics.cc) so that our
// `_mean` / `_median` / `_stddev` / `_cv` aggregates mean what its tools expect:
// sample standard deviation (n - 1), cv = stddev / mean, both 0 with fewer than
// two values. The U test follows scipy.stats.mannwhitneyu (method "auto",
// two-sided, continuity correction), which is what Google Benchmark's
// compare.py calls, so our p-values equal the ones compare.py prints.
#include <string>
#include <vector>

namespace tr::bench {

// All of these require a non-empty input (an empty one is a bug: TR_CHECK).
double mean(const std::vector<double>& v);
double median(const std::vector<double>& v);  // middle value; mean of the two middle ones when n is even
double stddev(const std::vector<double>& v);  // sample (n - 1); 0 when n < 2
double cv(const std::vector<double>& v);      // stddev / mean; 0 when n < 2 or mean == 0
double min_value(const std::vector<double>& v);
double max_value(const std::vector<double>& v);

struct Summary {
  int n = 0;
  double mean = 0, median = 0, stddev = 0, cv = 0, min = 0, max = 0;
};
Summary summarize(const std::vector<double>& v);

// Fewer repetitions than this on either side: the U test is not run at all
// (`decidable` false). Note that even with 3 the test is weak: the smallest
// two-sided p-value 3 vs 3 samples can reach is 0.1, 3 vs 4 is 0.057, 4 vs 4
// is 0.029, 5 vs 5 is 0.0079 (min_two_sided_p). Use 5 or more repetitions for
// alpha = 0.05; Google Benchmark recommends 9.
inline constexpr int kMinRepetitionsForUTest = 3;

struct MannWhitney {
  bool decidable = false;  // false: fewer than kMinRepetitionsForUTest on a side; u and p are unset
  double u = 0;            // U of the first sample: #(a_i > b_j) + 0.5 #(a_i == b_j)
  double p_value = 1;      // two-sided
  bool exact = false;      // exact null distribution (no ties, min(n1, n2) <= 8) vs normal approximation
  int n1 = 0, n2 = 0;
};

// Two-sided Mann-Whitney U test of "a and b come from the same distribution".
// Exact distribution when there are no ties and one sample has at most 8
// values; otherwise the normal approximation with tie correction and
// continuity correction (scipy's "auto"). Identical samples give p = 1.
MannWhitney mann_whitney_u(const std::vector<double>& a, const std::vector<double>& b);

// The smallest two-sided p-value any samples of these sizes can produce
// (complete separation, exact distribution): 2 / C(n1 + n2, n1), at most 1.
double min_two_sided_p(int n1, int n2);

// The fewest repetitions k on each side for which min_two_sided_p(k, k) <
// alpha (0 < alpha <= 1): 4 for alpha = 0.05, 5 for 0.01.
int repetitions_for_alpha(double alpha);

// P(U >= u) under the null hypothesis for sample sizes n1, n2 (no ties).
double mann_whitney_exact_sf(double u, int n1, int n2);

// Standard normal upper tail, P(Z > z).
double normal_sf(double z);

}  // namespace tr::bench
