// The JSON report: Google Benchmark's layout (golden files), an exact round
// trip, and one clear line for every kind of bad file.
//
// The golden files tests/golden/report_small.json and report_small_b.json are
// written from the synthetic reports below (their numbers are invented, and
// their context says so). When the format changes on purpose, regenerate them:
//   TR_UPDATE_GOLDEN=1 build/bin/tr_tests --gtest_filter='JsonReport.Golden*'
// and review the diff.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "framework/core/error.h"
#include "harness/lib/report/json_report.h"
#include "harness/lib/report/statistics.h"
#include "tests/golden_files.h"

namespace tr::bench {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << text;
}

std::string temp_path(const std::string& name) {
  return testing::TempDir() + "tr_json_report_" + std::to_string(getpid()) + "_" + name;
}

BenchCase make_case(const std::string& model, const std::string& mode, int ranks, int64_t batch,
                    std::vector<double> step, std::vector<double> cpu, std::map<std::string, double> counters) {
  BenchCase c;
  c.model = model;
  c.mode = mode;
  c.variant = "train_base";
  c.ranks = ranks;
  c.batch = batch;
  c.iterations = 50;
  c.step_ms = std::move(step);
  c.cpu_ms = std::move(cpu);
  c.counters = std::move(counters);
  return c;
}

// Synthetic: shaped like a tr-bench run on one H200, numbers invented.
BenchReport small_report() {
  BenchReport r;
  BenchContext& x = r.context;
  x.date = "2025-01-15T10:30:00+00:00";
  x.host_name = "synthetic-fixture";
  x.executable = "build/bin/tr-bench";
  x.num_cpus = 16;
  x.mhz_per_cpu = 2400;
  x.build_type = "release";
  x.device_kind = "cuda";
  x.device_name = "NVIDIA H200";
  x.driver_version = "560.35.03";
  x.cuda_runtime_version = "12.6";
  x.cudnn_version = "9.5.1";
  x.nccl_version = "2.23.4";
  x.git_commit = "0123456789abcdef0123456789abcdef01234567";
  x.command_line = "synthetic test fixture (tests/json_report_test.cpp), not a measurement";
  const std::map<std::string, double> mlp_det = {
      {"library_calls_per_step", 8}, {"arena_bytes", 9437184}, {"atlas_slots", 24}, {"unique_graphs", 12}};
  auto with = [](std::map<std::string, double> m, std::map<std::string, double> more) {
    m.insert(more.begin(), more.end());
    return m;
  };
  r.cases.push_back(make_case("mlp", "eager", 1, 200, {2.104, 2.051, 2.122, 2.083, 2.150},
                              {2.010, 1.962, 2.031, 1.990, 2.052},
                              with(mlp_det, {{"graph_launches_per_step", 0},
                                             {"kernel_launches_per_step", 27},
                                             {"samples_per_second", 95147.4},
                                             {"gpu_busy_fraction", 0.41}})));
  r.cases.push_back(make_case("mlp", "full-capture", 1, 200, {0.612, 0.598, 0.605, 0.621, 0.609},
                              {0.101, 0.098, 0.099, 0.104, 0.100},
                              with(mlp_det, {{"graph_launches_per_step", 14},
                                             {"kernel_launches_per_step", 0},
                                             {"captured_graphs", 14},
                                             {"capture_ms", 35.5},
                                             {"samples_per_second", 328407.2},
                                             {"gpu_busy_fraction", 0.93}})));
  const std::map<std::string, double> cnn_det = {
      {"library_calls_per_step", 41}, {"arena_bytes", 214958080}, {"atlas_slots", 66}, {"unique_graphs", 31}};
  r.cases.push_back(make_case("cnn", "eager", 1, 256, {9.81, 9.64, 9.92, 9.70, 9.77}, {9.12, 8.97, 9.20, 9.03, 9.08},
                              with(cnn_det, {{"graph_launches_per_step", 0},
                                             {"kernel_launches_per_step", 212},
                                             {"samples_per_second", 26202.7},
                                             {"gpu_busy_fraction", 0.52}})));
  r.cases.push_back(make_case("cnn", "partial-capture", 1, 256, {7.02, 6.95, 7.10, 6.99, 7.05},
                              {4.11, 4.02, 4.20, 4.05, 4.09},
                              with(cnn_det, {{"graph_launches_per_step", 6},
                                             {"kernel_launches_per_step", 118},
                                             {"captured_graphs", 6},
                                             {"capture_ms", 88.0},
                                             {"samples_per_second", 36414.0},
                                             {"gpu_busy_fraction", 0.71}})));
  r.cases.push_back(make_case("cnn", "full-capture", 1, 256, {5.12, 5.08, 5.15, 5.10, 5.11},
                              {0.31, 0.30, 0.32, 0.31, 0.30},
                              with(cnn_det, {{"graph_launches_per_step", 17},
                                             {"kernel_launches_per_step", 0},
                                             {"captured_graphs", 17},
                                             {"capture_ms", 141.25},
                                             {"samples_per_second", 50097.8},
                                             {"gpu_busy_fraction", 0.96}})));
  r.cases.push_back(make_case("cnn", "full-capture", 2, 512, {5.61, 5.55, 5.70, 5.58, 5.63},
                              {0.34, 0.33, 0.35, 0.34, 0.33},
                              with(cnn_det, {{"graph_launches_per_step", 19},
                                             {"kernel_launches_per_step", 0},
                                             {"captured_graphs", 19},
                                             {"capture_ms", 290.5},
                                             {"samples_per_second", 91103.2},
                                             {"samples_per_second_per_gpu", 45551.6},
                                             {"gpu_busy_fraction", 0.91}})));
  return r;
}

// The same cases measured "again": mlp full-capture ~10% slower (clearly),
// cnn eager ~8% faster (clearly), the rest within noise.
BenchReport small_report_b() {
  BenchReport r = small_report();
  r.context.date = "2025-01-16T09:12:00+00:00";
  r.context.git_commit = "89abcdef0123456789abcdef0123456789abcdef";
  r.cases[1].step_ms = {0.671, 0.665, 0.680, 0.659, 0.676};
  r.cases[1].counters["samples_per_second"] = 298953.7;
  r.cases[2].step_ms = {9.02, 8.95, 9.10, 8.99, 9.05};
  r.cases[2].counters["samples_per_second"] = 28381.4;
  r.cases[4].step_ms = {5.14, 5.06, 5.17, 5.09, 5.12};
  return r;
}

void check_golden(const BenchReport& r, const std::string& file) {
  const std::string path = golden_dir() + "/" + file;
  const std::string text = to_json(r).dump(2) + "\n";
  if (std::getenv("TR_UPDATE_GOLDEN")) {
    write_file(path, text);
    GTEST_SKIP() << "rewrote " << path << "; review the diff";
  }
  ASSERT_TRUE(std::filesystem::exists(path)) << path << " is missing; see the comment at the top of this file";
  const std::string want = read_file(path);
  if (text == want) return;
  // Point at the first differing line rather than dumping two large files.
  std::istringstream a(want), b(text);
  std::string la, lb;
  for (int line = 1;; ++line) {
    const bool ga = static_cast<bool>(std::getline(a, la)), gb = static_cast<bool>(std::getline(b, lb));
    if (!ga && !gb) break;
    if (la != lb || ga != gb) {
      ADD_FAILURE() << file << " differs at line " << line << ":\n  golden: " << la << "\n  now:    " << lb;
      return;
    }
  }
}

void expect_same(const BenchReport& a, const BenchReport& b) {
  const BenchContext &x = a.context, &y = b.context;
  EXPECT_EQ(x.date, y.date);
  EXPECT_EQ(x.host_name, y.host_name);
  EXPECT_EQ(x.executable, y.executable);
  EXPECT_EQ(x.num_cpus, y.num_cpus);
  EXPECT_EQ(x.mhz_per_cpu, y.mhz_per_cpu);
  EXPECT_EQ(x.build_type, y.build_type);
  EXPECT_EQ(x.device_kind, y.device_kind);
  EXPECT_EQ(x.device_name, y.device_name);
  EXPECT_EQ(x.driver_version, y.driver_version);
  EXPECT_EQ(x.cuda_runtime_version, y.cuda_runtime_version);
  EXPECT_EQ(x.cudnn_version, y.cudnn_version);
  EXPECT_EQ(x.nccl_version, y.nccl_version);
  EXPECT_EQ(x.git_commit, y.git_commit);
  EXPECT_EQ(x.command_line, y.command_line);
  EXPECT_EQ(x.cudnn_benchmark, y.cudnn_benchmark);
  EXPECT_EQ(x.conv_plans_file, y.conv_plans_file);
  EXPECT_EQ(x.conv_plans_digest, y.conv_plans_digest);
  EXPECT_EQ(x.schema_version, y.schema_version);
  EXPECT_EQ(x.launcher, y.launcher);
  ASSERT_EQ(a.cases.size(), b.cases.size());
  for (size_t i = 0; i < a.cases.size(); ++i) {
    const BenchCase &c = a.cases[i], &d = b.cases[i];
    EXPECT_EQ(c.model, d.model);
    EXPECT_EQ(c.mode, d.mode);
    EXPECT_EQ(c.variant, d.variant);
    EXPECT_EQ(c.ranks, d.ranks);
    EXPECT_EQ(c.batch, d.batch);
    EXPECT_EQ(c.iterations, d.iterations);
    EXPECT_EQ(c.step_ms, d.step_ms);  // bit-exact: doubles are written shortest-round-trip
    EXPECT_EQ(c.cpu_ms, d.cpu_ms);
    EXPECT_EQ(c.counters, d.counters);
  }
}

TEST(JsonReport, GoldenSmall) { check_golden(small_report(), "report_small.json"); }
TEST(JsonReport, GoldenSmallB) { check_golden(small_report_b(), "report_small_b.json"); }

TEST(JsonReport, GoogleBenchmarkLayout) {
  const BenchReport r = small_report();
  const nlohmann::ordered_json j = to_json(r);
  const auto& ctx = j.at("context");
  for (const char* k :
       {"date", "host_name", "executable", "num_cpus", "mhz_per_cpu", "cpu_scaling_enabled", "caches", "load_avg",
        "library_build_type", "tr_schema_version", "device_kind", "device_name", "driver_version",
        "cuda_runtime_version", "cudnn_version", "nccl_version", "git_commit", "command_line"})
    EXPECT_TRUE(ctx.contains(k)) << k;
  EXPECT_EQ(ctx.at("cpu_scaling_enabled"), false);
  EXPECT_EQ(ctx.at("tr_schema_version"), kReportSchemaVersion);

  const auto& bm = j.at("benchmarks");
  ASSERT_EQ(bm.size(), r.cases.size() * (5 + 4));
  // Case 0: five iterations then mean, median, stddev, cv, as Google Benchmark orders them.
  const BenchCase& c = r.cases[0];
  const std::string name = c.name("cuda");
  EXPECT_EQ(name, "train_step/model:mlp/variant:train_base/mode:eager/gpus:1/batch:200");
  for (int i = 0; i < 5; ++i) {
    const auto& e = bm[i];
    EXPECT_EQ(e.at("name"), name);
    EXPECT_EQ(e.at("run_name"), name);
    EXPECT_EQ(e.at("run_type"), "iteration");
    EXPECT_EQ(e.at("repetitions"), 5);
    EXPECT_EQ(e.at("repetition_index"), i);
    EXPECT_EQ(e.at("threads"), 1);
    EXPECT_EQ(e.at("family_index"), 0);
    EXPECT_EQ(e.at("per_family_instance_index"), 0);
    EXPECT_EQ(e.at("iterations"), 50);
    EXPECT_EQ(e.at("real_time"), c.step_ms[i]);
    EXPECT_EQ(e.at("cpu_time"), c.cpu_ms[i]);
    EXPECT_EQ(e.at("time_unit"), "ms");
    EXPECT_EQ(e.at("kernel_launches_per_step"), 27);
    EXPECT_EQ(e.at("model"), "mlp");
    EXPECT_EQ(e.at("batch"), 200);
    EXPECT_EQ(e.begin().key(), "name");  // Google Benchmark's key order
  }
  const char* aggs[] = {"mean", "median", "stddev", "cv"};
  const double want_real[] = {mean(c.step_ms), median(c.step_ms), stddev(c.step_ms), cv(c.step_ms)};
  for (int k = 0; k < 4; ++k) {
    const auto& e = bm[5 + k];
    EXPECT_EQ(e.at("name"), name + "_" + aggs[k]);
    EXPECT_EQ(e.at("run_name"), name);
    EXPECT_EQ(e.at("run_type"), "aggregate");
    EXPECT_EQ(e.at("aggregate_name"), aggs[k]);
    EXPECT_EQ(e.at("aggregate_unit"), k == 3 ? "percentage" : "time");
    EXPECT_FALSE(e.contains("repetition_index"));
    EXPECT_EQ(e.at("iterations"), 5);
    EXPECT_DOUBLE_EQ(e.at("real_time").get<double>(), want_real[k]);
    EXPECT_EQ(e.at("kernel_launches_per_step"), k < 2 ? 27.0 : 0.0);
  }
  EXPECT_EQ(bm[9].at("per_family_instance_index"), 1);  // the next case
}

TEST(JsonReport, RoundTrip) {
  BenchReport r = small_report();
  r.context.cudnn_benchmark = true;  // Note [convolution plan books]
  r.context.conv_plans_file = "plans/h200 cnn.json";
  r.context.conv_plans_digest = "00ff1234abcd5678";
  const std::string path = temp_path("roundtrip.json");
  write_report(r, path);
  expect_same(r, read_report(path));
}

TEST(JsonReport, RoundTripCpuAndAwkwardValues) {
  BenchReport r = small_report();
  r.context.device_kind = "cpu";
  r.context.device_name = "AMD EPYC \"Genoa\" <9654> & co \xC3\xA9";
  r.context.command_line = "tr-bench --out 'a b.json'\n--next-line";
  r.context.mhz_per_cpu = 2399.987;
  r.cases.resize(2);
  r.cases[0].ranks = 4;
  r.cases[0].step_ms = {0.1 + 0.2, 1e-9, 12345.678901234567};
  r.cases[0].cpu_ms = {0.3, 0, 1.0 / 3};
  r.cases[0].counters = {{"arena_bytes", 1099511627777.0}, {"gpu_busy_fraction", 1.0 / 7}};
  r.cases[1].step_ms = {3.5};  // one repetition: no spread, still valid
  r.cases[1].cpu_ms = {0.5};
  r.cases[1].counters.clear();
  const std::string path = temp_path("awkward.json");
  write_report(r, path);
  const BenchReport back = read_report(path);
  expect_same(r, back);
  EXPECT_EQ(back.cases[0].name("cpu"), "train_step/model:mlp/variant:train_base/mode:eager/ranks:4/batch:200");
}

TEST(JsonReport, WriterRejectsBrokenCases) {
  BenchReport r = small_report();
  r.cases[0].counters["batch"] = 1;  // would shadow the case's own key
  EXPECT_THROW(to_json(r), Error);
  r = small_report();
  r.cases[0].cpu_ms.pop_back();
  EXPECT_THROW(to_json(r), Error);
  r = small_report();
  r.cases[0].step_ms[0] = std::nan("");
  EXPECT_THROW(to_json(r), Error);
  r = small_report();
  r.cases.push_back(r.cases[0]);  // duplicate name
  EXPECT_THROW(to_json(r), Error);
  EXPECT_THROW(write_report(small_report(), "/nonexistent-dir/x.json"), UserError);
}

// Expects read_report to fail with one line that names the file and `needle`.
void expect_bad(const std::string& path, const std::string& needle) {
  try {
    read_report(path);
    ADD_FAILURE() << "no error for " << path << " (wanted: " << needle << ")";
  } catch (const UserError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(path), std::string::npos) << msg;
    EXPECT_NE(msg.find(needle), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
}

// The golden report as JSON, changed by `edit`, written to a temp file.
std::string edited(const std::string& name, const std::function<void(nlohmann::json&)>& edit) {
  nlohmann::json j = nlohmann::json::parse(to_json(small_report()).dump());
  edit(j);
  const std::string path = temp_path(name);
  write_file(path, j.dump(1));
  return path;
}

TEST(JsonReport, BadFiles) {
  expect_bad(temp_path("does-not-exist.json"), "no such file");
  expect_bad(testing::TempDir(), "is a directory, not a file");
  const std::string fifo = temp_path("fifo.json");
  ::unlink(fifo.c_str());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  expect_bad(fifo, "not a regular file");  // refused before it is opened: no hang
  const std::string garbage = temp_path("garbage.json");
  write_file(garbage, "{\"context\": {\n\"date\": ");
  expect_bad(garbage, "not valid JSON");
  const std::string gb = temp_path("plain_gbench.json");
  write_file(gb, R"({"context": {"date": "x", "library_build_type": "release"},
                    "benchmarks": [{"name": "BM_x", "run_type": "iteration", "real_time": 1, "cpu_time": 1,
                                    "time_unit": "ns", "iterations": 10}]})");
  expect_bad(gb, "tr_schema_version is missing");
  expect_bad(edited("array.json", [](nlohmann::json& j) { j = nlohmann::json::array(); }), "not a JSON object");
  expect_bad(edited("v2.json", [](nlohmann::json& j) { j["context"]["tr_schema_version"] = 2; }),
             "schema version 2; this tr-bench reads version 1");
  expect_bad(edited("nodev.json", [](nlohmann::json& j) { j["context"].erase("device_name"); }),
             "context: missing 'device_name'");
  expect_bad(edited("nobench.json", [](nlohmann::json& j) { j.erase("benchmarks"); }), "missing 'benchmarks'");
  expect_bad(edited("launch.json", [](nlohmann::json& j) { j["context"]["launch"] = "fibers"; }),
             "launch must be threads, processes or nodes, got 'fibers'");
  expect_bad(edited("procs.json", [](nlohmann::json& j) { j["context"]["processes"] = 0; }),
             "processes must be >= 1, got 0");
  expect_bad(edited("digest.json", [](nlohmann::json& j) { j["context"]["conv_plans_digest"] = "00FF"; }),
             "conv_plans_digest must be 16 hex digits, got '00FF'");
  expect_bad(edited("noreal.json", [](nlohmann::json& j) { j["benchmarks"][0].erase("real_time"); }),
             "benchmarks[0] ('train_step/model:mlp/variant:train_base/mode:eager/gpus:1/batch:200'): missing "
             "'real_time'");
  expect_bad(edited("strreal.json", [](nlohmann::json& j) { j["benchmarks"][2]["real_time"] = "fast"; }),
             "benchmarks[2] ('train_step/model:mlp/variant:train_base/mode:eager/gpus:1/batch:200'): 'real_time' is "
             "not a number");
  expect_bad(edited("fracbatch.json", [](nlohmann::json& j) { j["benchmarks"][0]["batch"] = 200.5; }),
             "'batch' is not an integer");
  expect_bad(edited("unit.json", [](nlohmann::json& j) { j["benchmarks"][0]["time_unit"] = "fortnights"; }),
             "unknown time_unit 'fortnights'");
  expect_bad(edited("gap.json", [](nlohmann::json& j) { j["benchmarks"].erase(2); }),
             "repetition_index 2 of 5 is missing");
  expect_bad(edited("twice.json", [](nlohmann::json& j) { j["benchmarks"][1]["repetition_index"] = 0; }),
             "repetition_index 0 appears twice");
  expect_bad(edited("rename.json", [](nlohmann::json& j) { j["benchmarks"][0]["batch"] = 128; }),
             "name does not match");
  expect_bad(edited("detdiff.json", [](nlohmann::json& j) { j["benchmarks"][3]["kernel_launches_per_step"] = 28; }),
             "deterministic counter 'kernel_launches_per_step' differs between repetitions");
  expect_bad(edited("lost.json", [](nlohmann::json& j) { j["benchmarks"][4].erase("arena_bytes"); }),
             "counter 'arena_bytes' is missing from repetition 4");
}

// Values a writer never produces: each names its place; numbers past a
// double's range and repeated keys are caught while parsing.
TEST(JsonReport, RefusesValuesOutOfRangeAndRepeatedKeys) {
  const std::string good = to_json(small_report()).dump(1);
  auto with_text = [&](const std::string& name, const std::string& from, const std::string& to) {
    std::string t = good;
    const size_t at = t.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    t.replace(at, from.size(), to);
    const std::string path = temp_path(name);
    write_file(path, t);
    return path;
  };
  expect_bad(with_text("e999.json", "\"num_cpus\": ", "\"num_cpus\": 1e999, \"x\": "),
             "a number is out of range (number overflow parsing '1e999')");
  const std::string digits =
      with_text("digits.json", "\"num_cpus\": ", "\"num_cpus\": " + std::string(400, '9') + ", \"x\": ");
  expect_bad(digits, "a number is out of range");
  try {
    read_report(digits);
  } catch (const UserError& e) {
    EXPECT_LT(std::string(e.what()).size(), 400u) << "the 400 digits are not quoted whole";
  }
  expect_bad(with_text("dupkey.json", "\"real_time\": ", "\"real_time\": 1, \"real_time\": "),
             "key 'benchmarks[0].real_time' appears twice");
  expect_bad(with_text("dupctx.json", "\"date\": ", "\"date\": \"x\", \"date\": "), "key 'context.date' appears twice");
  const std::string where = "benchmarks[0] ('train_step/model:mlp/variant:train_base/mode:eager/gpus:1/batch:200'): ";
  expect_bad(edited("negreal.json", [](nlohmann::json& j) { j["benchmarks"][0]["real_time"] = -13.5; }),
             where + "real_time must be > 0, got -13.5");
  expect_bad(edited("zeroreal.json", [](nlohmann::json& j) { j["benchmarks"][0]["real_time"] = 0; }),
             where + "real_time must be > 0, got 0");
  expect_bad(edited("negcpu.json", [](nlohmann::json& j) { j["benchmarks"][0]["cpu_time"] = -1; }),
             where + "cpu_time must be >= 0, got -1");
  expect_bad(edited("strctr.json", [](nlohmann::json& j) { j["benchmarks"][0]["arena_bytes"] = "12"; }),
             where + "counter 'arena_bytes' is not a number (\"12\")");
  expect_bad(edited("negctr.json", [](nlohmann::json& j) { j["benchmarks"][0]["samples_per_second"] = -5; }),
             where + "counter 'samples_per_second' must be >= 0, got -5");
  expect_bad(edited("busy.json", [](nlohmann::json& j) { j["benchmarks"][0]["gpu_busy_fraction"] = 1.25; }),
             where + "counter 'gpu_busy_fraction' is a fraction and must be <= 1, got 1.25");
  expect_bad(edited("resident.json", [](nlohmann::json& j) { j["benchmarks"][0]["gpu_resident_fraction"] = 1.5; }),
             where + "counter 'gpu_resident_fraction' is a fraction and must be <= 1, got 1.5");
  expect_bad(edited("ranks0.json", [](nlohmann::json& j) { j["benchmarks"][0]["ranks"] = 0; }),
             "ranks must be >= 1, got 0");
  expect_bad(edited("iters0.json", [](nlohmann::json& j) { j["benchmarks"][0]["iterations"] = 0; }),
             "iterations must be >= 1, got 0");
}

// Note [processes and ranks]: how the ranks ran travels with the report, and
// reports from before the MPI launch read as threads.
TEST(JsonReport, LaunchContextRoundTripsAndDefaultsToThreads) {
  BenchReport r = small_report();
  r.context.launch = "nodes";
  r.context.processes = 16;
  r.context.hosts = "node1,node2";
  r.context.mpi_version = "Open MPI v4.1.4";
  r.context.launcher = "srun";
  const std::string path = temp_path("launch.json");
  write_report(r, path);
  const BenchReport back = read_report(path);
  EXPECT_EQ(back.context.launch, "nodes");
  EXPECT_EQ(back.context.processes, 16);
  EXPECT_EQ(back.context.hosts, "node1,node2");
  EXPECT_EQ(back.context.mpi_version, "Open MPI v4.1.4");
  EXPECT_EQ(back.context.launcher, "srun");
  const BenchReport old = read_report(edited("old.json", [](nlohmann::json& j) {
    for (const char* k : {"launch", "processes", "hosts", "mpi_version", "launcher"}) j["context"].erase(k);
  }));
  EXPECT_EQ(old.context.launcher, "none");
  expect_bad(edited("launcher.json", [](nlohmann::json& j) { j["context"]["launcher"] = "qsub"; }),
             "launcher must be none, mpirun, srun or pmi, got 'qsub'");
  EXPECT_EQ(old.context.launch, "threads");
  EXPECT_EQ(old.context.processes, 1);
  EXPECT_EQ(old.context.mpi_version, "none");
}

// Note [machine state]: the GPU's state round-trips as strings, is absent
// from older reports, and anything but a string is refused.
TEST(JsonReport, GpuStateRoundTripsAndHoldsStrings) {
  BenchReport r = small_report();
  r.context.gpu_state = {{"nvml", "ok"}, {"uuid", "GPU-0123"}, {"power_limit_w", "700"}, {"ecc", "on"}};
  const std::string path = temp_path("gpu_state.json");
  write_report(r, path);
  EXPECT_EQ(read_report(path).context.gpu_state, r.context.gpu_state);
  EXPECT_TRUE(read_report(edited("no_state.json", [](nlohmann::json& j) {
                j["context"].erase("gpu_state");
              })).context.gpu_state.empty());
  expect_bad(edited("state_number.json", [](nlohmann::json& j) { j["context"]["gpu_state"]["power_limit_w"] = 700; }),
             "gpu_state.power_limit_w must be a string");
  expect_bad(edited("state_list.json", [](nlohmann::json& j) { j["context"]["gpu_state"] = nlohmann::json::array(); }),
             "gpu_state must be an object");
}

TEST(JsonReport, ReaderToleratesOtherUnitsAndIgnoresAggregates) {
  const std::string path = edited("units.json", [](nlohmann::json& j) {
    for (auto& e : j["benchmarks"]) {
      if (e["run_type"] == "aggregate") {
        e["real_time"] = -1;  // nonsense: aggregates are recomputed, never read
        continue;
      }
      e["real_time"] = e["real_time"].get<double>() * 1000;
      e["time_unit"] = "us";
    }
  });
  const BenchReport back = read_report(path);
  ASSERT_EQ(back.cases.size(), 6u);
  // ms -> us -> ms: a double rounding or two of 4.4e-16 at 2.1; a unit left unconverted is off by 1000x.
  EXPECT_NEAR(back.cases[0].step_ms[0], 2.104, 1e-12);
}

TEST(JsonReport, MeasuredCountersThatVaryAreAveraged) {
  const std::string path = edited("vary.json", [](nlohmann::json& j) {
    for (int i = 0; i < 5; ++i) j["benchmarks"][i]["samples_per_second"] = 1000.0 * (i + 1);
  });
  EXPECT_DOUBLE_EQ(read_report(path).cases[0].counters.at("samples_per_second"), 3000.0);
}

}  // namespace
}  // namespace tr::bench
