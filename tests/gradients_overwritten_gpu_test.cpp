// Note [gradients are overwritten] on the GPU: the kernels that write the
// gradients (cuDNN's and tr's filter gradients, cuBLAS's and tr's fc, the
// BatchNorm sums, the AMP casts) must cover every element in every step. The
// cnn, resnet18 and vgg16bn (each with the GPU's own kernel choices: the cnn's
// 3x3 filter gradient on tr's kernel, vgg16bn's fused BatchNorm-ReLU-pool)
// train three steps with their gradients poisoned between steps, in fp32 and
// AMP, in full capture.
#include <gtest/gtest.h>

#include "tests/gpu_test_util.h"
#include "tests/train_test_util.h"

namespace tr {
namespace {

TEST(GradientsOverwrittenGpu, PoisonBetweenStepsChangesNoBit) {
  SKIP_WITHOUT_GPU();
  for (const std::string model : {"cnn", "resnet18", "vgg16bn"}) {
    for (const testing::PrecisionCase& p : testing::kPrecisions) {
      RunOptions o = model == "cnn" ? testing::small_run(model, OptimizerKind::Sgd, ExecMode::FullCapture, 64)
                                    : testing::zoo_run(model, OptimizerKind::Sgd, ExecMode::FullCapture, 32, 0.25);
      o.backend = Backend::Cuda;
      testing::set_precision_case(o.train, p);
      testing::expect_poisoned_gradients_change_nothing(o, 94);
    }
  }
}

}  // namespace
}  // namespace tr
