#include "harness/lib/report/markdown_report.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <sstream>
#include <vector>

#include "framework/core/error.h"
#include "harness/lib/report/case_values.h"
#include "harness/lib/report/fmt_double.h"
#include "harness/lib/report/statistics.h"

namespace tr::bench {

namespace {

// Step times: four decimals below 10 ms, two above (as the results tables).
std::string ms_cell(double v) { return fmt_double(v < 10 ? "%.4f" : "%.2f", v); }

// An optional column: its header, and its cell from one case's counters.
struct Column {
  const char* header;
  const char* key;
  std::string (*cell)(double);
};

const std::vector<Column>& optional_columns() {
  static const std::vector<Column> columns = {
      {"tokens/s", "tokens_per_second", [](double v) { return grouped(v); }},
      {"MFU", "mfu", [](double v) { return fmt_double("%.3f", v); }},
      {"GPU resident", "gpu_resident_fraction", [](double v) { return fmt_double("%.3f", v); }},
      {"GPU busy", "gpu_busy_fraction", [](double v) { return fmt_double("%.3f", v); }},
      {"peak device GiB", "device_memory_peak_bytes", [](double v) { return fmt_double("%.2f", v / 1073741824.0); }},
      {"J/step", "energy_j_per_step", [](double v) { return fmt_double("%.4g", v); }},
  };
  return columns;
}

// Eager's median per (model, variant, ranks, batch): each case's speed-up over it.
std::string eager_key(const BenchCase& c) { return cat(c.model, "/", c.variant, "/", c.ranks, "/", c.batch); }

// "0123456789abcdef...-dirty" -> "0123456789ab-dirty": twelve hex digits, the suffix kept.
std::string short_commit(const std::string& c) {
  const size_t dash = c.find('-');
  const std::string hex = c.substr(0, std::min<size_t>(12, dash));
  return dash == std::string::npos ? hex : hex + c.substr(dash);
}

std::string source_line(const std::string& path, const BenchContext& x) {
  std::string device = x.device_name;
  // NVML's driver version (Note [machine state]); the context's driver_version is CUDA's API version.
  const auto driver = x.gpu_state.find("driver");
  if (driver != x.gpu_state.end()) device += cat(", driver ", driver->second);
  return cat("Source: `", path, "`; ", device, "; ", x.date.substr(0, 10), "; binaries of commit `",
             short_commit(x.git_commit), "`; `", x.command_line, "`.");
}

}  // namespace

std::string render_markdown(const std::string& path, const BenchReport& r) {
  TR_USER_CHECK(!r.cases.empty(), path, ": the report has no cases");
  std::vector<const Column*> columns;  // those every case has
  for (const Column& col : optional_columns()) {
    bool all = true;
    for (const BenchCase& c : r.cases) all = all && c.counters.count(col.key);
    if (all) columns.push_back(&col);
  }
  std::map<std::string, double> eager;
  for (const BenchCase& c : r.cases)
    if (c.mode == "eager") eager[eager_key(c)] = median(c.step_ms);
  const bool cuda = r.context.device_kind == "cuda";
  std::ostringstream o;
  o << "| model | mode | variant | " << (cuda ? "GPUs" : "ranks")
    << " | batch | median ms | cv | samples/s | × eager |";
  for (const Column* col : columns) o << " " << col->header << " |";
  o << "\n| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |";
  for (size_t i = 0; i < columns.size(); ++i) o << " ---: |";
  o << "\n";
  for (const BenchCase& c : r.cases) {
    const double m = median(c.step_ms);
    const auto e = eager.find(eager_key(c));
    o << "| " << c.model << " | " << c.mode << " | " << c.variant << " | " << c.ranks << " | " << c.batch << " | "
      << ms_cell(m) << " | " << fmt_double("%.2f %%", 100 * cv(c.step_ms)) << " | " << grouped(samples_per_second(c))
      << " | " << (e == eager.end() || m <= 0 ? "-" : fmt_double("%.2f", e->second / m)) << " |";
    for (const Column* col : columns) o << " " << col->cell(c.counters.at(col->key)) << " |";
    o << "\n";
  }
  o << "\n" << source_line(path, r.context) << "\n";
  return o.str();
}

}  // namespace tr::bench
