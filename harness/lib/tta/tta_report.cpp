#include "harness/lib/tta/tta_report.h"

#include <cmath>

#include "datasets/byte_tokens.h"
#include "framework/core/error.h"
#include "harness/lib/report/atomic_file.h"
#include "harness/lib/report/fmt_double.h"
#include "harness/lib/report/json_report.h"
#include "harness/lib/report/statistics.h"

namespace tr::bench {

using ojson = nlohmann::ordered_json;
using json = nlohmann::json;

namespace {

ojson summary_json(const Summary& s) {
  return ojson{{"mean", s.mean}, {"std", s.stddev}, {"min", s.min}, {"max", s.max}, {"median", s.median}};
}

double bits_per_byte(const TtaReport& r, double loss) { return data::bits_per_byte(loss, r.tokens_per_byte); }

std::string case_name(const TtaReport& r) {
  return cat("tta/model:", r.model, r.target.is_loss() ? "/target_loss:" : "/target:", r.target.value);
}

// "94.00 % test accuracy" or "validation loss 1.200 (1.73 bits per byte)".
std::string describe_target(const TtaReport& r) {
  if (!r.target.is_loss()) return cat(fmt_double("%.2f", 100 * r.target.value), " % test accuracy");
  std::string d = cat("validation loss ", fmt_double("%.3f", r.target.value));
  if (r.tokens_per_byte > 0) d += cat(" (", fmt_double("%.3f", bits_per_byte(r, r.target.value)), " bits per byte)");
  return d;
}

// The value a seed contributes to the Google-Benchmark entries: its time to
// target, or, when it never got there, its whole training time.
double entry_seconds(const TtaRun& run) {
  return run.time_to_target ? *run.time_to_target : run.epochs.back().train_seconds;
}

// The Google Benchmark entries: one iteration per run (its time to the
// target, or its training time when it never got there), then the
// aggregates of those times.
ojson benchmark_entries(const TtaReport& r, const std::string& name) {
  ojson benchmarks = ojson::array();
  std::vector<double> secs;
  for (size_t k = 0; k < r.runs.size(); ++k) {
    const TtaRun& run = r.runs[k];
    ojson e;
    e["name"] = name;
    e["family_index"] = 0;
    e["per_family_instance_index"] = 0;
    e["run_name"] = name;
    e["run_type"] = "iteration";
    e["repetitions"] = r.runs.size();
    e["repetition_index"] = k;
    e["threads"] = 1;
    e["iterations"] = 1;
    e["real_time"] = entry_seconds(run);
    e["cpu_time"] = entry_seconds(run);
    e["time_unit"] = "s";
    e["reached"] = run.time_to_target ? 1 : 0;
    e["epochs_to_target"] = run.epochs_to_target;
    e["steps_to_target"] = run.steps_to_target;
    e["final_acc"] = run.final_acc;
    e["final_loss"] = run.final_loss;
    e["setup_seconds"] = run.setup_seconds;
    e["capture_ms"] = run.capture_ms;
    if (run.energy_j) e["energy_j"] = *run.energy_j;
    if (run.device_memory_peak_bytes) e["device_memory_peak_bytes"] = *run.device_memory_peak_bytes;
    e["seed"] = run.seed;
    benchmarks.push_back(e);
    secs.push_back(entry_seconds(run));
  }
  const std::pair<const char*, double> aggs[] = {
      {"mean", mean(secs)}, {"median", median(secs)}, {"stddev", stddev(secs)}, {"cv", cv(secs)}};
  for (const auto& [agg, v] : aggs) {
    ojson e;
    e["name"] = cat(name, "_", agg);
    e["family_index"] = 0;
    e["per_family_instance_index"] = 0;
    e["run_name"] = name;
    e["run_type"] = "aggregate";
    e["repetitions"] = r.runs.size();
    e["threads"] = 1;
    e["aggregate_name"] = agg;
    e["aggregate_unit"] = std::string(agg) == "cv" ? "percentage" : "time";
    e["iterations"] = 1;
    e["real_time"] = v;
    e["cpu_time"] = v;
    e["time_unit"] = "s";
    benchmarks.push_back(e);
  }
  return benchmarks;
}

ojson run_json(const TtaRun& run) {
  ojson epochs = ojson::array();
  for (const TtaEpoch& ep : run.epochs)
    epochs.push_back(ojson{{"epoch", ep.epoch},
                           {"train_seconds", ep.train_seconds},
                           {"epoch_seconds", ep.epoch_seconds},
                           {"eval_seconds", ep.eval_seconds},
                           {"train_loss", ep.train_loss},
                           {"train_acc", ep.train_acc},
                           {"val_acc", ep.val_acc},
                           {"ema_acc", ep.ema_acc},
                           {"val_loss", ep.val_loss},
                           {"ema_loss", ep.ema_loss},
                           {"acc", ep.acc}});
  ojson evals = ojson::array();
  for (const TtaEval& e : run.evals)
    evals.push_back(ojson{{"epoch", e.epoch},
                          {"step", e.step},
                          {"train_seconds", e.train_seconds},
                          {"eval_seconds", e.eval_seconds},
                          {"loss", e.loss},
                          {"acc", e.acc},
                          {"ema_loss", e.ema_loss},
                          {"ema_acc", e.ema_acc},
                          {"value", e.value}});
  ojson o;
  o["seed"] = run.seed;
  o["setup_seconds"] = run.setup_seconds;
  o["capture_ms"] = run.capture_ms;
  if (run.energy_j) o["energy_j"] = *run.energy_j;
  if (run.device_memory_peak_bytes) o["device_memory_peak_bytes"] = *run.device_memory_peak_bytes;
  o["time_to_target_s"] = run.time_to_target ? ojson(*run.time_to_target) : ojson(nullptr);
  o["epochs_to_target"] = run.epochs_to_target;
  o["steps_to_target"] = run.steps_to_target;
  o["final_acc"] = run.final_acc;
  o["final_loss"] = run.final_loss;
  o["epochs"] = epochs;
  o["evals"] = evals;
  return o;
}

// The "tta" section: the task, its summary over the runs, every run's epochs.
ojson tta_section(const TtaReport& r) {
  ojson runs = ojson::array();
  for (const TtaRun& run : r.runs) runs.push_back(run_json(run));
  const TtaSummary s = summarize_tta(r.runs);
  ojson summary;
  summary["runs"] = s.runs;
  summary["reached"] = s.reached;
  summary["time_to_target_s"] = s.time_to_target ? summary_json(*s.time_to_target) : ojson(nullptr);
  summary["final_acc"] = summary_json(s.final_acc);
  summary["final_loss"] = summary_json(s.final_loss);
  summary["train_seconds"] = summary_json(s.train_seconds);
  summary["setup_seconds"] = summary_json(s.setup_seconds);
  ojson tta;
  tta["model"] = r.model;
  tta["metric"] = r.target.is_loss() ? "val_loss" : "accuracy";
  tta[r.target.is_loss() ? "target_loss" : "target_acc"] = r.target.value;
  if (r.tokens_per_byte > 0) tta["tokens_per_byte"] = r.tokens_per_byte;
  tta["eval"] = r.eval;
  tta["recipe"] = r.recipe;
  tta["summary"] = summary;
  tta["runs"] = runs;
  return tta;
}

// A run's validations; a report written before they were recorded has its
// epochs' ends only, judged by accuracy.
std::vector<TtaEval> evals_from_json(const json& jr, const std::vector<TtaEpoch>& epochs) {
  std::vector<TtaEval> out;
  if (!jr.contains("evals")) {
    for (const TtaEpoch& ep : epochs)
      out.push_back(TtaEval{.epoch = ep.epoch,
                            .train_seconds = ep.train_seconds,
                            .eval_seconds = ep.eval_seconds,
                            .loss = ep.val_loss,
                            .acc = ep.val_acc,
                            .ema_loss = ep.ema_loss,
                            .ema_acc = ep.ema_acc,
                            .value = ep.acc});
    return out;
  }
  for (const json& je : jr.at("evals"))
    out.push_back(TtaEval{.epoch = je.at("epoch").get<int>(),
                          .step = je.at("step").get<int64_t>(),
                          .train_seconds = je.at("train_seconds").get<double>(),
                          .eval_seconds = je.at("eval_seconds").get<double>(),
                          .loss = je.at("loss").get<double>(),
                          .acc = je.at("acc").get<double>(),
                          .ema_loss = je.at("ema_loss").get<double>(),
                          .ema_acc = je.at("ema_acc").get<double>(),
                          .value = je.at("value").get<double>()});
  return out;
}

}  // namespace

bool is_tta_json(const json& j) { return j.is_object() && j.contains("tta"); }

ojson tta_to_json(const TtaReport& r) {
  TR_CHECK(!r.runs.empty(), "tta report without runs");
  ojson ctx = context_to_json(r.context);
  ctx["task"] = "tta";
  ojson j;
  j["context"] = ctx;
  j["benchmarks"] = benchmark_entries(r, case_name(r));
  j["tta"] = tta_section(r);
  return j;
}

void write_tta_report(const TtaReport& r, const std::string& path) {
  write_file_atomically(path, tta_to_json(r).dump(2) + "\n");
}

TtaReport tta_report_from_json(const json& j, const std::string& path) {
  auto fail = [&](const std::string& what) { return UserError(cat(path, ": ", what)); };
  TtaReport r;
  try {
    const json& ctx = j.at("context");
    r.context.device_kind = ctx.at("device_kind").get<std::string>();
    r.context.device_name = ctx.at("device_name").get<std::string>();
    r.context.date = ctx.at("date").get<std::string>();
    r.context.command_line = ctx.at("command_line").get<std::string>();
    r.context.precision = ctx.at("precision").get<std::string>();
    r.context.git_commit = ctx.at("git_commit").get<std::string>();
    const json& t = j.at("tta");
    r.model = t.at("model").get<std::string>();
    // Reports written before loss targets have no "metric": they are accuracy reports.
    const std::string metric = t.value("metric", std::string("accuracy"));
    if (metric != "accuracy" && metric != "val_loss") throw fail(cat("unknown tta metric '", metric, "'"));
    r.target.metric = metric == "val_loss" ? TtaMetric::ValLoss : TtaMetric::Accuracy;
    r.target.value = t.at(metric == "val_loss" ? "target_loss" : "target_acc").get<double>();
    r.tokens_per_byte = t.value("tokens_per_byte", 0.0);
    r.eval = t.at("eval").get<std::string>();
    r.recipe = t.at("recipe");
    for (const json& jr : t.at("runs")) {
      TtaRun run;
      run.seed = jr.at("seed").get<uint64_t>();
      run.setup_seconds = jr.at("setup_seconds").get<double>();
      run.capture_ms = jr.at("capture_ms").get<double>();
      if (!jr.at("time_to_target_s").is_null()) run.time_to_target = jr.at("time_to_target_s").get<double>();
      run.epochs_to_target = jr.at("epochs_to_target").get<int>();
      run.steps_to_target = jr.value("steps_to_target", int64_t(0));
      run.final_acc = jr.at("final_acc").get<double>();
      run.final_loss = jr.value("final_loss", 0.0);
      if (jr.contains("energy_j")) run.energy_j = jr.at("energy_j").get<double>();
      if (jr.contains("device_memory_peak_bytes"))
        run.device_memory_peak_bytes = jr.at("device_memory_peak_bytes").get<int64_t>();
      for (const json& je : jr.at("epochs")) {
        TtaEpoch e;
        e.epoch = je.at("epoch").get<int>();
        e.train_seconds = je.at("train_seconds").get<double>();
        e.epoch_seconds = je.at("epoch_seconds").get<double>();
        e.eval_seconds = je.at("eval_seconds").get<double>();
        e.train_loss = je.at("train_loss").get<double>();
        e.train_acc = je.at("train_acc").get<double>();
        e.val_acc = je.at("val_acc").get<double>();
        e.ema_acc = je.at("ema_acc").get<double>();
        e.val_loss = je.value("val_loss", 0.0);
        e.ema_loss = je.value("ema_loss", 0.0);
        e.acc = je.at("acc").get<double>();
        run.epochs.push_back(e);
      }
      if (run.epochs.empty()) throw fail(cat("run with seed ", run.seed, " has no epochs"));
      run.evals = evals_from_json(jr, run.epochs);
      r.runs.push_back(run);
    }
  } catch (const json::exception& e) {
    throw fail(cat("not a tta report: ", e.what()));
  }
  if (r.runs.empty()) throw fail("tta report without runs");
  return r;
}

void print_tta_eval(const TtaReport& r, const TtaRun& run, const TtaEval& e, const TtaEpoch* epoch, FILE* out) {
  const bool first_to_reach = run.time_to_target && run.steps_to_target == e.step && run.epochs_to_target == e.epoch &&
                              *run.time_to_target == e.train_seconds;
  const char* mark = first_to_reach ? "  <- target" : "";
  const auto seed = static_cast<unsigned long long>(run.seed);
  if (!r.target.is_loss()) {  // image models validate at epochs' ends
    const TtaEpoch& ep = *epoch;
    std::fprintf(out, "seed %-4llu epoch %3d  train %8.3f s (+%.3f)  eval %6.3f s  loss %.4f  acc %.4f  ema %.4f%s\n",
                 seed, ep.epoch, ep.train_seconds, ep.epoch_seconds, ep.eval_seconds, ep.train_loss, ep.val_acc,
                 ep.ema_acc, mark);
  } else {
    std::string bpb;
    if (r.tokens_per_byte > 0) bpb = cat(" (", fmt_double("%.4f", bits_per_byte(r, e.value)), " bits/byte)");
    std::fprintf(out, "seed %-4llu epoch %3d step %7lld  train %8.3f s  eval %6.3f s  val_loss %.4f%s  ema %.4f%s\n",
                 seed, e.epoch, static_cast<long long>(e.step), e.train_seconds, e.eval_seconds, e.loss, bpb.c_str(),
                 e.ema_loss, mark);
    if (epoch)
      std::fprintf(out, "seed %-4llu epoch %3d done  train %8.3f s (+%.3f)  train_loss %.4f\n", seed, epoch->epoch,
                   epoch->train_seconds, epoch->epoch_seconds, epoch->train_loss);
  }
  std::fflush(out);
}

void print_tta_summary(const TtaReport& r, FILE* out) {
  const TtaSummary s = summarize_tta(r.runs);
  const bool loss = r.target.is_loss();
  std::fprintf(out, "\ntta: %s, target %s (%s weights), %d run(s)\n", r.model.c_str(), describe_target(r).c_str(),
               r.eval.c_str(), s.runs);
  std::fprintf(out, "%6s %9s %11s %8s %9s %12s %10s %10s\n", "seed", "setup_s", "capture_ms", "epochs", "steps",
               "to_target_s", "train_s", loss ? "final_loss" : "final_acc");
  for (const TtaRun& run : r.runs) {
    const bool hit = run.time_to_target.has_value();
    std::fprintf(out, "%6llu %9.3f %11.1f %8s %9s %12s %10.3f %10s\n", static_cast<unsigned long long>(run.seed),
                 run.setup_seconds, run.capture_ms, hit ? std::to_string(run.epochs_to_target).c_str() : "-",
                 hit ? std::to_string(run.steps_to_target).c_str() : "-",
                 hit ? cat(*run.time_to_target).c_str() : "missed", run.epochs.back().train_seconds,
                 loss ? fmt_double("%.4f", run.final_loss).c_str() : fmt_double("%.2f%%", 100 * run.final_acc).c_str());
  }
  const std::string target = loss ? cat("validation loss ", fmt_double("%.3f", r.target.value))
                                  : cat(fmt_double("%.2f", 100 * r.target.value), " %");
  if (s.time_to_target)
    std::fprintf(out, "time to %s: %.3f +- %.3f s (min %.3f, max %.3f), %d of %d runs reached it\n", target.c_str(),
                 s.time_to_target->mean, s.time_to_target->stddev, s.time_to_target->min, s.time_to_target->max,
                 s.reached, s.runs);
  else std::fprintf(out, "time to %s: no run reached it\n", target.c_str());
  if (loss) {
    std::string bpb;
    if (r.tokens_per_byte > 0)
      bpb = cat(" (", fmt_double("%.4f", bits_per_byte(r, s.final_loss.mean)), " bits per byte)");
    std::fprintf(out, "final validation loss: %.4f +- %.4f (min %.4f, max %.4f)%s; ", s.final_loss.mean,
                 s.final_loss.stddev, s.final_loss.min, s.final_loss.max, bpb.c_str());
  } else {
    std::fprintf(out, "final accuracy: %.2f +- %.2f %% (min %.2f, max %.2f); ", 100 * s.final_acc.mean,
                 100 * s.final_acc.stddev, 100 * s.final_acc.min, 100 * s.final_acc.max);
  }
  std::fprintf(out, "training %.3f +- %.3f s; set-up %.3f s (compile, plan, capture; not in the training time)\n",
               s.train_seconds.mean, s.train_seconds.stddev, s.setup_seconds.mean);
}

std::vector<std::string> mllog_lines(const TtaReport& r) {
  std::vector<std::string> out;
  auto line = [&](double t_ms, const char* type, const char* key, const ojson& value, ojson meta) {
    ojson j;
    j["namespace"] = "";
    j["time_ms"] = static_cast<int64_t>(std::llround(t_ms));
    j["event_type"] = type;
    j["key"] = key;
    j["value"] = value;
    j["metadata"] = std::move(meta);
    out.push_back(":::MLLOG " + j.dump());
  };
  const ojson none = nullptr;
  for (const TtaRun& run : r.runs) {
    const ojson seed_meta = {{"seed", run.seed}};
    line(run.init_unix_ms, "INTERVAL_START", "init_start", none, seed_meta);
    line(run.init_unix_ms, "POINT_IN_TIME", "submission_benchmark", r.model, seed_meta);
    line(run.init_unix_ms, "POINT_IN_TIME", "seed", run.seed, seed_meta);
    line(run.start_unix_ms, "INTERVAL_END", "init_stop", none, seed_meta);
    line(run.start_unix_ms, "INTERVAL_START", "run_start", none, seed_meta);
    bool stopped = false;
    size_t next_eval = 0;  // run.evals are in order, each epoch's end last among its own
    for (const TtaEpoch& e : run.epochs) {
      const ojson meta = {{"epoch_num", e.epoch}, {"seed", run.seed}};
      line(e.start_unix_ms, "INTERVAL_START", "epoch_start", none, meta);
      for (; next_eval < run.evals.size() && run.evals[next_eval].epoch == e.epoch && !stopped; ++next_eval) {
        const TtaEval& v = run.evals[next_eval];
        const bool epoch_end = next_eval + 1 == run.evals.size() || run.evals[next_eval + 1].epoch != e.epoch;
        if (epoch_end) line(e.start_unix_ms + 1e3 * e.epoch_seconds, "INTERVAL_END", "epoch_stop", none, meta);
        line(v.end_unix_ms, "POINT_IN_TIME", r.target.is_loss() ? "eval_loss" : "eval_accuracy", v.value,
             {{"epoch_num", e.epoch}, {"step_num", v.step}, {"seed", run.seed}});
        if (run.time_to_target && run.steps_to_target == v.step && run.epochs_to_target == v.epoch) {
          line(v.end_unix_ms, "INTERVAL_END", "run_stop", none, {{"status", "success"}, {"seed", run.seed}});
          stopped = true;
        }
      }
      if (stopped) break;
    }
    if (!stopped)
      line(run.epochs.back().end_unix_ms, "INTERVAL_END", "run_stop", none,
           {{"status", "aborted"}, {"seed", run.seed}});
  }
  return out;
}

void write_mllog(const TtaReport& r, const std::string& path) {
  std::string text;
  for (const std::string& l : mllog_lines(r)) text += l + "\n";
  write_file_atomically(path, text);
}

}  // namespace tr::bench
