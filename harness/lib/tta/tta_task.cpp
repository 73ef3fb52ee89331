#include "harness/lib/tta/tta_task.h"

#include <chrono>

#include "framework/core/error.h"
#include "framework/train/trainer.h"
#include "harness/lib/cli/conv_plans_file.h"

namespace tr::bench {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double unix_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

void check_tta_spec(const TtaSpec& spec) {
  TR_USER_CHECK(spec.runs >= 1, "--runs must be >= 1, got ", spec.runs);
  TR_USER_CHECK(spec.target_acc > 0 && spec.target_acc <= 1, "--target-acc must be a fraction in (0, 1], got ",
                spec.target_acc);
}

TtaRun run_tta_seed(const TtaSpec& spec, uint64_t seed, const TtaEpochFn& on_epoch) {
  RunOptions o = spec.run;
  o.seed = seed;
  o.validate = true;
  TtaRun run;
  run.seed = seed;
  run.init_unix_ms = unix_ms();
  const auto t0 = std::chrono::steady_clock::now();
  Trainer t(o, spec.train, spec.test);
  save_conv_plans(o.algos.conv_plans.get(), o.world);
  run.setup_seconds = seconds_since(t0);
  run.start_unix_ms = unix_ms();
  run.capture_ms = t.capture().capture_ms;
  double total = 0;
  for (int e = 0; e < o.epochs; ++e) {
    TtaEpoch ep;
    ep.start_unix_ms = unix_ms();
    const EpochStats s = t.run_epoch();
    ep.end_unix_ms = unix_ms();
    ep.epoch = e + 1;
    ep.epoch_seconds = s.train_seconds;
    total += s.train_seconds;
    ep.train_seconds = total;
    ep.eval_seconds = s.val_seconds;
    ep.train_loss = s.train_loss;
    ep.train_acc = s.train_acc;
    ep.val_acc = s.val_acc;
    ep.ema_acc = s.val_ema_acc;
    ep.acc = spec.eval_ema ? s.val_ema_acc : s.val_acc;
    if (!run.time_to_target && ep.acc >= spec.target_acc) {
      run.time_to_target = total;
      run.epochs_to_target = ep.epoch;
    }
    run.epochs.push_back(ep);
    if (on_epoch) on_epoch(run, ep);
  }
  run.final_acc = run.epochs.back().acc;
  return run;
}

std::vector<TtaRun> run_tta(const TtaSpec& spec, const TtaEpochFn& on_epoch) {
  check_tta_spec(spec);
  std::vector<TtaRun> runs;
  for (int k = 0; k < spec.runs; ++k) runs.push_back(run_tta_seed(spec, spec.run.seed + uint64_t(k), on_epoch));
  return runs;
}

TtaSummary summarize_tta(const std::vector<TtaRun>& runs) {
  TR_CHECK(!runs.empty(), "no runs to summarise");
  TtaSummary s;
  s.runs = static_cast<int>(runs.size());
  std::vector<double> ttt, final_acc, setup, train;
  for (const TtaRun& r : runs) {
    if (r.time_to_target) ttt.push_back(*r.time_to_target);
    final_acc.push_back(r.final_acc);
    setup.push_back(r.setup_seconds);
    train.push_back(r.epochs.back().train_seconds);
  }
  s.reached = static_cast<int>(ttt.size());
  if (!ttt.empty()) s.time_to_target = summarize(ttt);
  s.final_acc = summarize(final_acc);
  s.setup_seconds = summarize(setup);
  s.train_seconds = summarize(train);
  return s;
}

}  // namespace tr::bench
