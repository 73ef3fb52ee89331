#pragma once
// A time-to-accuracy report (tta_report.h) as one HTML section for
// `tr-bench report`: test accuracy against training time, one line per seed,
// the target as a dashed line (inline SVG), and a table of the runs.
#include <string>

#include "harness/lib/tta/tta_report.h"

namespace tr::bench {

std::string render_tta_section(const std::string& label, const TtaReport& r);

}  // namespace tr::bench
