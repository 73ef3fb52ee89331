#include "harness/lib/report/statistics.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "framework/core/error.h"

namespace tr::bench {

double mean(const std::vector<double>& v) {
  TR_CHECK(!v.empty(), "mean of no values");
  return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

double median(const std::vector<double>& v) {
  TR_CHECK(!v.empty(), "median of no values");
  std::vector<double> s = v;
  std::sort(s.begin(), s.end());
  const size_t h = s.size() / 2;
  return s.size() % 2 == 1 ? s[h] : (s[h - 1] + s[h]) / 2;
}

double stddev(const std::vector<double>& v) {
  TR_CHECK(!v.empty(), "stddev of no values");
  if (v.size() < 2) return 0;
  const double m = mean(v);
  double ss = 0;
  for (const double x : v) ss += (x - m) * (x - m);
  return std::sqrt(ss / static_cast<double>(v.size() - 1));
}

double cv(const std::vector<double>& v) {
  // Google Benchmark divides unconditionally; a NaN cannot be written as JSON,
  // and a zero mean (a counter that is always 0) has no spread worth a ratio.
  if (v.size() < 2) return 0;
  const double m = mean(v);
  return m == 0 ? 0 : stddev(v) / m;
}

double min_value(const std::vector<double>& v) {
  TR_CHECK(!v.empty(), "min of no values");
  return *std::min_element(v.begin(), v.end());
}

double max_value(const std::vector<double>& v) {
  TR_CHECK(!v.empty(), "max of no values");
  return *std::max_element(v.begin(), v.end());
}

Summary summarize(const std::vector<double>& v) {
  Summary s;
  s.n = static_cast<int>(v.size());
  s.mean = mean(v);
  s.median = median(v);
  s.stddev = stddev(v);
  s.cv = cv(v);
  s.min = min_value(v);
  s.max = max_value(v);
  return s;
}

double normal_sf(double z) { return 0.5 * std::erfc(z / std::sqrt(2.0)); }

namespace {

// Number of arrangements of n1 "a" and n2 "b" values with U = k, k = 0..n1*n2:
// the coefficients of the Gaussian binomial [n1+n2 choose n1](q) =
// prod_{i=1..n1} (1 - q^(n2+i)) / (1 - q^i). Doubles: the counts stay exact up
// to 2^53 and only their ratios matter.
std::vector<double> u_counts(int n1, int n2) {
  const int deg = n1 * n2;
  // The product is multiplied before it is divided: room for n1 extra terms.
  std::vector<double> c(static_cast<size_t>(deg + n1) + 1, 0.0);
  c[0] = 1;
  int cur = 0;  // degree of the product so far
  for (int i = 1; i <= n1; ++i) {
    // multiply by (1 - q^(n2+i)): descending so c[k - step] is still the old value
    const int up = n2 + i;
    cur += up;
    for (int k = cur; k >= up; --k) c[k] -= c[k - up];
    // divide by (1 - q^i): the quotient's coefficients are running sums with stride i
    for (int k = i; k <= cur; ++k) c[k] += c[k - i];
    cur -= i;
  }
  c.resize(static_cast<size_t>(deg) + 1);
  return c;
}

}  // namespace

double mann_whitney_exact_sf(double u, int n1, int n2) {
  TR_CHECK(n1 >= 1 && n2 >= 1, "sample sizes ", n1, ", ", n2);
  const std::vector<double> c = u_counts(n1, n2);
  const double total = std::accumulate(c.begin(), c.end(), 0.0);
  const int from = static_cast<int>(std::ceil(u - 1e-9));
  double tail = 0;
  for (int k = std::max(from, 0); k < static_cast<int>(c.size()); ++k) tail += c[k];
  return tail / total;
}

double min_two_sided_p(int n1, int n2) {
  if (n1 < 1 || n2 < 1) return 1;
  // Complete separation is one arrangement of C(n1 + n2, n1): build the
  // binomial by its product (exact while it fits 2^53, +inf past a double's
  // range, where p is 0 for every purpose) instead of the whole distribution,
  // which grows with n1 * n2.
  const int k = std::min(n1, n2), n = n1 + n2;
  double c = 1;
  for (int i = 1; i <= k; ++i) c = c * (n - k + i) / i;
  return std::min(1.0, 2 / c);
}

int repetitions_for_alpha(double alpha) {
  TR_CHECK(alpha > 0 && alpha <= 1, "alpha ", alpha);
  int k = 1;
  while (min_two_sided_p(k, k) >= alpha) ++k;  // 2 / C(2k, k) falls about 4x per step
  return k;
}

MannWhitney mann_whitney_u(const std::vector<double>& a, const std::vector<double>& b) {
  MannWhitney r;
  r.n1 = static_cast<int>(a.size());
  r.n2 = static_cast<int>(b.size());
  if (r.n1 < kMinRepetitionsForUTest || r.n2 < kMinRepetitionsForUTest) return r;
  r.decidable = true;

  // Mid-ranks of the pooled sample (ties share the mean of their ranks).
  const int n = r.n1 + r.n2;
  std::vector<std::pair<double, int>> pooled;  // (value, index; < n1 means from a)
  pooled.reserve(n);
  for (int i = 0; i < r.n1; ++i) pooled.emplace_back(a[i], i);
  for (int j = 0; j < r.n2; ++j) pooled.emplace_back(b[j], r.n1 + j);
  std::sort(pooled.begin(), pooled.end());
  double rank_sum_a = 0, tie_term = 0;
  bool ties = false;
  for (int i = 0; i < n;) {
    int j = i;
    while (j < n && pooled[j].first == pooled[i].first) ++j;
    const double t = j - i;
    const double mid_rank = (i + 1 + j) / 2.0;  // ranks i+1 .. j
    for (int k = i; k < j; ++k)
      if (pooled[k].second < r.n1) rank_sum_a += mid_rank;
    if (t > 1) {
      ties = true;
      tie_term += t * t * t - t;
    }
    i = j;
  }
  const double n1 = r.n1, n2 = r.n2;
  r.u = rank_sum_a - n1 * (n1 + 1) / 2;
  const double u_big = std::max(r.u, n1 * n2 - r.u);  // two-sided: the larger tail

  double p;
  if (!ties && std::min(r.n1, r.n2) <= 8) {
    r.exact = true;
    p = mann_whitney_exact_sf(u_big, r.n1, r.n2);
  } else {
    const double mu = n1 * n2 / 2;
    const double s = std::sqrt(n1 * n2 / 12 * ((n + 1) - tie_term / (static_cast<double>(n) * (n - 1))));
    const double num = u_big - mu - 0.5;  // continuity correction
    // s == 0 only when every value is the same: no evidence of a difference.
    p = s > 0 ? normal_sf(num / s) : 1;
  }
  r.p_value = std::clamp(2 * p, 0.0, 1.0);
  return r;
}

}  // namespace tr::bench
