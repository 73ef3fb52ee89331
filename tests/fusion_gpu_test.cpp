// Note [fusion] (framework/graph/fusion.h) on the GPU: the ResNets at reduced
// width train to the same bits with fusion on and off in f32, in eager and
// full-capture mode; with AMP (where the fused BatchNorm + residual rounds once
// instead of twice) the two runs stay close. Skips without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>

#include "tests/gpu_test_util.h"
#include "tests/train_test_util.h"

namespace tr {
namespace {

using testing::run_data;
using testing::state_of;
using testing::view_of;
using testing::zoo_run;

TEST(FusionGpu, ChangesNoBitInF32AndLittleWithAmp) {
  SKIP_WITHOUT_GPU();
  for (const std::string& model : {std::string("resnet18"), std::string("resnet50")})
    for (bool amp : {false, true}) {
      RunOptions o = zoo_run(model, OptimizerKind::Sgd, ExecMode::Eager, 32, 0.25);
      o.backend = Backend::Cuda;
      o.train.amp = amp;
      if (amp) o.train.init_loss_scale = 1024.f;
      const auto train = run_data(o, 5 * 32 - 8, 97);
      o.train.fusion = false;
      Trainer plain(o, view_of(train), view_of(train));
      const EpochStats p = plain.run_epoch();
      const auto ref = state_of(plain);
      for (ExecMode mode : {ExecMode::Eager, ExecMode::FullCapture}) {
        o.mode = mode;
        o.train.fusion = true;
        Trainer fused(o, view_of(train), view_of(train));
        const EpochStats f = fused.run_epoch();
        const auto got = state_of(fused);
        int differing = 0;  // counted here: with AMP a difference is expected, not a failure
        for (const auto& [name, v] : ref)
          differing += std::memcmp(v.data(), got.at(name).data(), v.size() * sizeof(float)) != 0;
        std::printf("[ fusion gpu ] %s %s %s: %d+%d pairs fused, train loss %.6f (unfused %.6f), %d of %zu state "
                    "tensors differ\n",
                    model.c_str(), amp ? "amp" : "f32", mode_name(mode).c_str(), fused.model().fusions.bn_add,
                    fused.model().fusions.add_relu_bwd, f.train_loss, p.train_loss, differing, ref.size());
        EXPECT_GT(fused.model().fusions.bn_add, 0);
        if (!amp) {
          EXPECT_EQ(differing, 0) << model << " " << mode_name(mode);
        } else {
          EXPECT_NEAR(f.train_loss, p.train_loss, 0.02 * std::abs(p.train_loss)) << model << " " << mode_name(mode);
        }
      }
    }
}

}  // namespace
}  // namespace tr
