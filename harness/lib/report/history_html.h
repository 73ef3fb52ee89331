#pragma once
// The history of the headline figures (history_file.h) as one HTML section for
// `tr-bench report --history`: per figure, a chart of tr ÷ peer at every line
// in file order, an interleaved run's 95 % interval as a vertical bar and parity
// (1) dashed (inline SVG), then a table of the figure's lines.
#include <string>
#include <vector>

#include "harness/lib/report/history_file.h"

namespace tr::bench {

// `label` names the file in the heading.
std::string render_history_section(const std::string& label, const std::vector<HistoryLine>& lines);

}  // namespace tr::bench
