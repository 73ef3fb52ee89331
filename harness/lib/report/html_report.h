#pragma once
// Renders one or more BenchReports as a self-contained HTML page: a context
// header, inline SVG bar charts per model (median step time with min-max
// whiskers and samples/s by mode x variant x batch x ranks; graph and kernel
// launches per step by mode) and a table of every case. No JavaScript, no
// external resources: the file opens offline and prints.
#include <string>
#include <vector>

#include "harness/lib/bench/bench_types.h"

namespace tr::bench {

struct LabeledReport {
  std::string label;  // shown in headings, usually the file name
  BenchReport report;
};

// Escapes & < > " ' for HTML text and attribute values (SVG inside HTML too).
std::string html_escape(const std::string& s);

// With two or more reports the page ends with a table of median step times of
// every case across them, relative to the first.
// `sections` (already HTML, e.g. tta_html.h's) follow the reports' results;
// a page may hold only sections.
std::string render_html(const std::vector<LabeledReport>& reports, const std::vector<std::string>& sections = {});

}  // namespace tr::bench
