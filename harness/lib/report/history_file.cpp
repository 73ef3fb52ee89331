#include "harness/lib/report/history_file.h"

#include <cmath>
#include <cstdint>
#include <limits>

#include <nlohmann/json.hpp>

#include "framework/core/error.h"
#include "harness/lib/report/json_file.h"

namespace tr::bench {
namespace {

using json = nlohmann::json;

// The keys of a line, every one required (null where the schema allows it), so a
// line cut short or a misspelt key is refused rather than read as a missing interval.
const char* const kKeys[] = {"date",  "commit", "machine", "figure", "tr",    "peer",
                             "ratio", "ci_low", "ci_high", "rounds", "source"};

class LineReader {
 public:
  LineReader(const json& j, std::string where) : j_(j), where_(std::move(where)) {}

  std::string text(const char* key, bool may_be_empty) const {
    const json& v = j_.at(key);
    TR_USER_CHECK(v.is_string(), where_, ": '", key, "' is not a string");
    TR_USER_CHECK(may_be_empty || !v.get<std::string>().empty(), where_, ": '", key, "' is empty");
    return v.get<std::string>();
  }
  // A time or a ratio: a finite number above zero.
  double positive(const char* key) const {
    const json& v = j_.at(key);
    TR_USER_CHECK(v.is_number(), where_, ": '", key, "' is not a number");
    const double x = v.get<double>();
    TR_USER_CHECK(std::isfinite(x) && x > 0, where_, ": '", key, "' is ", v.dump(), ", not above zero");
    return x;
  }
  std::optional<double> positive_or_null(const char* key) const {
    if (j_.at(key).is_null()) return std::nullopt;
    return positive(key);
  }
  std::optional<int> count_or_null(const char* key) const {
    const json& v = j_.at(key);
    if (v.is_null()) return std::nullopt;
    TR_USER_CHECK(v.is_number_integer(), where_, ": '", key, "' is not a whole number");
    const int64_t n = v.get<int64_t>();
    TR_USER_CHECK(n >= 1 && n <= std::numeric_limits<int>::max(), where_, ": '", key, "' is ", v.dump(),
                  ", not a count of rounds");
    return static_cast<int>(n);
  }

 private:
  const json& j_;
  std::string where_;
};

HistoryLine parse_line(std::string_view text, int number, const std::string& path) {
  const std::string where = cat("history '", path, "' line ", number);
  TR_USER_CHECK(text.find_first_not_of(" \t") != std::string_view::npos, where, ": empty line");
  const json j = parse_json_text(text, where);
  TR_USER_CHECK(j.is_object(), where, ": not a JSON object");
  for (const char* key : kKeys) TR_USER_CHECK(j.contains(key), where, ": no '", key, "'");
  const LineReader r(j, where);
  HistoryLine h;
  h.line = number;
  h.date = r.text("date", false);
  h.commit = r.text("commit", true);  // interleave.py writes "" when a report has no commit
  h.machine = r.text("machine", true);
  h.figure = r.text("figure", false);
  h.tr = r.positive("tr");
  h.peer = r.positive("peer");
  h.ratio = r.positive("ratio");
  h.ci_low = r.positive_or_null("ci_low");
  h.ci_high = r.positive_or_null("ci_high");
  h.rounds = r.count_or_null("rounds");
  h.source = r.text("source", true);
  TR_USER_CHECK(h.ci_low.has_value() == h.ci_high.has_value(), where,
                ": 'ci_low' and 'ci_high' are both null or "
                "both numbers");
  TR_USER_CHECK(!h.ci_low || *h.ci_low <= *h.ci_high, where, ": 'ci_low' is above 'ci_high'");
  return h;
}

}  // namespace

std::vector<HistoryLine> parse_history(std::string_view text, const std::string& path) {
  std::vector<HistoryLine> lines;
  int number = 0;
  // A last line ends with '\n' (JSON Lines): nothing after it is a line.
  for (size_t at = 0; at < text.size();) {
    size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(at, end - at);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.push_back(parse_line(line, ++number, path));
    at = end + 1;
  }
  TR_USER_CHECK(!lines.empty(), "history '", path, "': no lines");
  return lines;
}

std::vector<HistoryLine> read_history_file(const std::string& path) {
  return parse_history(read_user_file(path, "history"), path);
}

}  // namespace tr::bench
