#include "harness/lib/report/json_report.h"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>

#include "framework/core/error.h"
#include "harness/lib/report/atomic_file.h"
#include "harness/lib/report/json_file.h"
#include "harness/lib/report/statistics.h"

namespace tr::bench {

using ojson = nlohmann::ordered_json;
using json = nlohmann::json;

bool is_reserved_entry_key(const std::string& key) {
  static const std::set<std::string> k = {
      // Google Benchmark's entry keys (src/json_reporter.cc) ...
      "name", "family_index", "per_family_instance_index", "run_name", "run_type", "repetitions", "repetition_index",
      "threads", "aggregate_name", "aggregate_unit", "iterations", "real_time", "cpu_time", "time_unit", "label",
      "error_occurred", "error_message", "skipped", "skip_message", "cpu_coefficient", "real_coefficient", "big_o",
      "rms", "allocs_per_iter", "max_bytes_used",
      // ... and ours, which rebuild the BenchCase.
      "model", "mode", "variant", "ranks", "batch"};
  return k.count(key) > 0;
}

namespace {

// ---------------------------------------------------------------- writing

struct Aggregate {
  const char* name;
  const char* unit;  // Google Benchmark's aggregate_unit: cv is a ratio, the rest a time
  double (*fn)(const std::vector<double>&);
};
constexpr Aggregate kAggregates[] = {
    {"mean", "time", &mean}, {"median", "time", &median}, {"stddev", "time", &stddev}, {"cv", "percentage", &cv}};

void check_finite(double v, const std::string& what, const std::string& case_name) {
  // JSON has no NaN/Inf (nlohmann would write null): a non-finite measurement
  // is a bug in whatever produced it.
  TR_CHECK(std::isfinite(v), what, " of ", case_name, " is not finite: ", v);
}

// Whole numbers (launch counts, bytes, MHz) as JSON integers, which read better
// and parse back to the same double; everything else in shortest round-trip form.
ojson number(double v) {
  if (std::trunc(v) == v && std::abs(v) < 9007199254740992.0) return static_cast<int64_t>(v);
  return v;
}

void put_case_keys(ojson& e, const BenchCase& c) {
  e["model"] = c.model;
  e["mode"] = c.mode;
  e["variant"] = c.variant;
  e["ranks"] = c.ranks;
  e["batch"] = c.batch;
}

}  // namespace

ojson context_to_json(const BenchContext& x) {
  ojson ctx;
  ctx["date"] = x.date;
  ctx["host_name"] = x.host_name;
  ctx["executable"] = x.executable;
  ctx["num_cpus"] = x.num_cpus;
  ctx["mhz_per_cpu"] = number(x.mhz_per_cpu);
  ctx["cpu_scaling_enabled"] = false;
  ctx["caches"] = ojson::array();
  ctx["load_avg"] = ojson::array();
  ctx["library_build_type"] = x.build_type;
  ctx["tr_schema_version"] = x.schema_version;
  ctx["device_kind"] = x.device_kind;
  ctx["device_name"] = x.device_name;
  ctx["driver_version"] = x.driver_version;
  ctx["cuda_runtime_version"] = x.cuda_runtime_version;
  ctx["cudnn_version"] = x.cudnn_version;
  ctx["nccl_version"] = x.nccl_version;
  ctx["git_commit"] = x.git_commit;
  ctx["command_line"] = x.command_line;
  ctx["precision"] = x.precision;
  ctx["bn_sync"] = x.bn_sync;
  ctx["bucket_mb"] = x.bucket_mb;
  ctx["cudnn_benchmark"] = x.cudnn_benchmark;
  ctx["conv_plans_file"] = x.conv_plans_file;
  ctx["conv_plans_digest"] = x.conv_plans_digest;
  ctx["fusion"] = x.fusion;
  ctx["deterministic_algorithms"] = x.deterministic;
  ctx["programmatic_launch"] = x.programmatic_launch;
  ctx["tc_filter_grad"] = x.tc_filter_grad;
  ctx["memset_kernels"] = x.memset_kernels;
  ctx["grid_sync"] = x.grid_sync;
  ctx["host_delay_us"] = x.host_delay_us;
  ctx["side_streams"] = x.side_streams;
  ctx["launch"] = x.launch;
  ctx["processes"] = x.processes;
  ctx["hosts"] = x.hosts;
  ctx["mpi_version"] = x.mpi_version;
  ctx["launcher"] = x.launcher;
  if (!x.gpu_state.empty()) {
    ojson g = ojson::object();
    for (const auto& [k, v] : x.gpu_state) g[k] = v;
    ctx["gpu_state"] = g;
  }
  return ctx;
}

ojson to_json(const BenchReport& r) {
  const BenchContext& x = r.context;
  ojson ctx = context_to_json(x);

  ojson benchmarks = ojson::array();
  std::set<std::string> names;
  for (size_t ci = 0; ci < r.cases.size(); ++ci) {
    const BenchCase& c = r.cases[ci];
    const std::string name = c.name(x.device_kind);
    TR_CHECK(names.insert(name).second, "two cases named ", name);
    const size_t reps = c.step_ms.size();
    TR_CHECK(reps >= 1, name, " has no repetitions");
    TR_CHECK(c.cpu_ms.size() == reps, name, ": ", reps, " step times but ", c.cpu_ms.size(), " cpu times");
    for (size_t i = 0; i < reps; ++i) {
      check_finite(c.step_ms[i], "step_ms", name);
      check_finite(c.cpu_ms[i], "cpu_ms", name);
    }
    for (const auto& [k, v] : c.counters) {
      TR_CHECK(!is_reserved_entry_key(k), "counter '", k, "' of ", name, " collides with a report key");
      check_finite(v, "counter " + k, name);
    }

    // Google Benchmark: one family ("train_step"), one instance per case.
    auto header = [&](ojson& e, const std::string& entry_name) {
      e["name"] = entry_name;
      e["family_index"] = 0;
      e["per_family_instance_index"] = ci;
      e["run_name"] = name;
    };
    for (size_t i = 0; i < reps; ++i) {
      ojson e;
      header(e, name);
      e["run_type"] = "iteration";
      e["repetitions"] = reps;
      e["repetition_index"] = i;
      e["threads"] = 1;
      e["iterations"] = c.iterations;
      e["real_time"] = c.step_ms[i];
      e["cpu_time"] = c.cpu_ms[i];
      e["time_unit"] = "ms";
      put_case_keys(e, c);
      // BenchCase holds one value per counter, so every repetition carries it.
      for (const auto& [k, v] : c.counters) e[k] = number(v);
      benchmarks.push_back(std::move(e));
    }
    for (const Aggregate& a : kAggregates) {
      ojson e;
      header(e, name + "_" + a.name);
      e["run_type"] = "aggregate";
      e["repetitions"] = reps;
      e["threads"] = 1;
      e["aggregate_name"] = a.name;
      e["aggregate_unit"] = a.unit;
      e["iterations"] = reps;  // as Google Benchmark: the number of repetitions aggregated
      e["real_time"] = a.fn(c.step_ms);
      e["cpu_time"] = a.fn(c.cpu_ms);
      e["time_unit"] = "ms";
      put_case_keys(e, c);
      // One value per counter (see above): its mean and median are the value
      // itself, its spread is zero.
      const bool spread = a.fn == &stddev || a.fn == &cv;
      for (const auto& [k, v] : c.counters) e[k] = spread ? ojson(0) : number(v);
      benchmarks.push_back(std::move(e));
    }
  }

  ojson j;
  j["context"] = std::move(ctx);
  j["benchmarks"] = std::move(benchmarks);
  return j;
}

void write_report(const BenchReport& report, const std::string& path) {
  write_file_atomically(path, to_json(report).dump(2) + "\n");
}

// ---------------------------------------------------------------- reading

namespace {

std::string one_line(std::string s) {
  for (char& ch : s)
    if (ch == '\n' || ch == '\r') ch = ' ';
  return s;
}

// Field access that fails with one line naming the file, the place and the key.
class Reader {
 public:
  explicit Reader(const std::string& path) : path_(path) {}

  [[noreturn]] void fail(const std::string& where, const std::string& what) const {
    throw UserError(one_line(cat("report '", path_, "': ", where.empty() ? "" : where + ": ", what)));
  }

  const json& field(const json& obj, const std::string& key, const std::string& where) const {
    const auto it = obj.find(key);
    if (it == obj.end()) fail(where, cat("missing '", key, "'"));
    return *it;
  }
  std::string str(const json& obj, const std::string& key, const std::string& where) const {
    const json& v = field(obj, key, where);
    if (!v.is_string()) fail(where, cat("'", key, "' is not a string"));
    return v.get<std::string>();
  }
  double num(const json& obj, const std::string& key, const std::string& where) const {
    const json& v = field(obj, key, where);
    if (!v.is_number()) fail(where, cat("'", key, "' is not a number"));
    return v.get<double>();
  }
  int64_t integer(const json& obj, const std::string& key, const std::string& where) const {
    const json& v = field(obj, key, where);
    if (v.is_number_integer()) return v.get<int64_t>();
    if (v.is_number_float()) {
      const double d = v.get<double>();
      if (std::trunc(d) == d && std::abs(d) < 9e15) return static_cast<int64_t>(d);
    }
    fail(where, cat("'", key, "' is not an integer"));
  }

 private:
  std::string path_;
};

double ms_per_unit(const Reader& rd, const std::string& unit, const std::string& where) {
  if (unit == "ms") return 1;
  if (unit == "us") return 1e-3;
  if (unit == "ns") return 1e-6;
  if (unit == "s") return 1e3;
  rd.fail(where, cat("unknown time_unit '", unit, "'"));
}

// One case while its repetitions are collected.
struct Partial {
  BenchCase c;
  std::string where;  // of the first entry, for errors
  int64_t repetitions = 0;
  std::vector<std::optional<double>> step, cpu;
  std::vector<std::map<std::string, double>> counters;
};

BenchContext context_from_json(const Reader& rd, const json& ctx) {
  BenchContext x;
  x.schema_version = static_cast<int>(rd.integer(ctx, "tr_schema_version", "context"));
  if (x.schema_version != kReportSchemaVersion)
    rd.fail("", cat("schema version ", x.schema_version, "; this tr-bench reads version ", kReportSchemaVersion));
  x.date = rd.str(ctx, "date", "context");
  x.host_name = rd.str(ctx, "host_name", "context");
  x.executable = rd.str(ctx, "executable", "context");
  x.num_cpus = static_cast<int>(rd.integer(ctx, "num_cpus", "context"));
  x.mhz_per_cpu = rd.num(ctx, "mhz_per_cpu", "context");
  x.build_type = rd.str(ctx, "library_build_type", "context");
  x.device_kind = rd.str(ctx, "device_kind", "context");
  x.device_name = rd.str(ctx, "device_name", "context");
  x.driver_version = rd.str(ctx, "driver_version", "context");
  x.cuda_runtime_version = rd.str(ctx, "cuda_runtime_version", "context");
  x.cudnn_version = rd.str(ctx, "cudnn_version", "context");
  x.nccl_version = rd.str(ctx, "nccl_version", "context");
  x.git_commit = rd.str(ctx, "git_commit", "context");
  x.command_line = rd.str(ctx, "command_line", "context");
  x.precision =
      ctx.contains("precision") && ctx["precision"].is_string() ? ctx["precision"].get<std::string>() : "fp32";
  // Reports from before --bn-sync existed ran synchronised BN.
  x.bn_sync = ctx.contains("bn_sync") && ctx["bn_sync"].is_string() ? ctx["bn_sync"].get<std::string>() : "batch";
  // Reports from before --bucket-mb existed all-reduced the deep gradients in one
  // message, which is what 25 MB gives their models (mlp, cnn).
  x.bucket_mb = ctx.contains("bucket_mb") && ctx["bucket_mb"].is_number() ? ctx["bucket_mb"].get<double>() : 25.0;
  x.cudnn_benchmark =
      ctx.contains("cudnn_benchmark") && ctx["cudnn_benchmark"].is_boolean() && ctx["cudnn_benchmark"].get<bool>();
  x.conv_plans_file = ctx.contains("conv_plans_file") ? rd.str(ctx, "conv_plans_file", "context") : "";
  x.conv_plans_digest = ctx.contains("conv_plans_digest") ? rd.str(ctx, "conv_plans_digest", "context") : "";
  if (x.conv_plans_digest.size() != 0 &&
      (x.conv_plans_digest.size() != 16 ||
       x.conv_plans_digest.find_first_not_of("0123456789abcdef") != std::string::npos))
    rd.fail("context", cat("conv_plans_digest must be 16 hex digits, got '", x.conv_plans_digest, "'"));
  x.fusion = ctx.contains("fusion") && ctx["fusion"].is_boolean() && ctx["fusion"].get<bool>();
  x.deterministic = !ctx.contains("deterministic_algorithms") || !ctx["deterministic_algorithms"].is_boolean() ||
                    ctx["deterministic_algorithms"].get<bool>();
  x.programmatic_launch = ctx.contains("programmatic_launch") && ctx["programmatic_launch"].is_boolean() &&
                          ctx["programmatic_launch"].get<bool>();
  x.tc_filter_grad =
      ctx.contains("tc_filter_grad") && ctx["tc_filter_grad"].is_boolean() && ctx["tc_filter_grad"].get<bool>();
  x.memset_kernels =
      ctx.contains("memset_kernels") && ctx["memset_kernels"].is_boolean() && ctx["memset_kernels"].get<bool>();
  x.grid_sync = ctx.contains("grid_sync") && ctx["grid_sync"].is_boolean() && ctx["grid_sync"].get<bool>();
  x.host_delay_us = ctx.contains("host_delay_us") ? rd.integer(ctx, "host_delay_us", "context") : 0;
  if (x.host_delay_us < 0) rd.fail("context", cat("host_delay_us must be at least 0, got ", x.host_delay_us));
  x.side_streams =
      ctx.contains("side_streams") && ctx["side_streams"].is_string() ? ctx["side_streams"].get<std::string>() : "off";
  // Reports from before the MPI launch ran every rank as a thread of one process.
  auto text = [&](const char* k, const char* dflt) {
    return ctx.contains(k) ? rd.str(ctx, k, "context") : std::string(dflt);
  };
  x.launch = text("launch", "threads");
  if (x.launch != "threads" && x.launch != "processes" && x.launch != "nodes")
    rd.fail("context", cat("launch must be threads, processes or nodes, got '", x.launch, "'"));
  x.processes = ctx.contains("processes") ? static_cast<int>(rd.integer(ctx, "processes", "context")) : 1;
  if (x.processes < 1) rd.fail("context", cat("processes must be >= 1, got ", x.processes));
  x.hosts = text("hosts", "");
  x.mpi_version = text("mpi_version", "none");
  x.launcher = text("launcher", "none");  // reports from before it was recorded
  if (x.launcher != "none" && x.launcher != "mpirun" && x.launcher != "srun" && x.launcher != "pmi")
    rd.fail("context", cat("launcher must be none, mpirun, srun or pmi, got '", x.launcher, "'"));
  if (ctx.contains("gpu_state")) {  // Note [machine state]; absent from older reports
    const auto& g = ctx["gpu_state"];
    if (!g.is_object()) rd.fail("context", "gpu_state must be an object");
    for (auto it = g.begin(); it != g.end(); ++it) {
      if (!it.value().is_string()) rd.fail("context", cat("gpu_state.", it.key(), " must be a string"));
      x.gpu_state[it.key()] = it.value().get<std::string>();
    }
  }
  return x;
}

// Every key of an entry that is not one of Google Benchmark's own is a
// counter: a count, bytes, a time, a rate or a fraction, so a number >= 0
// (reports/schema.md, "What a reader refuses").
std::map<std::string, double> entry_counters(const Reader& rd, const json& e, const std::string& where) {
  std::map<std::string, double> counters;
  for (auto it = e.begin(); it != e.end(); ++it) {
    if (is_reserved_entry_key(it.key())) continue;
    if (!it->is_number()) rd.fail(where, cat("counter '", it.key(), "' is not a number (", it->dump(), ")"));
    const double v = it->get<double>();
    if (!(v >= 0)) rd.fail(where, cat("counter '", it.key(), "' must be >= 0, got ", it->dump()));
    if (is_fraction_counter(it.key()) && v > 1)
      rd.fail(where, cat("counter '", it.key(), "' is a fraction and must be <= 1, got ", it->dump()));
    counters[it.key()] = v;
  }
  return counters;
}

// One entry of "benchmarks": a repetition of a case, into parts (new cases
// appended to order).
void read_entry(const Reader& rd, const json& e, size_t bi, const BenchContext& x, std::vector<std::string>& order,
                std::map<std::string, Partial>& parts) {
  std::string where = cat("benchmarks[", bi, "]");
  if (!e.is_object()) rd.fail(where, "not an object");
  const std::string name = rd.str(e, "name", where);
  where += " ('" + name + "')";
  const std::string run_type = rd.str(e, "run_type", where);
  if (run_type == "aggregate") return;  // recomputed from the repetitions
  if (run_type != "iteration") rd.fail(where, cat("unknown run_type '", run_type, "'"));

  BenchCase c;
  c.model = rd.str(e, "model", where);
  c.mode = rd.str(e, "mode", where);
  c.variant = rd.str(e, "variant", where);
  c.ranks = static_cast<int>(rd.integer(e, "ranks", where));
  c.batch = rd.integer(e, "batch", where);
  c.iterations = static_cast<int>(rd.integer(e, "iterations", where));
  if (c.ranks < 1) rd.fail(where, cat("ranks must be >= 1, got ", c.ranks));
  if (c.batch < 1) rd.fail(where, cat("batch must be >= 1, got ", c.batch));
  if (c.iterations < 1) rd.fail(where, cat("iterations must be >= 1, got ", c.iterations));
  if (const std::string expect = c.name(x.device_kind); name != expect)
    rd.fail(where, cat("name does not match its model/variant/mode/ranks/batch keys (expected '", expect, "')"));
  const std::string run_name = e.contains("run_name") ? rd.str(e, "run_name", where) : name;
  if (run_name != name) rd.fail(where, cat("run_name '", run_name, "' differs from name"));
  const int64_t reps = rd.integer(e, "repetitions", where);
  if (reps < 1 || reps > 1000000) rd.fail(where, cat("repetitions ", reps, " out of range"));
  const int64_t index = rd.integer(e, "repetition_index", where);
  if (index < 0 || index >= reps) rd.fail(where, cat("repetition_index ", index, " not in [0, ", reps, ")"));
  const double unit = ms_per_unit(rd, rd.str(e, "time_unit", where), where);
  const double real = rd.num(e, "real_time", where) * unit;
  const double cpu = rd.num(e, "cpu_time", where) * unit;
  if (!(real > 0)) rd.fail(where, cat("real_time must be > 0, got ", e["real_time"].dump()));
  if (!(cpu >= 0)) rd.fail(where, cat("cpu_time must be >= 0, got ", e["cpu_time"].dump()));
  std::map<std::string, double> counters = entry_counters(rd, e, where);

  auto [pit, fresh] = parts.try_emplace(name);
  Partial& p = pit->second;
  if (fresh) {
    order.push_back(name);
    p.c = c;
    p.where = where;
    p.repetitions = reps;
    p.step.resize(reps);
    p.cpu.resize(reps);
    p.counters.resize(reps);
  } else {
    auto agree = [&](bool same, const char* key) {
      if (!same) rd.fail(where, cat("'", key, "' differs from ", p.where));
    };
    agree(p.repetitions == reps, "repetitions");
    agree(p.c.iterations == c.iterations, "iterations");
  }
  if (p.step[index]) rd.fail(where, cat("repetition_index ", index, " appears twice"));
  p.step[index] = real;
  p.cpu[index] = cpu;
  p.counters[index] = std::move(counters);
}

// A case from its repetitions, each present once with the same counters.
BenchCase case_from_parts(const Reader& rd, const Partial& p) {
  for (int64_t i = 0; i < p.repetitions; ++i)
    if (!p.step[i]) rd.fail(p.where, cat("repetition_index ", i, " of ", p.repetitions, " is missing"));
  BenchCase c = p.c;
  for (int64_t i = 0; i < p.repetitions; ++i) {
    c.step_ms.push_back(*p.step[i]);
    c.cpu_ms.push_back(*p.cpu[i]);
  }
  // Every repetition must carry the same counters; deterministic ones must
  // agree exactly, measured ones are averaged when they differ.
  for (const auto& [key, first] : p.counters[0]) {
    std::vector<double> values;
    for (int64_t i = 0; i < p.repetitions; ++i) {
      const auto it = p.counters[i].find(key);
      if (it == p.counters[i].end()) rd.fail(p.where, cat("counter '", key, "' is missing from repetition ", i));
      values.push_back(it->second);
    }
    const bool all_same = min_value(values) == max_value(values);
    if (!all_same && is_deterministic_counter(key))
      rd.fail(p.where, cat("deterministic counter '", key, "' differs between repetitions"));
    c.counters[key] = all_same ? first : mean(values);
  }
  for (int64_t i = 1; i < p.repetitions; ++i)
    if (p.counters[i].size() != p.counters[0].size())
      rd.fail(p.where, cat("repetition ", i, " has counters that repetition 0 lacks"));
  return c;
}

}  // namespace

BenchReport report_from_json(const json& j, const std::string& path) {
  const Reader rd(path);
  if (!j.is_object()) rd.fail("", "top level is not a JSON object");
  const json& ctx = rd.field(j, "context", "");
  if (!ctx.is_object()) rd.fail("", "'context' is not an object");
  if (!ctx.contains("tr_schema_version"))
    rd.fail("", "not a tr-bench report: context.tr_schema_version is missing (a plain Google Benchmark file?)");
  BenchReport r;
  r.context = context_from_json(rd, ctx);
  const json& benchmarks = rd.field(j, "benchmarks", "");
  if (!benchmarks.is_array()) rd.fail("", "'benchmarks' is not an array");
  std::vector<std::string> order;  // run names in order of first appearance
  std::map<std::string, Partial> parts;
  for (size_t bi = 0; bi < benchmarks.size(); ++bi) read_entry(rd, benchmarks[bi], bi, r.context, order, parts);
  for (const std::string& name : order) r.cases.push_back(case_from_parts(rd, parts.at(name)));
  return r;
}

BenchReport read_report(const std::string& path) { return report_from_json(read_json_file(path, "report"), path); }

}  // namespace tr::bench
