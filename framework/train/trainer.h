#pragma once
// Trainer: the epoch loop over a TrainingSession (session.h). Each epoch
// shuffles, trains every rank through its batches (the last one in its own
// variant), validates with the main and the EMA weights, and reports. With
// RunOptions::val_every it also pauses inside the epoch to validate: the
// training steps before and after run as they would without the pause (the
// validation's graphs write nothing training reads), so the weights keep
// their bits.
#include <vector>

#include "framework/train/session.h"

namespace tr {

// A validation inside an epoch (RunOptions::val_every), after `step` training
// steps of the run.
struct ValPoint {
  int64_t step = 0;
  double loss = 0, acc = 0, ema_loss = 0, ema_acc = 0;
  // Inside an epoch (EpochStats::mid_vals): the epoch's training time before
  // this validation, the earlier validations left out, and this one's time.
  double train_seconds = 0, val_seconds = 0;
};

struct EpochStats {
  int epoch = 0;
  bool lowres = false;
  int64_t steps = 0;
  double train_loss = 0, train_acc = 0;
  double val_loss = 0, val_acc = 0, val_ema_loss = 0, val_ema_acc = 0;
  // Training: the epoch's steps, its mid_vals left out; validation: the one at its end.
  double train_seconds = 0, val_seconds = 0;
  int32_t skipped_steps = 0;  // cumulative
  float loss_scale = 0;
  std::vector<ValPoint> mid_vals;  // in step order
};

class Trainer {
 public:
  Trainer(const RunOptions& opt, DataView train, DataView val) : s_(opt, train, val) {}

  EpochStats run_epoch();
  int epochs_done() const { return epoch_; }

  TrainingSession& session() { return s_; }
  const RunOptions& options() const { return s_.options(); }
  const CompiledModel& model() const { return s_.model(); }
  const PlanSet& plans() const { return s_.plans(); }
  const GraphAtlas& atlas() const { return s_.atlas(); }
  const PreCaptureResult& capture() const { return s_.capture(); }
  DeviceContext& context(int local) { return s_.context(local); }
  int local_ranks() const { return s_.local_ranks(); }
  int64_t steps_per_epoch() const { return s_.steps_per_epoch(); }
  void set_step_hook(const StepHook& h) { s_.set_step_hook(h); }

 private:
  void train_epoch_on_rank(int rank, const std::vector<int64_t>& order, bool lowres, std::vector<ValPoint>* mid_vals);
  void validate_on_rank(int rank);
  ValPoint read_val_metrics(int rank, int64_t step);

  TrainingSession s_;
  int epoch_ = 0;
};

}  // namespace tr
