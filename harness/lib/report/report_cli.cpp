#include "harness/lib/report/report_cli.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "framework/core/error.h"
#include "harness/lib/cli/cli_args.h"
#include "harness/lib/report/atomic_file.h"
#include "harness/lib/report/history_file.h"
#include "harness/lib/report/history_html.h"
#include "harness/lib/report/html_report.h"
#include "harness/lib/report/json_file.h"
#include "harness/lib/report/json_report.h"
#include "harness/lib/report/markdown_report.h"
#include "harness/lib/tta/tta_html.h"
#include "harness/lib/tta/tta_report.h"

namespace tr::bench {

namespace {

constexpr const char* kUsage =
    "usage: tr-bench report A.json [B.json ...] [--history FILE] -o out.html\n"
    "       tr-bench report --history FILE -o out.html\n"
    "       tr-bench report A.json [B.json ...] --markdown [-o out.md]\n"
    "\n"
    "Renders tr-bench JSON reports as one self-contained HTML page (inline SVG charts,\n"
    "no scripts, no network): context, step time and samples/s per model by mode,\n"
    "variant, batch and ranks, launches per step by mode, and a table of every case.\n"
    "With several reports, a table compares the median step times across them.\n"
    "Time-to-accuracy reports (tr-bench tta --json) get a chart of test accuracy\n"
    "against training time per seed and a table of the runs.\n"
    "  -o, --output FILE   the HTML file to write (required)\n"
    "  --history FILE      the history of the headline figures (JSON Lines, as\n"
    "                      reports/history.jsonl): per figure, a chart of tr / peer\n"
    "                      against the date with each interval, and a table of the lines\n"
    "  --markdown          instead of HTML, each report's cases as a Markdown table\n"
    "                      (median step, cv, samples/s, speed-up over eager, and the\n"
    "                      tokens/s, MFU, busy fractions, peak memory and energy the\n"
    "                      report has) with its source line; to stdout without -o\n";

// The page's parts, in the order they appear.
struct Page {
  std::vector<LabeledReport> reports;
  std::vector<std::string> sections;  // time-to-accuracy reports, then the history
  size_t tta_reports = 0, history_lines = 0;
};

Page read_inputs(const CliArgs& a) {
  Page page;
  for (const std::string& path : a.positional()) {
    const std::string label = std::filesystem::path(path).filename().string();
    const nlohmann::json j = read_json_file(path, "report");
    if (is_tta_json(j)) page.sections.push_back(render_tta_section(label, tta_report_from_json(j, path)));
    else page.reports.push_back({label, report_from_json(j, path)});
  }
  page.tta_reports = page.sections.size();
  if (a.has("--history")) {
    const std::string path = a.str("--history", "");
    const std::vector<HistoryLine> lines = read_history_file(path);
    page.sections.push_back(render_history_section(std::filesystem::path(path).filename().string(), lines));
    page.history_lines = lines.size();
  }
  return page;
}

// "12 cases from 2 reports, 1 time-to-accuracy report, 33 history lines": the parts the page holds.
std::string summary(const Page& page) {
  size_t cases = 0;
  for (const LabeledReport& r : page.reports) cases += r.report.cases.size();
  auto count = [](size_t n, const char* what) { return cat(n, " ", what, n == 1 ? "" : "s"); };
  std::vector<std::string> parts;
  if (!page.reports.empty()) parts.push_back(cat(cases, " cases from ", count(page.reports.size(), "report")));
  if (page.tta_reports > 0) parts.push_back(count(page.tta_reports, "time-to-accuracy report"));
  if (page.history_lines > 0) parts.push_back(count(page.history_lines, "history line"));
  std::string s;
  for (const std::string& p : parts) s += (s.empty() ? "" : ", ") + p;
  return s;
}

// --markdown: every report's table, in the order given, to stdout or -o.
int run_markdown(const CliArgs& a) {
  TR_USER_CHECK(!a.has("--history"), "--markdown renders run reports; --history draws only as HTML");
  std::string text;
  for (const std::string& path : a.positional()) {
    const nlohmann::json j = read_json_file(path, "report");
    TR_USER_CHECK(!is_tta_json(j), path, " is a time-to-accuracy report; --markdown renders tr-bench run reports");
    if (!text.empty()) text += '\n';
    text += render_markdown(path, report_from_json(j, path));
  }
  if (!a.has("--output")) {
    std::fputs(text.c_str(), stdout);
    return 0;
  }
  const std::string out = a.str("--output", "");
  check_writable(out, a.positional());
  write_file_atomically(out, text);
  std::printf("tr-bench report: wrote %s\n", out.c_str());
  return 0;
}

int run(int argc, char** argv) {
  // CliArgs knows only long flags: spell -o as --output.
  std::vector<std::string> args(argv, argv + argc);
  for (size_t i = 1; i < args.size(); ++i) {
    if (args[i] == "-o") args[i] = "--output";
    else if (args[i].size() > 1 && args[i][0] == '-' && args[i][1] != '-')
      throw UserError(cat("unknown flag ", args[i], " (see --help)"));
  }
  std::vector<char*> ptrs;
  for (std::string& s : args) ptrs.push_back(s.data());
  const CliArgs a(static_cast<int>(ptrs.size()), ptrs.data(), {"--output", "--history"}, {"--help", "--markdown"});
  if (a.flag("--help")) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (a.flag("--markdown")) {
    TR_USER_CHECK(!a.positional().empty(), "no reports given (usage: tr-bench report A.json [B.json ...] --markdown)");
    return run_markdown(a);
  }
  TR_USER_CHECK(!a.positional().empty() || a.has("--history"),
                "no reports given (usage: tr-bench report A.json [B.json ...] [--history FILE] -o out.html)");
  TR_USER_CHECK(a.has("--output"), "-o out.html is required");
  const std::string out = a.str("--output", "");
  std::vector<std::string> inputs = a.positional();
  if (a.has("--history")) inputs.push_back(a.str("--history", ""));
  check_writable(out, inputs);  // not one of the files it reads (Note [output paths])
  const Page page = read_inputs(a);
  write_file_atomically(out, render_html(page.reports, page.sections));
  std::printf("tr-bench report: wrote %s (%s)\n", out.c_str(), summary(page).c_str());
  return 0;
}

}  // namespace

int report_main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const UserError& e) {
    std::fprintf(stderr, "tr-bench report: error: %s\n", e.what());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tr-bench report: internal error: %s\n", e.what());
  }
  return 2;
}

}  // namespace tr::bench
