// The history of the headline figures (reports/schema.md, "The history of the
// headline figures"): its lines read back as written, the older measurements'
// null intervals included; every malformed line refused with its number; one
// chart per figure with a point per line; and `tr-bench report --history` on
// the committed reports/history.jsonl.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "framework/core/error.h"
#include "harness/lib/report/history_file.h"
#include "harness/lib/report/history_html.h"
#include "tests/golden_files.h"
#include "tests/tool_run.h"

namespace tr::bench {
namespace {

namespace fs = std::filesystem;

// As ci/interleave.py appends it, and as the older rows were converted (no interval).
const std::string kInterleaved =
    R"j({"date": "2026-12-06T13:38:33Z", "commit": "153c59a0b1c2", "machine": "NVIDIA H100 80GB HBM3", )j"
    R"j("figure": "cnn b256 (ms)", "tr": 0.62, "peer": 1.24, "ratio": 0.5, "ci_low": 0.48, "ci_high": 0.53, )j"
    R"j("rounds": 5, "source": "interleave/interleave.json"})j";
const std::string kOlder =
    R"j({"date": "2026-12-03", "commit": "005d5dce073f", "machine": "NVIDIA H200", "figure": "cnn b256 (ms)", )j"
    R"j("tr": 0.5833, "peer": 1.3056, "ratio": 0.447, "ci_low": null, "ci_high": null, "rounds": null, )j"
    R"j("source": "reports/h200/gpu_check/bench_cnn_amp.json@c865f2d"})j";

size_t count(const std::string& hay, const std::string& needle) {
  size_t n = 0;
  for (size_t p = hay.find(needle); p != std::string::npos; p = hay.find(needle, p + 1)) ++n;
  return n;
}

// kOlder with one key's value replaced (`value` empty: the key removed).
std::string older_with(const std::string& key, const std::string& value) {
  nlohmann::json j = nlohmann::json::parse(kOlder);
  if (value.empty()) j.erase(key);
  else j[key] = nlohmann::json::parse(value);
  return j.dump();
}

// The message of the UserError that parsing `text` as "h.jsonl" throws.
std::string refusal(const std::string& text) {
  try {
    parse_history(text, "h.jsonl");
  } catch (const UserError& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(HistoryReport, ReadsInterleavedAndOlderLines) {
  const std::vector<HistoryLine> lines = parse_history(kOlder + "\n" + kInterleaved + "\n", "h.jsonl");
  ASSERT_EQ(lines.size(), 2u);
  const HistoryLine& old = lines[0];
  EXPECT_EQ(old.line, 1);
  EXPECT_EQ(old.date, "2026-12-03");
  EXPECT_EQ(old.commit, "005d5dce073f");
  EXPECT_EQ(old.machine, "NVIDIA H200");
  EXPECT_EQ(old.figure, "cnn b256 (ms)");
  EXPECT_DOUBLE_EQ(old.tr, 0.5833);
  EXPECT_DOUBLE_EQ(old.peer, 1.3056);
  EXPECT_DOUBLE_EQ(old.ratio, 0.447);
  EXPECT_FALSE(old.ci_low.has_value());
  EXPECT_FALSE(old.ci_high.has_value());
  EXPECT_FALSE(old.rounds.has_value());
  EXPECT_EQ(old.source, "reports/h200/gpu_check/bench_cnn_amp.json@c865f2d");
  const HistoryLine& run = lines[1];
  EXPECT_EQ(run.line, 2);
  EXPECT_EQ(run.date, "2026-12-06T13:38:33Z");
  ASSERT_TRUE(run.ci_low && run.ci_high && run.rounds);
  EXPECT_DOUBLE_EQ(*run.ci_low, 0.48);
  EXPECT_DOUBLE_EQ(*run.ci_high, 0.53);
  EXPECT_EQ(*run.rounds, 5);
  // The last line's newline is optional, a CR before it (a file edited on Windows) is dropped.
  EXPECT_EQ(parse_history(kOlder + "\r\n" + kInterleaved, "h.jsonl").size(), 2u);
}

// Each malformed line, given as line 2 after a good one: one line naming the file and line 2.
TEST(HistoryReport, RefusesEachMalformedLineWithItsNumber) {
  std::vector<std::pair<std::string, std::string>> cases = {
      {"", "empty line"},
      {"   ", "empty line"},
      {"{\"date\": ", "not valid JSON"},
      {"[1, 2]", "not a JSON object"},
      {R"({"date": "a", "date": "b"})", "appears twice"},
      {older_with("tr", "\"0.5\""), "'tr' is not a number"},
      {older_with("peer", "0"), "'peer' is 0, not above zero"},
      {older_with("ratio", "-0.4"), "'ratio' is -0.4, not above zero"},
      {older_with("figure", "\"\""), "'figure' is empty"},
      {older_with("date", "20261203"), "'date' is not a string"},
      {older_with("ci_low", "0.4"), "'ci_low' and 'ci_high' are both null or both numbers"},
      {older_with("ci_high", "0.4"), "'ci_low' and 'ci_high' are both null or both numbers"},
      {older_with("ci_low", "true"), "'ci_low' is not a number"},
      {older_with("rounds", "2.5"), "'rounds' is not a whole number"},
      {older_with("rounds", "0"), "'rounds' is 0, not a count of rounds"},
  };
  nlohmann::json upside_down = nlohmann::json::parse(kInterleaved);
  upside_down["ci_low"] = 0.6;
  cases.emplace_back(upside_down.dump(), "'ci_low' is above 'ci_high'");
  for (const char* key :
       {"date", "commit", "machine", "figure", "tr", "peer", "ratio", "ci_low", "ci_high", "rounds", "source"})
    cases.emplace_back(older_with(key, ""), cat("no '", key, "'"));
  for (const auto& [line, needle] : cases) {
    const std::string e = refusal(kOlder + "\n" + line + "\n");
    EXPECT_EQ(e.rfind("history 'h.jsonl' line 2: ", 0), 0u) << line << "\n" << e;
    EXPECT_NE(e.find(needle), std::string::npos) << line << "\n" << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  }
  EXPECT_EQ(refusal(""), "history 'h.jsonl': no lines");
  EXPECT_EQ(refusal("\n"), "history 'h.jsonl' line 1: empty line");
}

TEST(HistoryReport, MissingFileIsNamed) {
  const std::string path = ::testing::TempDir() + "tr_no_such_history_" + std::to_string(getpid()) + ".jsonl";
  try {
    read_history_file(path);
    FAIL() << "a missing file was read";
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()), "history '" + path + "': no such file");
  }
}

// The SVG charts of a page, each from "<svg" to its "</svg>".
std::vector<std::string> charts(const std::string& html) {
  std::vector<std::string> out;
  for (size_t p = html.find("<svg"); p != std::string::npos; p = html.find("<svg", p + 1))
    out.push_back(html.substr(p, html.find("</svg>", p) - p));
  return out;
}

TEST(HistoryReport, HtmlDrawsOneChartPerFigureAndAPointPerLine) {
  // Figures interleaved in the file: a 3-line figure (one line with an interval), then a 1-line one.
  const std::string other = older_with("figure", "\"resnet50 b256 (ms)\"");
  const std::vector<HistoryLine> lines =
      parse_history(kOlder + "\n" + other + "\n" + kOlder + "\n" + kInterleaved + "\n", "h.jsonl");
  const std::string html = render_history_section("h.jsonl", lines);
  const std::vector<std::string> svg = charts(html);
  ASSERT_EQ(svg.size(), 2u) << html;
  EXPECT_NE(svg[0].find("cnn b256 (ms)"), std::string::npos);  // the figures in order of first appearance
  EXPECT_NE(svg[1].find("resnet50 b256 (ms)"), std::string::npos);
  EXPECT_EQ(count(svg[0], "<circle"), 3u);
  EXPECT_EQ(count(svg[1], "<circle"), 1u);
  EXPECT_EQ(count(svg[0], "<path"), 1u);  // the one interval
  EXPECT_EQ(count(svg[1], "<path"), 0u);
  for (const std::string& s : svg) EXPECT_EQ(count(s, "stroke-dasharray"), 1u);  // parity
  // A table row per line, beneath its chart; the interval where present, a dash where not.
  EXPECT_EQ(count(html, "<tr><td>"), lines.size());
  EXPECT_NE(html.find("0.480 \xE2\x80\x93 0.530"), std::string::npos);
  EXPECT_NE(html.find("interleave/interleave.json"), std::string::npos);
  EXPECT_LT(html.find("<tr><td>4</td>"), html.find("resnet50 b256 (ms)</h3>"));
  EXPECT_LT(html.find("resnet50 b256 (ms)</h3>"), html.find("<tr><td>2</td>"));
}

// The committed history through the tool, alone and after a benchmark report.
TEST(HistoryReport, ToolDrawsTheCommittedHistory) {
  const std::string history = (fs::path(golden_dir()).parent_path().parent_path() / "reports/history.jsonl").string();
  const std::string out = ::testing::TempDir() + "tr_history_report_" + std::to_string(getpid()) + ".html";
  std::ifstream in(history);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_FALSE(text.empty()) << history;
  const size_t n_lines = static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));

  const tr::testing::ToolResult r = tr::testing::run_tool("tr-bench report --history " + history + " -o " + out);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find(cat("(", n_lines, " history lines)")), std::string::npos) << r.out;
  std::ifstream f(out);
  const std::string html((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_NE(html.find("resnet50 amp b256 full capture vs torch.compile (ms)"), std::string::npos);
  EXPECT_EQ(count(html, "<circle"), n_lines);

  const tr::testing::ToolResult both = tr::testing::run_tool("tr-bench report " + golden_dir() +
                                                             "/report_small.json --history " + history + " -o " + out);
  ASSERT_EQ(both.code, 0) << both.err;
  EXPECT_NE(both.out.find(cat("cases from 1 report, ", n_lines, " history lines)")), std::string::npos) << both.out;
  fs::remove(out);
}

TEST(HistoryReport, ToolRefusesAMalformedLine) {
  const std::string bad = ::testing::TempDir() + "tr_bad_history_" + std::to_string(getpid()) + ".jsonl";
  std::ofstream(bad) << kOlder << "\n" << older_with("rounds", "0") << "\n";
  const std::string out = ::testing::TempDir() + "tr_bad_history_" + std::to_string(getpid()) + ".html";
  tr::testing::expect_tool_user_error("tr-bench report --history " + bad + " -o " + out,
                                      "history '" + bad + "' line 2: 'rounds' is 0");
  EXPECT_FALSE(fs::exists(out));
  tr::testing::expect_tool_user_error("tr-bench report --history " + bad + " -o " + bad, bad);  // not over its input
  fs::remove(bad);
}

}  // namespace
}  // namespace tr::bench
