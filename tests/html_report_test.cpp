// The HTML report: self-contained (no scripts, no external resources), one
// chart set per model, every case in the table, every string escaped.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "harness/lib/report/html_report.h"
#include "harness/lib/report/json_report.h"
#include "harness/lib/report/report_cli.h"
#include "tests/golden_files.h"

namespace tr::bench {
namespace {

size_t count(const std::string& hay, const std::string& needle) {
  size_t n = 0;
  for (size_t p = hay.find(needle); p != std::string::npos; p = hay.find(needle, p + 1)) ++n;
  return n;
}

TEST(HtmlReport, Escape) {
  EXPECT_EQ(html_escape("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&#39;");
  EXPECT_EQ(html_escape("plain/text:1"), "plain/text:1");
}

TEST(HtmlReport, GoldenReportRenders) {
  const BenchReport r = read_report(golden_dir() + "/report_small.json");
  const std::string html = render_html({{"report_small.json", r}});
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("</html>"), std::string::npos);
  // Two models: step time + throughput + launches each.
  EXPECT_EQ(count(html, "<svg"), 6u);
  EXPECT_EQ(count(html, "<svg"), count(html, "</svg>"));
  for (const BenchCase& c : r.cases) EXPECT_NE(html.find(c.name("cuda")), std::string::npos) << c.name("cuda");
  for (const char* s : {"NVIDIA H200", "560.35.03", "9.5.1", "2.23.4", "0123456789abcdef", "2025-01-15T10:30:00",
                        "ms per step", "samples/s", "launches per step", "eager", "partial-capture", "full-capture",
                        "GPU busy", "Model mlp", "Model cnn"})
    EXPECT_NE(html.find(s), std::string::npos) << s;
  // Self-contained: no scripts, no fetched resources (the SVG namespace is a name, not a fetch).
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("src="), std::string::npos);
  EXPECT_EQ(html.find("href="), std::string::npos);
  EXPECT_EQ(count(html, "http"), count(html, "http://www.w3.org/2000/svg"));
  EXPECT_EQ(html.find("Comparison"), std::string::npos);  // one report: nothing to compare
}

TEST(HtmlReport, ScalingAndAllreduceColumnsAppearWithTheirCounters) {
  BenchReport r = read_report(golden_dir() + "/report_small.json");
  const std::string plain = render_html({{"a.json", r}});
  EXPECT_EQ(plain.find("weak scaling efficiency"), std::string::npos);
  EXPECT_EQ(plain.find("all-reduce GB/s"), std::string::npos);
  r.cases[0].counters["weak_scaling_efficiency"] = 0.9731;
  r.cases[0].counters["grad_allreduce_busbw_gbps"] = 123.45;
  r.cases[0].counters["allreduce_alone_busbw_gbps"] = 234.56;
  const std::string html = render_html({{"a.json", r}});
  for (const char* s : {"weak scaling efficiency", "grad all-reduce GB/s in step", "0.973", "123.5", "234.6"})
    EXPECT_NE(html.find(s), std::string::npos) << s;
}

TEST(HtmlReport, EscapesEveryString) {
  BenchReport r = read_report(golden_dir() + "/report_small.json");
  r.context.command_line = "tr-bench --tag '<script>alert(1)</script>' && \"x\"";
  r.context.device_name = "GPU <&>";
  r.cases[0].model = "m<b>&'";
  r.cases[0].variant = "v\"<i>";
  const std::string html = render_html({{"<label>.json", r}});
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<b>"), std::string::npos);
  EXPECT_EQ(html.find("<i>"), std::string::npos);
  EXPECT_EQ(html.find("<label>"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(html.find("GPU &lt;&amp;&gt;"), std::string::npos);
  EXPECT_NE(html.find(html_escape(r.cases[0].name("cuda"))), std::string::npos);
  EXPECT_NE(html.find("Model m&lt;b&gt;&amp;&#39;"), std::string::npos);
}

TEST(HtmlReport, SeveralReportsAreCompared) {
  const std::string a = golden_dir() + "/report_small.json", b = golden_dir() + "/report_small_b.json";
  const std::string html = render_html({{"before.json", read_report(a)}, {"after.json", read_report(b)}});
  EXPECT_NE(html.find("Comparison of median step times"), std::string::npos);
  EXPECT_NE(html.find("Results: before.json"), std::string::npos);
  EXPECT_NE(html.find("Results: after.json"), std::string::npos);
  EXPECT_EQ(count(html, "<svg"), 12u);
  EXPECT_NE(html.find("+10.2%"), std::string::npos);  // mlp full-capture, median 0.609 -> 0.671 ms
}

TEST(HtmlReport, ReportWithoutLaunchCountersSaysSo) {
  BenchReport r = read_report(golden_dir() + "/report_small.json");
  for (BenchCase& c : r.cases) c.counters.clear();
  const std::string html = render_html({{"x.json", r}});
  EXPECT_NE(html.find("No launch counters in this report."), std::string::npos);
  EXPECT_EQ(count(html, "<svg"), 4u);
  EXPECT_EQ(html.find("GPU busy"), std::string::npos);
}

// Note [busy fraction]: a report with both fractions shows both columns; the
// golden report, older, has only gpu_busy_fraction and no resident column.
TEST(HtmlReport, ResidentAndBusyFractionsEachGetAColumn) {
  BenchReport r = read_report(golden_dir() + "/report_small.json");
  EXPECT_EQ(render_html({{"old.json", r}}).find("GPU resident"), std::string::npos);
  r.cases[0].counters["gpu_resident_fraction"] = 0.987;
  r.cases[0].counters["gpu_busy_fraction"] = 0.654;
  const std::string html = render_html({{"new.json", r}});
  EXPECT_NE(html.find("<th>GPU resident</th><th>GPU busy</th>"), std::string::npos);
  EXPECT_NE(html.find("<td>98.7%</td><td>65.4%</td>"), std::string::npos);
}

struct CliRun {
  int code;
  std::string out, err;
};

CliRun report_cli(std::vector<std::string> args) {
  args.insert(args.begin(), "report");
  std::vector<char*> argv;
  for (std::string& s : args) argv.push_back(s.data());
  testing::internal::CaptureStdout();
  testing::internal::CaptureStderr();
  const int code = report_main(static_cast<int>(argv.size()), argv.data());
  CliRun r{code, testing::internal::GetCapturedStdout(), testing::internal::GetCapturedStderr()};
  return r;
}

TEST(HtmlReport, Cli) {
  const std::string a = golden_dir() + "/report_small.json", b = golden_dir() + "/report_small_b.json";
  const std::string out = testing::TempDir() + "tr_html_report_test_" + std::to_string(getpid()) + ".html";
  std::filesystem::remove(out);
  CliRun r = report_cli({a, b, "-o", out});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("wrote " + out + " (12 cases from 2 reports)"), std::string::npos) << r.out;
  std::ifstream f(out);
  const std::string html((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_NE(html.find("<svg"), std::string::npos);
  EXPECT_EQ(report_cli({a, "--output=" + out}).code, 0);

  for (const auto& [args, needle] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{a}, "-o out.html is required"},
           {{"-o", out}, "no reports given"},
           {{a, "-o"}, "--output needs a value"},
           {{a, "-x", "-o", out}, "unknown flag -x"},
           {{"/nonexistent.json", "-o", out}, "report '/nonexistent.json': no such file"},
           {{a, "-o", "/nonexistent-dir/out.html"}, "cannot write '/nonexistent-dir/out.html'"},
       }) {
    r = report_cli(args);
    EXPECT_EQ(r.code, 2) << needle;
    EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  r = report_cli({"--help"});
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("-o, --output"), std::string::npos);
}

// `report X.json -o X.json` would replace the report it reads with HTML: it
// exits 2 with one line before rendering, and X.json is as it was, whichever
// of the inputs it is and however -o spells it (Note [output paths]).
TEST(HtmlReport, TheOutputIsNeverAnInput) {
  const std::string a = golden_dir() + "/report_small.json";
  const std::string dir = testing::TempDir() + "tr_html_report_input_" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  const std::string b = dir + "/b.json";
  std::filesystem::copy_file(golden_dir() + "/report_small_b.json", b);
  std::ifstream f(b);
  const std::string before((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  for (const std::string& out : {b, dir + "/./b.json"}) {
    const CliRun r = report_cli({a, b, "-o", out});
    EXPECT_EQ(r.code, 2);
    EXPECT_EQ(r.err, "tr-bench report: error: cannot write '" + out + "': it is also an input of this run" +
                         (out == b ? "" : " (as '" + b + "')") + "\n");
  }
  std::ifstream g(b);
  EXPECT_EQ(std::string((std::istreambuf_iterator<char>(g)), std::istreambuf_iterator<char>()), before);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tr::bench
