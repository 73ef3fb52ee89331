#pragma once
// The history of the headline figures (reports/history.jsonl; reports/schema.md,
// "The history of headline figures"): JSON Lines, one measurement of one figure
// per line, appended by `ci/interleave.py --history` and drawn by
// `tr-bench report --history` (history_html.h).
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tr::bench {

// One measurement: tr's and its peer's value in the figure's unit (the figure's
// name says which: ms per step, s to a target) and their ratio. An interleaved
// run (ci/interleave.py) adds the ratio's 95 % confidence interval and its number
// of rounds; for the other measurements they are null.
struct HistoryLine {
  int line = 0;      // 1-based, in the file: errors and the page's tables name it
  std::string date;  // a day (2026-12-03) or a UTC time (2026-12-06T13:38:33Z)
  std::string commit, machine, figure;
  double tr = 0, peer = 0, ratio = 0;
  std::optional<double> ci_low, ci_high;  // both or neither
  std::optional<int> rounds;
  std::string source;  // the report behind the line
};

// Every line of the file, in order. A malformed line (not a JSON object, a field
// missing or of the wrong type, a value that is not positive, half an interval)
// is a UserError naming the file and the line; so is a file without lines.
std::vector<HistoryLine> read_history_file(const std::string& path);

// The same on text already read; `path` names the file in errors.
std::vector<HistoryLine> parse_history(std::string_view text, const std::string& path);

}  // namespace tr::bench
