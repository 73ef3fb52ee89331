#include "harness/lib/bench/process_counters.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>

#include "framework/core/error.h"
#include "harness/lib/report/statistics.h"

namespace tr::bench {

void add_process_extremes(BenchCase& c, World& w, std::chrono::milliseconds timeout) {
  std::map<std::string, double> mine = c.counters;
  mine["step_ms"] = median(c.step_ms);
  std::string text;  // one "name value" line per counter, exact doubles
  char buf[64];
  for (const auto& [k, v] : mine) {
    std::snprintf(buf, sizeof buf, " %.17g\n", v);
    text += k + buf;
  }
  const auto all = w.allgather_strings(text, cat("the counters of ", c.model, " ", c.mode), timeout);
  std::map<std::string, std::pair<double, double>> range;  // name -> (min, max)
  for (const std::string& t : all) {
    std::istringstream in(t);
    std::string k;
    double v = 0;
    while (in >> k >> v) {
      auto [it, fresh] = range.try_emplace(k, v, v);
      if (!fresh) it->second = {std::min(it->second.first, v), std::max(it->second.second, v)};
    }
  }
  for (const auto& [k, mm] : range) {
    if (!mine.count(k)) continue;  // a counter only another process has
    c.counters[k + "_process_min"] = mm.first;
    c.counters[k + "_process_max"] = mm.second;
  }
}

}  // namespace tr::bench
