#include "harness/lib/tta/tta_cli.h"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "datasets/data_view.h"
#include "framework/core/error.h"
#include "framework/train/lr_schedule.h"
#include "harness/lib/bench/context_info.h"
#include "harness/lib/cli/cli_args.h"
#include "harness/lib/cli/precision_flag.h"
#include "harness/lib/cli/train_flags.h"
#include "harness/lib/report/atomic_file.h"
#include "harness/lib/tta/tta_report.h"

namespace tr::bench {
namespace {

constexpr const char* kUsage = R"(usage: tr-bench tta [flags]

Time to accuracy: trains the model from scratch once per seed (seed, seed+1, ...)
and reports, per run, the training time until the test accuracy first reaches
the target (a GPT model: until the validation loss first falls to it, judged
at every validation, --val-every included), and the final accuracy or loss;
then mean +- std and min/max over the runs. Training time counts the training
steps only: the set-up (compile, plan, capture) and every validation are
reported apart. The training flags default to the model's time-to-accuracy
recipe (docs/design.md).

  --runs N                 seeds to train (default 5)
  --target-acc X           image models: test accuracy to reach, a fraction (default: the
                           recipe's, e.g. cnn 0.94, mlp 0.895)
  --target-loss X          GPT models: validation loss to reach, nats per token (default:
                           the recipe's, e.g. gpt2-d6 on tr-data's linux-doc shards)
  --eval main|ema          whose metric meets the target: the trained weights (main,
                           default) or their EMA
  --json PATH              write the report (reports/schema.md, "Time-to-accuracy reports")
  --mllog PATH             write MLPerf-style ":::MLLOG" lines (run_start, epoch_stop,
                           eval_accuracy, run_stop, ...)
)";

constexpr const char* kUsageTail = R"(  --help                   this text

Exit codes: 0 success, 2 bad input (flags, data files), 1 other errors.
)";

// A float setting as the decimal it was given as (0.2, not 0.200000003).
double decimal(float v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.7g", double(v));
  return std::strtod(buf, nullptr);
}

nlohmann::ordered_json recipe_json(const TrainSetup& s, int64_t train_samples, int64_t test_samples) {
  const RunOptions& o = s.options;
  const bool text = o.model.is_sequence();
  nlohmann::ordered_json j;
  j["device"] = s.device;
  j["ranks"] = o.train.ranks;
  j["mode"] = mode_name(o.mode);
  j["width"] = o.model.width;
  if (text) {
    j["seq"] = o.model.seq_len;
    j["train_windows"] = train_samples;
    j["val_windows"] = test_samples;
    j["val_every"] = o.val_every;
  } else {
    j["image_size"] = o.model.in_height;
    j["train_images"] = train_samples;
    j["test_images"] = test_samples;
  }
  j["epochs"] = o.epochs;
  j["batch"] = o.batch;
  j["optimizer"] = optimizer_name(o.train.optimizer);
  j["lr"] = decimal(o.lr.base_lr);
  j["schedule"] = lr_schedule_name(o.lr.kind);
  j["warmup"] = decimal(o.lr.warmup_fraction);
  j["weight_decay"] = decimal(o.train.weight_decay);
  j["clip_grad_norm"] = decimal(o.train.max_grad_norm);
  j["label_smoothing"] = decimal(o.train.label_smoothing);
  j["ema_decay"] = decimal(o.train.ema_decay);
  if (!text) {
    j["flip"] = o.train.augment.flip;
    j["translate"] = o.train.augment.translate;
    j["cutout"] = o.train.augment.cutout;
    j["tta"] = o.train.tta_flip ? "flip" : "none";
  }
  j["precision"] = precision_name(o.train);
  j[text ? "seq_warmup_epochs" : "lowres_epochs"] = o.lowres_epochs;
  j[text ? "seq_warmup" : "lowres_size"] = o.lowres_size;
  return j;
}

// The target: --target-acc for an image model, --target-loss for a GPT model
// (Note [tta targets]), else the recipe's; the other flag is refused.
TtaTarget parse_target(const CliArgs& a, const ModelEntry& e) {
  const char* theirs = e.is_sequence() ? "--target-acc" : "--target-loss";
  TR_USER_CHECK(!a.has(theirs), theirs, " is for ", e.is_sequence() ? "image" : "GPT", " models; ", e.name, " takes ",
                e.is_sequence() ? "--target-loss (a validation loss)" : "--target-acc (a test accuracy)");
  if (!e.is_sequence()) return {TtaMetric::Accuracy, a.real("--target-acc", e.recipe.target_acc, 1e-6, 1.0)};
  TR_USER_CHECK(e.recipe.target_loss > 0 || a.has("--target-loss"), "model ", e.name,
                " has no time-to-accuracy recipe with a target loss; give --target-loss X");
  return {TtaMetric::ValLoss, a.real("--target-loss", e.recipe.target_loss, 1e-6, 1e3)};
}

int run(int argc, char** argv) {
  std::vector<std::string> values = train_value_flags(), bools = train_bool_flags();
  for (const char* f : {"--runs", "--target-acc", "--target-loss", "--eval", "--json", "--mllog"}) values.push_back(f);
  bools.push_back("--help");
  const CliArgs a(argc, argv, values, bools);
  if (a.flag("--help")) {
    std::fputs(kUsage, stdout);
    std::printf(kTrainFlagsUsage, model_names().c_str());
    std::fputs(kUsageTail, stdout);
    return 0;
  }
  // The task's own flags first: a bad one is named before the data is read.
  const int runs = static_cast<int>(a.integer("--runs", 5, 1, 1000));
  if (a.has("--target-acc")) (void)a.real("--target-acc", 0.5, 1e-6, 1.0);
  if (a.has("--target-loss")) (void)a.real("--target-loss", 1.0, 1e-6, 1e3);
  const std::string eval = a.str("--eval", "main");
  TR_USER_CHECK(eval == "main" || eval == "ema", "--eval must be main or ema, got '", eval, "'");
  const TtaTarget target = parse_target(a, model_entry(a.str("--model", "mlp")));
  const TrainSetup setup = parse_train_setup(a, true);
  TtaSpec spec;
  spec.run = setup.options;
  spec.train = data::data_view(setup.data.train, setup.data.train_count);
  spec.test = data::data_view(setup.data.test, setup.data.test_count);
  spec.runs = runs;
  spec.target = target;
  spec.eval_ema = eval == "ema";
  TR_USER_CHECK(!spec.eval_ema || spec.run.train.has_ema(), "--eval ema needs an EMA: --ema-decay is 0");

  std::string command = "tr-bench";
  for (int i = 0; i < argc; ++i) {
    command += ' ';
    command += argv[i];
  }
  TtaReport report;
  report.context = collect_context(setup.options.backend, command);
  report.context.precision = precision_name(setup.options.train);
  report.model = setup.options.model.name;
  report.target = spec.target;
  report.eval = eval;
  report.tokens_per_byte = setup.data.val_tokens_per_byte;
  report.recipe = recipe_json(setup, spec.train.count, spec.test.count);
  std::printf("tr-bench tta: %s on %s, %d run(s), target %s %g (%s weights)\n  recipe %s\n", report.model.c_str(),
              report.context.device_name.c_str(), spec.runs,
              target.metric == TtaMetric::ValLoss ? "validation loss" : "test accuracy", target.value, eval.c_str(),
              report.recipe.dump().c_str());
  std::fflush(stdout);
  check_tta_spec(spec);
  const std::string json_path = a.str("--json", "");
  if (!json_path.empty()) check_writable(json_path);  // before the runs, not after them
  const bool mllog = a.has("--mllog");
  const std::string mllog_path = a.str("--mllog", "");
  if (mllog) {
    // Two outputs of one run never share a file (Note [output paths]).
    TR_USER_CHECK(json_path.empty() || !same_file(json_path, mllog_path), "--mllog ", mllog_path,
                  " names the --json report's file; give each its own");
    check_writable(mllog_path);
  }
  for (int k = 0; k < spec.runs; ++k) {
    report.runs.push_back(run_tta_seed(
        spec, spec.run.seed + uint64_t(k),
        [&](const TtaRun& run, const TtaEval& e, const TtaEpoch* ep) { print_tta_eval(report, run, e, ep, stdout); }));
    // After every seed, so a later failure or time-out keeps the finished runs.
    if (!json_path.empty()) write_tta_report(report, json_path);
  }
  print_tta_summary(report, stdout);
  if (!json_path.empty()) std::printf("tr-bench tta: wrote %s\n", json_path.c_str());
  if (mllog) {
    write_mllog(report, mllog_path);
    std::printf("tr-bench tta: wrote %s\n", mllog_path.c_str());
  }
  return 0;
}

}  // namespace

int tta_main(int argc, char** argv) { return run(argc, argv); }

}  // namespace tr::bench
