#pragma once
// What the report renderers (HTML, Markdown) read from a case the same way: an
// optional counter, samples per second, and a number with thousands grouped.
#include <cmath>
#include <optional>
#include <string>

#include "harness/lib/bench/bench_types.h"
#include "harness/lib/report/fmt_double.h"
#include "harness/lib/report/statistics.h"

namespace tr::bench {

inline std::optional<double> counter(const BenchCase& c, const std::string& key) {
  const auto it = c.counters.find(key);
  if (it == c.counters.end()) return std::nullopt;
  return it->second;
}

// samples/s: the harness's counter, or batch / median step time.
inline double samples_per_second(const BenchCase& c) {
  if (const auto v = counter(c, "samples_per_second")) return *v;
  const double m = median(c.step_ms);
  return m > 0 ? static_cast<double>(c.batch) * 1000.0 / m : 0;
}

// 1234567.8 -> "1,234,568"
inline std::string grouped(double v) {
  std::string digits = fmt_double("%.0f", std::abs(v)), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return (v < 0 ? "-" : "") + out;
}

}  // namespace tr::bench
