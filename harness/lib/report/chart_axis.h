#pragma once
// Gridlines of the reports' line charts (tta_html.cpp, history_html.cpp): a
// round step, so the labels read 0.1, 0.2, ... rather than 0.137, 0.274, ...
#include <algorithm>
#include <cmath>

namespace tr::bench {

// A round step (1, 2 or 5 times a power of ten) that cuts `span` into about six.
inline double grid_step(double span) {
  const double raw = std::max(span, 1e-9) / 6, p = std::pow(10, std::floor(std::log10(raw)));
  return raw <= p ? p : raw <= 2 * p ? 2 * p : raw <= 5 * p ? 5 * p : 10 * p;
}

}  // namespace tr::bench
