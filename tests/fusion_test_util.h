#pragma once
// AMP with fusion on and off against the f32 step (Note [fusion]): fusion
// rounds the BatchNorm + residual sum once instead of twice, so its AMP update
// should be no further from the f32 update than the unfused AMP update is.
#include <algorithm>
#include <cstdio>
#include <string>

#include "tests/train_test_util.h"

namespace tr::testing {

struct FusionAmpDiffs {
  UpdateDiff fused;    // fused AMP update vs the f32 update
  UpdateDiff unfused;  // unfused AMP update vs the f32 update
};

// One step of `batch` samples from the same initial weights: f32 unfused, then
// AMP unfused and fused.
inline FusionAmpDiffs one_step_amp_vs_f32(RunOptions o, int64_t batch, uint64_t seed) {
  o.shuffle = false;
  o.validate = false;
  const auto train = run_data(o, batch, seed);
  o.train.fusion = false;
  o.train.amp = false;
  o.train.init_loss_scale = 1.f;
  Trainer f32(o, view_of(train), view_of(train));
  const auto init = state_of(f32);
  f32.run_epoch();
  const auto ref = state_of(f32);
  o.train.amp = true;
  o.train.init_loss_scale = 128.f;
  auto amp_step = [&](bool fusion) {
    o.train.fusion = fusion;
    Trainer t(o, view_of(train), view_of(train));
    EXPECT_EQ(testing::differing_tensors(init, state_of(t), "AMP and f32 start from the same weights"), 0);
    t.run_epoch();
    return update_diff(init, ref, state_of(t));
  };
  const FusionAmpDiffs d{amp_step(true), amp_step(false)};
  std::printf(
      "[ fusion ] %s amp, one step: the update is %.3g from f32's fused (worst tensor %.3g, %s), %.3g "
      "unfused (worst %.3g, %s)\n",
      o.model.name.c_str(), d.fused.total, d.fused.worst, d.fused.worst_name.c_str(), d.unfused.total, d.unfused.worst,
      d.unfused.worst_name.c_str());
  return d;
}

// Fused AMP carries the same kind of error as unfused AMP (f16 roundings,
// one fewer), so its distance from the f32 update is bounded by the unfused
// one's: 1.5x it, or 2 % of the update where that is larger (one step of
// resnet18 at 1/8 width: AMP alone moves it 1.3-2.6 % from f32). A dropped
// residual or gradient moves it by tens of percent. Only where AMP alone stays
// a few percent from f32 can this tell the two apart: the 1/8-width resnet50
// moves 55-90 % with AMP alone (its BatchNorms over 16 channels and few values
// turn f16 rounding into other ReLU decisions, at batch 16 or 64 and 32 or 64
// pixels alike), so it is not held to it; Fusion.ResidualApplyIsApplyThenAdd
// bounds the fused op in f16 and Fusion.ChangesNoBitOfATrainingRunInF32 its runs.
inline void expect_amp_fusion_no_worse(const FusionAmpDiffs& d, const std::string& what) {
  EXPECT_GT(d.unfused.total, 0) << what << ": AMP changed no bit: did the step run?";
  EXPECT_LT(d.fused.total, std::max(0.02, 1.5 * d.unfused.total)) << what;
}

}  // namespace tr::testing
