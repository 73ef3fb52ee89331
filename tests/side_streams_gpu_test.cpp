// Side streams (weight gradients on COMP_2 beside the data-gradient chain, Note
// [streams inside a graph]) are on by default for CUDA runs up to each model's
// measured batch per GPU (harness/lib/side_streams.h), so they must change no
// bit: the zoo at reduced width, AMP, trains over an epoch with
// an incomplete last batch to the same state with them as eager training on one
// stream, in every mode. Skips without a GPU.
#include <gtest/gtest.h>

#include <cstdio>

#include "tests/gpu_test_util.h"
#include "tests/train_test_util.h"

namespace tr {
namespace {

TEST(SideStreamsGpu, ChangeNoBitInAnyMode) {
  SKIP_WITHOUT_GPU();
  for (const std::string& model : {std::string("resnet18"), std::string("resnet50"), std::string("vgg16bn")}) {
    RunOptions o = testing::zoo_run(model, OptimizerKind::Sgd, ExecMode::Eager, 32, 0.25);
    o.backend = Backend::Cuda;
    o.train.amp = true;
    o.train.init_loss_scale = 1024.f;
    const auto train = testing::run_data(o, 5 * 32 - 8, 101);
    o.train.side_streams = false;
    Trainer one(o, testing::view_of(train), testing::view_of(train));
    one.run_epoch();
    const auto ref = testing::state_of(one);
    for (ExecMode mode : {ExecMode::Eager, ExecMode::PartialCapture, ExecMode::FullCapture}) {
      o.mode = mode;
      o.train.side_streams = true;
      Trainer side(o, testing::view_of(train), testing::view_of(train));
      side.run_epoch();
      const int differing =
          testing::differing_tensors(ref, testing::state_of(side), cat(model, " with side streams, ", mode_name(mode)));
      std::printf("[ side streams gpu ] %s amp %s: %d of %zu state tensors differ from eager on one stream\n",
                  model.c_str(), mode_name(mode).c_str(), differing, ref.size());
    }
  }
}

}  // namespace
}  // namespace tr
