// tr-bench report --markdown (harness/lib/report/markdown_report.h): a report's
// cases as one Markdown table with its source line, the optional columns only
// where every case has them; and the flag's bad uses refused in one line.
#include <gtest/gtest.h>

#include <unistd.h>
#include <cstdio>
#include <string>

#include "harness/lib/report/json_report.h"
#include "harness/lib/report/markdown_report.h"
#include "tests/golden_files.h"
#include "tests/tool_run.h"

namespace tr::bench {
namespace {

size_t lines(const std::string& s) {
  size_t n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

TEST(MarkdownReport, TheGoldenReportIsOneTableAndItsSource) {
  const std::string md = render_markdown("r.json", read_report(golden_dir() + "/report_small.json"));
  // Header, rule, six cases, a blank line, the source.
  EXPECT_EQ(lines(md), 10u) << md;
  EXPECT_EQ(
      md.rfind("| model | mode | variant | GPUs | batch | median ms | cv | samples/s | × eager | GPU busy |\n", 0), 0u)
      << md;
  // mlp full capture: median 0.609 of {0.612, 0.598, 0.605, 0.621, 0.609}, 2.104 / 0.609 = 3.45 x eager.
  EXPECT_NE(md.find("| mlp | full-capture | train_base | 1 | 200 | 0.6090 | 1.40 % | 328,407 | 3.45 | 0.930 |\n"),
            std::string::npos)
      << md;
  // Two GPUs have no eager case of their own to divide by.
  EXPECT_NE(md.find("| cnn | full-capture | train_base | 2 | 512 | 5.6100 | 1.01 % | 91,103 | - | 0.910 |\n"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("\nSource: `r.json`; NVIDIA H200; 2025-01-15; binaries of commit `0123456789ab`; `synthetic test"),
            std::string::npos)
      << md;
  for (const char* absent : {"GPU resident", "J/step", "tokens/s", "MFU", "peak device GiB"})
    EXPECT_EQ(md.find(absent), std::string::npos) << absent;
}

TEST(MarkdownReport, AColumnAppearsOnlyWhereEveryCaseHasIt) {
  BenchReport r = read_report(golden_dir() + "/report_small.json");
  for (BenchCase& c : r.cases) {
    c.counters["gpu_resident_fraction"] = 0.5;
    c.counters["device_memory_peak_bytes"] = 3.0 * 1073741824;
  }
  r.cases[0].counters["energy_j_per_step"] = 0.25;  // one case only: no column
  r.context.gpu_state["driver"] = "580.159.04";
  r.context.git_commit = "9256b4fccb47aa-dirty";
  const std::string md = render_markdown("r.json", r);
  EXPECT_NE(md.find("| GPU resident | GPU busy | peak device GiB |\n"), std::string::npos) << md;
  EXPECT_NE(md.find("| 0.500 | 0.930 | 3.00 |\n"), std::string::npos) << md;
  EXPECT_EQ(md.find("J/step"), std::string::npos) << md;
  EXPECT_NE(md.find("NVIDIA H200, driver 580.159.04;"), std::string::npos) << md;
  EXPECT_NE(md.find("binaries of commit `9256b4fccb47-dirty`"), std::string::npos) << md;
}

TEST(MarkdownReport, TheCliPrintsItOrWritesItAndRefusesWhatItCannotRender) {
  const std::string golden = golden_dir() + "/report_small.json";
  const testing::ToolResult r = testing::run_tool("tr-bench report --markdown " + golden);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, render_markdown(golden, read_report(golden)));
  const std::string out = ::testing::TempDir() + "tr_markdown_" + std::to_string(getpid()) + ".md";
  const testing::ToolResult w = testing::run_tool("tr-bench report --markdown " + golden + " -o " + out);
  EXPECT_EQ(w.code, 0) << w.err;
  EXPECT_NE(w.out.find("wrote " + out), std::string::npos) << w.out;
  std::remove(out.c_str());
  testing::expect_tool_user_error("tr-bench report --markdown", "no reports given");
  testing::expect_tool_user_error("tr-bench report --markdown " + golden + " --history " + golden,
                                  "--history draws only as HTML");
  testing::expect_tool_user_error("tr-bench report --markdown " + golden + " -o " + golden, golden);
}

}  // namespace
}  // namespace tr::bench
