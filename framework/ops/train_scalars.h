#pragma once
// Note [scalars in device memory]
// Values that change every step live in the arena, not in kernel arguments, so a
// captured graph reads the current value at replay time and never needs
// re-capture: learning rate, loss scale, step counter, the NaN/Inf flag.
// The same POD layout is used by the CPU and CUDA kernels.
#include <cstdint>

namespace tr {

struct TrainScalars {
  float lr = 0.f;             // learning rate of the current step (set on device from the schedule table)
  float loss_scale = 1.f;     // dynamic loss scale; the loss gradient is seeded with it
  int32_t step = 0;           // completed (not skipped) optimizer steps
  int32_t found_inf = 0;      // 1 when this step's gradients held a NaN/Inf: the step is skipped
  int32_t good_steps = 0;     // finite steps since the last loss-scale change
  int32_t skipped_steps = 0;  // total skipped steps (for reports and tests)
  int32_t schedule_len = 0;   // entries in the learning-rate table
  int32_t batches = 0;        // training batches run, skipped ones too (Note [augmentation])
  // Note [the check's flag]: the checks (CheckFinite, or a Cast or GradNorm
  // with attrs.check_finite) only ever set pending_inf; AdvanceStep, the one-thread
  // node after them, moves it into found_inf and clears it for the next step.
  // So no node has to clear the flag before the checks (their blocks can run
  // in any order and all write the same 1).
  int32_t pending_inf = 0;
  // 1/loss_scale of the gradients this step applies, recorded by AdvanceStep
  // before it may move the scale (AdvanceStep with attrs.update_scale);
  // SgdNesterov with attrs.unscale multiplies by it.
  float grad_unscale = 1.f;
  // GradNorm (framework/ops/range/grad_norm.h): this step's global gradient
  // norm, and the factor AdamW with attrs.clip multiplies the gradients by.
  float grad_norm = 0.f;
  float clip_scale = 1.f;
};

// Metric slots (f32) written by the loss ops and summed by ACCUM_METRICS.
// Every metrics tensor is an array of kMetricSlots floats.
enum MetricSlot : int { kMetricLossSum = 0, kMetricCorrect = 1, kMetricCount = 2, kMetricSlots = 4 };

}  // namespace tr
