// The regression gate: what counts as a regression, an improvement, noise or
// too little data, and which reports it refuses to compare.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>

#include "framework/core/error.h"
#include "harness/lib/report/gate.h"
#include "harness/lib/report/gate_cli.h"
#include "harness/lib/report/json_report.h"
#include "harness/lib/report/statistics.h"
#include "tests/golden_files.h"

namespace tr::bench {
namespace {

BenchCase make_case(const std::string& mode, std::vector<double> step) {
  BenchCase c;
  c.model = "cnn";
  c.mode = mode;
  c.variant = "train_base";
  c.ranks = 1;
  c.batch = 256;
  c.iterations = 20;
  c.cpu_ms = step;
  c.step_ms = std::move(step);
  c.counters = {{"graph_launches_per_step", 17},
                {"kernel_launches_per_step", 0},
                {"arena_bytes", 214958080},
                {"samples_per_second", 50000}};
  return c;
}

BenchReport make_report(std::vector<double> full_step, std::vector<double> eager_step = {9.8, 9.7, 9.9, 9.75, 9.85}) {
  BenchReport r;
  r.context.device_kind = "cuda";
  r.context.device_name = "NVIDIA H200";
  r.context.build_type = "release";
  r.context.driver_version = "560.35.03";
  r.cases.push_back(make_case("eager", std::move(eager_step)));
  r.cases.back().counters["kernel_launches_per_step"] = 212;
  r.cases.back().counters["graph_launches_per_step"] = 0;
  r.cases.push_back(make_case("full-capture", std::move(full_step)));
  return r;
}

const std::vector<double> kBase = {10.0, 10.1, 9.9, 10.05, 9.95};
const std::string kFull = "train_step/model:cnn/variant:train_base/mode:full-capture/gpus:1/batch:256";

std::vector<double> scaled(std::vector<double> v, double f) {
  for (double& x : v) x *= f;
  return v;
}

const GateRow& row_of(const GateResult& r, const std::string& case_name, const std::string& metric) {
  const auto it = std::find_if(r.rows.begin(), r.rows.end(),
                               [&](const GateRow& x) { return x.case_name == case_name && x.metric == metric; });
  if (it == r.rows.end()) throw std::runtime_error("no row " + case_name + " / " + metric);
  return *it;
}
const char* kStep = "step time median (ms)";

TEST(Gate, IdenticalReportsPass) {
  const BenchReport a = make_report(kBase);
  const GateResult r = run_gate(a, a, {});
  EXPECT_FALSE(r.regressed());
  EXPECT_EQ(r.cases, 2);
  EXPECT_EQ(r.improvements + r.not_significant + r.not_judged, 0);
  for (const GateRow& x : r.rows) EXPECT_EQ(x.verdict, Verdict::kOk) << x.case_name << " " << x.metric;
  EXPECT_EQ(row_of(r, kFull, "deterministic counters").baseline, "3 identical");
  EXPECT_EQ(row_of(r, kFull, kStep).p_value, 1.0);
  EXPECT_NE(format_gate_table(r, {}).find("gate: passed"), std::string::npos);
}

TEST(Gate, DeterministicCounterChangeFailsNamingIt) {
  const BenchReport a = make_report(kBase);
  BenchReport b = a;
  b.cases[1].counters["graph_launches_per_step"] = 18;
  b.cases[1].counters["samples_per_second"] = 1;  // measured: not gated
  const GateResult r = run_gate(a, b, {});
  EXPECT_TRUE(r.regressed());
  EXPECT_EQ(r.regressions, 1);
  const GateRow& x = row_of(r, kFull, "graph_launches_per_step");
  EXPECT_EQ(x.verdict, Verdict::kRegression);
  EXPECT_EQ(x.baseline, "17");
  EXPECT_EQ(x.current, "18");
  EXPECT_EQ(x.change, "+1 (+5.9%)");
  const std::string table = format_gate_table(r, {});
  EXPECT_NE(table.find("graph_launches_per_step"), std::string::npos);
  EXPECT_NE(table.find("REGRESSION"), std::string::npos);
  EXPECT_NE(table.find("gate: FAILED: 1 regression(s)"), std::string::npos) << table;
  // Even a change in the last bit counts, and shows.
  b = a;
  b.cases[1].counters["arena_bytes"] = std::nextafter(214958080.0, 1e300);
  const GateResult r2 = run_gate(a, b, {});
  EXPECT_TRUE(r2.regressed());
  EXPECT_NE(row_of(r2, kFull, "arena_bytes").current, row_of(r2, kFull, "arena_bytes").baseline);
}

TEST(Gate, LostCounterRegressesNewCounterIsNoted) {
  const BenchReport a = make_report(kBase);
  BenchReport b = a;
  b.cases[1].counters.erase("arena_bytes");
  b.cases[1].counters["captured_graphs"] = 17;
  const GateResult r = run_gate(a, b, {});
  EXPECT_EQ(r.regressions, 1);
  EXPECT_EQ(row_of(r, kFull, "arena_bytes").current, "missing");
  EXPECT_EQ(row_of(r, kFull, "arena_bytes").verdict, Verdict::kRegression);
  EXPECT_EQ(row_of(r, kFull, "captured_graphs").verdict, Verdict::kNew);
}

TEST(Gate, ClearlySlowerFails) {
  // Every current repetition is ~10% above every baseline one: p = 2/252.
  const GateResult r = run_gate(make_report(kBase), make_report(scaled(kBase, 1.10)), {});
  EXPECT_TRUE(r.regressed());
  const GateRow& x = row_of(r, kFull, kStep);
  EXPECT_EQ(x.verdict, Verdict::kRegression);
  EXPECT_EQ(x.change, "+10.0%");
  EXPECT_LT(x.p_value, 0.01);  // exact p = 2/252 = 0.0079, the floor for 5 vs 5: below alpha 0.05 with room
  EXPECT_EQ(row_of(r, "train_step/model:cnn/variant:train_base/mode:eager/gpus:1/batch:256", kStep).verdict,
            Verdict::kOk);
}

TEST(Gate, SlowerButNoisyIsNotSignificant) {
  // Medians 10 -> 11 (+10%) but the repetitions overlap: p = 0.34.
  const GateResult r = run_gate(make_report({8, 12, 9, 11, 10}), make_report({9, 13, 10, 12.5, 11}), {});
  EXPECT_FALSE(r.regressed());
  EXPECT_EQ(r.not_significant, 1);
  const GateRow& x = row_of(r, kFull, kStep);
  EXPECT_EQ(x.verdict, Verdict::kNotSignificant);
  EXPECT_EQ(x.change, "+10.0%");
  EXPECT_GT(x.p_value, 0.05);  // p = 0.343 (Statistics.MannWhitneyEdgeCases); 0.05 is the gate's alpha
}

TEST(Gate, ClearlyFasterIsAnImprovement) {
  const GateResult r = run_gate(make_report(kBase), make_report(scaled(kBase, 0.9)), {});
  EXPECT_FALSE(r.regressed());
  EXPECT_EQ(r.improvements, 1);
  EXPECT_EQ(row_of(r, kFull, kStep).verdict, Verdict::kImprovement);
}

TEST(Gate, WithinThresholdIsOkEvenWhenSignificant) {
  const GateResult r = run_gate(make_report(kBase), make_report(scaled(kBase, 1.03)), {});
  EXPECT_FALSE(r.regressed());
  EXPECT_EQ(row_of(r, kFull, kStep).verdict, Verdict::kOk);
  GateOptions tight;
  tight.threshold = 0.02;
  EXPECT_TRUE(run_gate(make_report(kBase), make_report(scaled(kBase, 1.03)), tight).regressed());
}

TEST(Gate, RepetitionsThatCannotReachAlphaAreRefused) {
  // 50% slower, but 3 vs 3 repetitions reach p = 0.1 at best (2 / C(6, 3)):
  // such a gate could never fail, so it is not run.
  const BenchReport a = make_report({10, 10.1, 10.2}), b = make_report({15, 15.2, 15.1});
  try {
    run_gate(a, b, {});
    ADD_FAILURE() << "3 vs 3 repetitions were gated";
  } catch (const UserError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("the step times cannot fail this gate: " + kFull + " (3 vs 3 reps)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("no p below 0.1, and alpha is 0.05"), std::string::npos) << msg;
    EXPECT_NE(msg.find("--repetitions 4 or more"), std::string::npos) << msg;  // 2 / C(8, 4) = 0.029
  }
  // The counters alone are still judged.
  GateOptions counters;
  counters.counters_only = true;
  EXPECT_FALSE(run_gate(a, b, counters).regressed());
  // A looser alpha is reachable by 3 vs 3, and then the slowdown fails.
  GateOptions loose;
  loose.alpha = 0.15;
  EXPECT_TRUE(run_gate(a, b, loose).regressed());
  // 4 vs 4 reaches 0.029 < 0.05: judged, and the slowdown fails.
  EXPECT_TRUE(run_gate(make_report({10, 10.1, 10.2, 10.05}), make_report({15, 15.2, 15.1, 15.3}), {}).regressed());
}

TEST(Gate, RepetitionsNeededForAlpha) {
  EXPECT_EQ(repetitions_for_alpha(0.05), 4);           // 2/70 = 0.029; 3 a side give 0.1
  EXPECT_EQ(repetitions_for_alpha(0.01), 5);           // 2/252 = 0.0079; 4 a side give 0.029
  EXPECT_EQ(repetitions_for_alpha(1.0), 2);            // 2/6 = 0.33; 1 a side gives 1
  EXPECT_DOUBLE_EQ(min_two_sided_p(1000, 1000), 0.0);  // C(2000, 1000) is past a double: no overflow trap
}

void expect_refusal(const BenchReport& a, const BenchReport& b, const std::string& needle) {
  try {
    run_gate(a, b, {});
    ADD_FAILURE() << "no refusal (wanted: " << needle << ")";
  } catch (const UserError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(needle), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
}

TEST(Gate, RefusesIncomparableReports) {
  const BenchReport a = make_report(kBase);
  BenchReport b = a;
  b.context.device_name = "NVIDIA A100-SXM4-80GB";
  expect_refusal(a, b, "device_name differs (baseline 'NVIDIA H200', current 'NVIDIA A100-SXM4-80GB')");
  b = a;
  b.context.build_type = "debug";
  expect_refusal(a, b, "build type differs (baseline 'release', current 'debug')");
  b = a;
  b.context.bn_sync = "running";
  expect_refusal(a, b, "BN sync differs (baseline 'batch', current 'running')");
  b = a;
  b.context.fusion = !a.context.fusion;
  expect_refusal(a, b, "fusion differs");
  b = a;
  b.context.deterministic = false;
  expect_refusal(a, b, "algorithms differs (baseline 'deterministic', current 'non-deterministic')");
  b = a;
  b.context.programmatic_launch = !a.context.programmatic_launch;
  expect_refusal(a, b, "programmatic launch differs");
  b = a;
  b.context.tc_filter_grad = !a.context.tc_filter_grad;
  expect_refusal(a, b, "3x3 filter gradient differs");
  b = a;
  b.context.memset_kernels = !a.context.memset_kernels;
  expect_refusal(a, b, "memset nodes differs");
  b = a;
  b.context.grid_sync = !a.context.grid_sync;
  expect_refusal(a, b, "grid sync differs");
  b = a;
  b.context.side_streams = a.context.side_streams == "on" ? "off" : "on";
  expect_refusal(a, b, "side streams differs");
  b = a;
  b.context.device_kind = "cpu";
  expect_refusal(a, b, "device_kind differs");
  b = a;
  b.cases.pop_back();
  b.cases[0].batch = 128;
  expect_refusal(a, b,
                 "only in baseline: train_step/model:cnn/variant:train_base/mode:eager/gpus:1/batch:256, " + kFull +
                     "; only in current: train_step/model:cnn/variant:train_base/mode:eager/gpus:1/batch:128");
}

// Note [processes and ranks]: a report of processes under mpirun and one of
// rank threads time different launches of the same code.
TEST(Gate, RefusesALaunchMismatchUnlessAsked) {
  const BenchReport a = make_report(kBase);
  BenchReport b = a;
  b.context.launch = "processes";
  b.context.processes = 2;
  expect_refusal(a, b, "launch differs (baseline 'threads', current 'processes'; --allow-launch-mismatch");
  GateOptions allow;
  allow.allow_launch_mismatch = true;
  EXPECT_FALSE(run_gate(a, b, allow).regressed());
}

// Note [convolution plan books]: timed plans differ between processes unless a
// --conv-plans file fixes them; the digest says which plans ran.
TEST(Gate, TimedReportsCompareOnlyWithTheSamePlans) {
  BenchReport a = make_report(kBase);
  a.context.cudnn_benchmark = true;
  a.context.conv_plans_digest = "0123456789abcdef";
  BenchReport b = a;
  EXPECT_FALSE(run_gate(a, b, {}).regressed());
  b.context.conv_plans_digest = "fedcba9876543210";
  expect_refusal(a, b,
                 "the timed convolution plans differ (baseline digest 0123456789abcdef, current fedcba9876543210); "
                 "run both with the same --conv-plans FILE");
  // A report older than the digest has none: compared as before.
  b.context.conv_plans_digest = "";
  EXPECT_FALSE(run_gate(a, b, {}).regressed());
  // The heuristic's plans (another cuDNN may choose others): a note.
  a.context.cudnn_benchmark = b.context.cudnn_benchmark = false;
  b.context.conv_plans_digest = "fedcba9876543210";
  const GateResult r = run_gate(a, b, {});
  EXPECT_FALSE(r.regressed());
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_NE(r.notes[0].find("convolution plans differs: baseline '0123456789abcdef', current 'fedcba9876543210'"),
            std::string::npos)
      << r.notes[0];
}

TEST(Gate, OtherContextDifferencesAreNotes) {
  const BenchReport a = make_report(kBase);
  BenchReport b = a;
  b.context.driver_version = "565.57.01";
  const GateResult r = run_gate(a, b, {});
  EXPECT_FALSE(r.regressed());
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_NE(r.notes[0].find("driver_version differs"), std::string::npos);
  EXPECT_EQ(format_gate_table(r, {}).rfind("note: driver_version", 0), 0u);
}

TEST(Gate, TableIsAligned) {
  const std::string t = format_gate_table(run_gate(make_report(kBase), make_report(scaled(kBase, 1.1)), {}), {});
  // Header, rule and rows: the "verdict" column starts at the same offset.
  std::istringstream in(t);
  std::string line, header;
  std::getline(in, header);
  const size_t col = header.find("verdict");
  ASSERT_NE(col, std::string::npos);
  std::getline(in, line);  // rule
  int rows = 0;
  while (std::getline(in, line) && !line.empty()) {
    ++rows;
    const std::string v = line.substr(col, 10);
    EXPECT_TRUE(v.rfind("ok", 0) == 0 || v.rfind("REGRESSION", 0) == 0) << line;
  }
  EXPECT_EQ(rows, 4);  // two cases: step time + counter summary each
}

// ---------------------------------------------------------------- the CLI

struct CliRun {
  int code;
  std::string out, err;
};

CliRun gate_cli(std::vector<std::string> args) {
  args.insert(args.begin(), "gate");
  std::vector<char*> argv;
  for (std::string& s : args) argv.push_back(s.data());
  testing::internal::CaptureStdout();
  testing::internal::CaptureStderr();
  const int code = gate_main(static_cast<int>(argv.size()), argv.data());
  CliRun r{code, testing::internal::GetCapturedStdout(), testing::internal::GetCapturedStderr()};
  return r;
}

std::string temp_report(const std::string& name, const BenchReport& r) {
  const std::string path = testing::TempDir() + "tr_gate_" + std::to_string(getpid()) + "_" + name;
  write_report(r, path);
  return path;
}

TEST(Gate, CliExitCodes) {
  const std::string a = temp_report("a.json", make_report(kBase));
  const std::string slow = temp_report("slow.json", make_report(scaled(kBase, 1.1)));
  BenchReport other = make_report(kBase);
  other.context.device_name = "NVIDIA A100";
  const std::string a100 = temp_report("a100.json", other);
  const std::string three = temp_report("three.json", make_report({10, 10.1, 10.2}, {9.8, 9.7, 9.9}));
  BenchReport none = make_report(kBase);
  none.cases.clear();
  const std::string empty = temp_report("empty.json", none);
  // Only the top-level "tta" key marks a time-to-accuracy report (is_tta_json).
  const std::string tta = testing::TempDir() + "tr_gate_" + std::to_string(getpid()) + "_tta.json";
  std::ofstream(tta) << R"({"context": {"task": "tta"}, "tta": {"runs": []}})";

  CliRun r = gate_cli({"--baseline", a, "--current", a});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("gate: passed"), std::string::npos) << r.out;

  r = gate_cli({"--baseline", a, "--current", slow});
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.out.find("REGRESSION"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(kFull), std::string::npos);

  r = gate_cli({"--baseline", a, "--current", slow, "--threshold", "0.2"});
  EXPECT_EQ(r.code, 0) << r.out;

  r = gate_cli({"--baseline=" + a, "--current=" + a100});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("device_name differs"), std::string::npos) << r.err;

  for (const auto& [args, needle] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"--baseline", a}, "--current is required"},
           {{"--current", a}, "--baseline is required"},
           {{"--baseline", a, "--current", a, "--alpha", "often"}, "--alpha expects a number"},
           {{"--baseline", a, "--current", a, "--threshold", "-1"}, "--threshold must be in"},
           {{"--baseline", a, "--current", a, "--bogus"}, "unknown flag --bogus"},
           {{"--baseline", a, "--current", a, "extra.json"}, "unexpected argument 'extra.json'"},
           {{"--baseline", a, "--current", "/nonexistent.json"}, "report '/nonexistent.json': no such file"},
           {{"--baseline", a, "--current", a, "--alpha", "0"}, "--alpha must be above 0"},
           {{"--baseline", three, "--current", three}, "--repetitions 4 or more, or gate with --counters-only"},
           {{"--baseline", a, "--current", empty}, "holds no cases: there is nothing to gate"},
           {{"--baseline", tta, "--current", a}, "is a time-to-accuracy report (tr-bench tta); the gate compares"},
       }) {
    r = gate_cli(args);
    EXPECT_EQ(r.code, 2) << needle;
    EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_EQ(r.err.rfind("tr-bench gate: error: ", 0), 0u) << r.err;
  }
  r = gate_cli({"--help"});
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("--threshold"), std::string::npos);
}

TEST(Gate, GoldenPair) {
  // tests/golden/report_small_b.json: mlp full-capture ~10% slower, cnn eager ~8% faster.
  const std::string a = golden_dir() + "/report_small.json", b = golden_dir() + "/report_small_b.json";
  const CliRun r = gate_cli({"--baseline", a, "--current", b});
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  const GateResult g = run_gate(read_report(a), read_report(b), {});
  EXPECT_EQ(g.regressions, 1);
  EXPECT_EQ(g.improvements, 1);
  EXPECT_EQ(row_of(g, "train_step/model:mlp/variant:train_base/mode:full-capture/gpus:1/batch:200", kStep).verdict,
            Verdict::kRegression);
  EXPECT_EQ(row_of(g, "train_step/model:cnn/variant:train_base/mode:eager/gpus:1/batch:256", kStep).verdict,
            Verdict::kImprovement);
}

}  // namespace
}  // namespace tr::bench

namespace tr::bench {
namespace {

// reports/schema.md lists the deterministic counters for readers of the
// reports; the gate reads deterministic_counters(). A counter added to one and
// not the other would be gated without a word in the schema, or promised and
// not gated.
TEST(GateTest, SchemaListsTheDeterministicCounters) {
  namespace fs = std::filesystem;
  const fs::path schema = fs::path(golden_dir()).parent_path().parent_path() / "reports/schema.md";
  std::ifstream in(schema);
  ASSERT_TRUE(in) << "cannot read " << schema;
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  const size_t begin = text.find("- **deterministic**");
  const size_t end = text.find("- **measured**", begin);
  ASSERT_NE(begin, std::string::npos) << schema << " has no '- **deterministic**' list";
  ASSERT_NE(end, std::string::npos) << schema << " has no '- **measured**' list after it";
  // Every name in backticks there made only of lower-case letters, digits and
  // underscores is a counter (file paths and function calls have other characters).
  std::set<std::string> listed;
  const std::string list = text.substr(begin, end - begin);
  for (size_t open = list.find('`'); open != std::string::npos;) {
    const size_t close = list.find('`', open + 1);
    if (close == std::string::npos) break;
    const std::string n = list.substr(open + 1, close - open - 1);
    if (!n.empty() && n.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") == std::string::npos)
      listed.insert(n);
    open = list.find('`', close + 1);
  }
  EXPECT_EQ(listed, deterministic_counters());
}

}  // namespace
}  // namespace tr::bench
