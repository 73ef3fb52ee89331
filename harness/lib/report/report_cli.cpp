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
#include "harness/lib/report/html_report.h"
#include "harness/lib/report/json_file.h"
#include "harness/lib/report/json_report.h"
#include "harness/lib/tta/tta_html.h"
#include "harness/lib/tta/tta_report.h"

namespace tr::bench {

namespace {

constexpr const char* kUsage =
    "usage: tr-bench report A.json [B.json ...] -o out.html\n"
    "\n"
    "Renders tr-bench JSON reports as one self-contained HTML page (inline SVG charts,\n"
    "no scripts, no network): context, step time and samples/s per model by mode,\n"
    "variant, batch and ranks, launches per step by mode, and a table of every case.\n"
    "With several reports, a table compares the median step times across them.\n"
    "Time-to-accuracy reports (tr-bench tta --json) get a chart of test accuracy\n"
    "against training time per seed and a table of the runs.\n"
    "  -o, --output FILE   the HTML file to write (required)\n";

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
  const CliArgs a(static_cast<int>(ptrs.size()), ptrs.data(), {"--output"}, {"--help"});
  if (a.flag("--help")) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  TR_USER_CHECK(!a.positional().empty(), "no reports given (usage: tr-bench report A.json [B.json ...] -o out.html)");
  TR_USER_CHECK(a.has("--output"), "-o out.html is required");
  const std::string out = a.str("--output", "");
  check_writable(out, a.positional());  // not one of the reports it reads (Note [output paths])
  std::vector<LabeledReport> reports;
  std::vector<std::string> tta_sections;
  for (const std::string& path : a.positional()) {
    const std::string label = std::filesystem::path(path).filename().string();
    const nlohmann::json j = read_json_file(path, "report");
    if (is_tta_json(j)) tta_sections.push_back(render_tta_section(label, tta_report_from_json(j, path)));
    else reports.push_back({label, report_from_json(j, path)});
  }
  const std::string html = render_html(reports, tta_sections);
  write_file_atomically(out, html);
  size_t cases = 0;
  for (const LabeledReport& r : reports) cases += r.report.cases.size();
  const std::string tta = tta_sections.empty() ? ""
                                               : cat(", ", tta_sections.size(), " time-to-accuracy report",
                                                     tta_sections.size() == 1 ? "" : "s");
  std::printf("tr-bench report: wrote %s (%zu cases from %zu report%s%s)\n", out.c_str(), cases, reports.size(),
              reports.size() == 1 ? "" : "s", tta.c_str());
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
