#include "harness/lib/tta/tta_task.h"

#include <chrono>

#include "framework/core/error.h"
#include "framework/train/trainer.h"
#include "harness/lib/bench/device_memory.h"
#include "harness/lib/bench/machine_counters.h"
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
  if (spec.target.metric == TtaMetric::Accuracy)
    TR_USER_CHECK(spec.target.value > 0 && spec.target.value <= 1, "--target-acc must be a fraction in (0, 1], got ",
                  spec.target.value);
  else TR_USER_CHECK(spec.target.value > 0, "--target-loss must be > 0, got ", spec.target.value);
}

namespace {

// The validation `v` as the task records it: judged by the target's metric of the chosen weights.
TtaEval make_eval(const TtaSpec& spec, int epoch, int64_t step, double train_seconds, double eval_seconds,
                  const ValPoint& v) {
  TtaEval e;
  e.epoch = epoch;
  e.step = step;
  e.train_seconds = train_seconds;
  e.eval_seconds = eval_seconds;
  e.loss = v.loss;
  e.acc = v.acc;
  e.ema_loss = v.ema_loss;
  e.ema_acc = v.ema_acc;
  const bool loss = spec.target.metric == TtaMetric::ValLoss;
  e.value = spec.eval_ema ? (loss ? v.ema_loss : v.ema_acc) : (loss ? v.loss : v.acc);
  return e;
}

// Appends `e` to the run, marks the target when `e` is the first to reach it, and shows it.
void record_eval(const TtaSpec& spec, TtaRun& run, const TtaEval& e, const TtaEpoch* epoch, const TtaEvalFn& on_eval) {
  if (!run.time_to_target && spec.target.reached_by(e.value)) {
    run.time_to_target = e.train_seconds;
    run.epochs_to_target = e.epoch;
    run.steps_to_target = e.step;
  }
  run.evals.push_back(e);
  if (on_eval) on_eval(run, e, epoch);
}

// Note [machine state] over one run's epochs: the energy counter at their
// start and end, and the device memory after the set-up and each epoch.
class RunMachine {
 public:
  explicit RunMachine(Backend b) {
    if (b != Backend::Cuda) return;
    cuda_ = true;
    const Nvml& nvml = Nvml::get();
    if (nvml.available()) bus_ = cuda_pci_bus_id(0);
    if (!bus_.empty() && !nvml.sample(bus_, start_)) bus_.clear();
    t0_ = std::chrono::steady_clock::now();
    note_memory();
  }
  void note_memory() {
    if (!cuda_) return;
    if (auto used = device_memory_used(0)) peak_ = std::max(peak_.value_or(0), *used);
  }
  void finish(TtaRun& run) const {
    run.device_memory_peak_bytes = peak_;
    GpuSample end;
    if (bus_.empty() || !Nvml::get().sample(bus_, end)) return;
    const double joules = (end.energy_mj - start_.energy_mj) * 1e-3;
    if (seconds_since(t0_) >= kMinEnergyWindowS && joules > 0) run.energy_j = joules;
  }

 private:
  bool cuda_ = false;
  std::string bus_;
  GpuSample start_;
  std::chrono::steady_clock::time_point t0_;
  std::optional<int64_t> peak_;
};

}  // namespace

TtaRun run_tta_seed(const TtaSpec& spec, uint64_t seed, const TtaEvalFn& on_eval) {
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
  RunMachine machine(o.backend);
  double total = 0;
  int64_t steps = 0;
  for (int e = 0; e < o.epochs; ++e) {
    TtaEpoch ep;
    ep.start_unix_ms = unix_ms();
    const EpochStats s = t.run_epoch();
    ep.end_unix_ms = unix_ms();
    machine.note_memory();
    double val_seconds = 0;  // the epoch's validations so far
    for (const ValPoint& v : s.mid_vals) {
      val_seconds += v.val_seconds;
      TtaEval ev = make_eval(spec, e + 1, v.step, total + v.train_seconds, v.val_seconds, v);
      ev.end_unix_ms = ep.start_unix_ms + 1e3 * (v.train_seconds + val_seconds);
      record_eval(spec, run, ev, nullptr, on_eval);
    }
    ep.epoch = e + 1;
    ep.epoch_seconds = s.train_seconds;
    total += s.train_seconds;
    steps += s.steps;
    ep.train_seconds = total;
    ep.eval_seconds = s.val_seconds;
    ep.train_loss = s.train_loss;
    ep.train_acc = s.train_acc;
    ep.val_acc = s.val_acc;
    ep.ema_acc = s.val_ema_acc;
    ep.val_loss = s.val_loss;
    ep.ema_loss = s.val_ema_loss;
    ep.acc = spec.eval_ema ? s.val_ema_acc : s.val_acc;
    run.epochs.push_back(ep);
    const ValPoint end{
        .step = steps, .loss = s.val_loss, .acc = s.val_acc, .ema_loss = s.val_ema_loss, .ema_acc = s.val_ema_acc};
    TtaEval ev = make_eval(spec, ep.epoch, steps, total, s.val_seconds, end);
    ev.end_unix_ms = ep.end_unix_ms;
    record_eval(spec, run, ev, &run.epochs.back(), on_eval);
  }
  machine.finish(run);
  run.final_acc = run.epochs.back().acc;
  run.final_loss = spec.eval_ema ? run.epochs.back().ema_loss : run.epochs.back().val_loss;
  return run;
}

std::vector<TtaRun> run_tta(const TtaSpec& spec, const TtaEvalFn& on_eval) {
  check_tta_spec(spec);
  std::vector<TtaRun> runs;
  for (int k = 0; k < spec.runs; ++k) runs.push_back(run_tta_seed(spec, spec.run.seed + uint64_t(k), on_eval));
  return runs;
}

TtaSummary summarize_tta(const std::vector<TtaRun>& runs) {
  TR_CHECK(!runs.empty(), "no runs to summarise");
  TtaSummary s;
  s.runs = static_cast<int>(runs.size());
  std::vector<double> ttt, final_acc, final_loss, setup, train;
  for (const TtaRun& r : runs) {
    if (r.time_to_target) ttt.push_back(*r.time_to_target);
    final_acc.push_back(r.final_acc);
    final_loss.push_back(r.final_loss);
    setup.push_back(r.setup_seconds);
    train.push_back(r.epochs.back().train_seconds);
  }
  s.reached = static_cast<int>(ttt.size());
  if (!ttt.empty()) s.time_to_target = summarize(ttt);
  s.final_acc = summarize(final_acc);
  s.final_loss = summarize(final_loss);
  s.setup_seconds = summarize(setup);
  s.train_seconds = summarize(train);
  return s;
}

}  // namespace tr::bench
