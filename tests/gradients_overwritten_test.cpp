// Note [gradients are overwritten] (framework/runtime/step_loop.h): the
// gradient region is cleared once an epoch, so every step must write every
// gradient element before anything reads it. Each model of the registry, in
// fp32, fp16 AMP and bf16, trains three steps with its gradients poisoned with NaN
// between steps, and must end bit for bit where the clean run ends.
#include <gtest/gtest.h>

#include "tests/train_test_util.h"

namespace tr {
namespace {

using testing::expect_poisoned_gradients_change_nothing;

TEST(GradientsOverwritten, PoisonBetweenStepsChangesNoBit) {
  for (const char* model : {"mlp", "cnn"}) {
    for (const testing::PrecisionCase& p : testing::kPrecisions) {
      RunOptions o = testing::small_run(model, OptimizerKind::Sgd, ExecMode::Eager, 16);
      testing::set_precision_case(o.train, p);
      expect_poisoned_gradients_change_nothing(o, 91);
    }
  }
  for (const std::string& model : testing::zoo_models()) {
    for (const testing::PrecisionCase& p : testing::kPrecisions) {
      RunOptions o = testing::zoo_run(model, OptimizerKind::Sgd, ExecMode::Eager, 8);
      testing::set_precision_case(o.train, p);
      expect_poisoned_gradients_change_nothing(o, 92);
    }
  }
}

// The other optimizers read the gradients through their own nodes (AdamW's
// moments, LARS's per-group norms), and full capture runs the step graph.
TEST(GradientsOverwritten, OtherOptimizersAndFullCapture) {
  for (OptimizerKind opt : {OptimizerKind::AdamW, OptimizerKind::Lars}) {
    RunOptions o = testing::small_run("cnn", opt, ExecMode::FullCapture, 16);
    o.train.amp = true;
    o.train.init_loss_scale = 1024.f;
    expect_poisoned_gradients_change_nothing(o, 93);
  }
}

}  // namespace
}  // namespace tr
