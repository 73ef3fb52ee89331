// Note [gradients are overwritten] (framework/runtime/step_loop.h): the
// gradient region is cleared once an epoch, so every step must write every
// gradient element before anything reads it. Each model of the registry, in
// fp32 and AMP, trains three steps with its gradients poisoned with NaN
// between steps, and must end bit for bit where the clean run ends.
#include <gtest/gtest.h>

#include "tests/train_test_util.h"

namespace tr {
namespace {

using testing::expect_poisoned_gradients_change_nothing;

TEST(GradientsOverwritten, PoisonBetweenStepsChangesNoBit) {
  for (const char* model : {"mlp", "cnn"}) {
    for (bool amp : {false, true}) {
      RunOptions o = testing::small_run(model, OptimizerKind::Sgd, ExecMode::Eager, 16);
      o.train.amp = amp;
      o.train.init_loss_scale = amp ? 256.f : 1.f;
      expect_poisoned_gradients_change_nothing(o, 91);
    }
  }
  for (const std::string& model : testing::zoo_models()) {
    for (bool amp : {false, true}) {
      RunOptions o = testing::zoo_run(model, OptimizerKind::Sgd, ExecMode::Eager, 8);
      o.train.amp = amp;
      o.train.init_loss_scale = amp ? 256.f : 1.f;
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
