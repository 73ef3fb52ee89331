// Side streams (weight gradients on COMP_2 beside the data-gradient chain, Note
// [streams inside a graph]) are on by default for CUDA runs up to each model's
// measured batch per GPU (harness/lib/bench/side_streams.h), so they must change no
// bit: the zoo at reduced width, AMP, trains over an epoch with
// an incomplete last batch to the same state with them as eager training on one
// stream, in every mode. Skips without a GPU.
#include <gtest/gtest.h>

#include "tests/gpu_test_util.h"
#include "tests/train_test_util.h"

namespace tr {
namespace {

TEST(SideStreamsGpu, ChangeNoBitInAnyMode) {
  SKIP_WITHOUT_GPU();
  for (const char* model : {"resnet18", "resnet50", "vgg16bn"})
    testing::expect_setting_changes_no_bit(
        model, 101, "side streams gpu", "eager on one stream", [](RunOptions& o) { o.train.side_streams = false; },
        [](RunOptions& o) { o.train.side_streams = true; });
}

}  // namespace
}  // namespace tr
