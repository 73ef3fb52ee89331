// A capture that fails names the graph, its variant and the rank, keeps the
// error's kind, and leaves nothing half-made: the next session in the same
// process captures and trains normally (CaptureFault, pre_capture.h). The GPU
// case also checks that the device holds no leftover error and no lost memory.
#include <gtest/gtest.h>

#include <string>

#include "tests/gpu_test_util.h"
#include "tests/train_test_util.h"

#ifdef TR_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace tr {
namespace {

using testing::small_run;
using testing::view_of;

TEST(ErrorContext, RethrowKeepsTheKindAndPrefixesTheMessage) {
  try {
    try {
      throw UserError("bad shape");
    } catch (...) {
      rethrow_with_context("capturing X");
    }
  } catch (const UserError& e) {
    EXPECT_STREQ(e.what(), "capturing X: bad shape");
  }
  EXPECT_THROW(
      {
        try {
          throw std::runtime_error("driver said no");
        } catch (...) {
          rethrow_with_context("capturing Y");
        }
      },
      Error);
}

// Returns the failing session's error message ("" when none was thrown).
std::string fail_capture(Backend b, int ranks, CaptureFault fault) {
  const auto train = testing::model_data("cnn", 3 * 32, 41);
  const auto val = testing::model_data("cnn", 32, 42);
  RunOptions o = small_run("cnn", OptimizerKind::Sgd, ExecMode::FullCapture, 32);
  o.backend = b;
  o.train.ranks = ranks;
  o.capture_fault = fault;
  try {
    Trainer t(o, view_of(train), view_of(val));
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

double train_one_epoch(Backend b, int ranks) {
  const auto train = testing::model_data("cnn", 3 * 32, 41);
  const auto val = testing::model_data("cnn", 32, 42);
  RunOptions o = small_run("cnn", OptimizerKind::Sgd, ExecMode::FullCapture, 32);
  o.backend = b;
  o.train.ranks = ranks;
  Trainer t(o, view_of(train), view_of(val));
  return t.run_epoch().train_loss;
}

TEST(CaptureFailure, NamesTheGraphVariantAndRankOnTheCpu) {
  const double before = train_one_epoch(Backend::Cpu, 2);
  std::string msg = fail_capture(Backend::Cpu, 1, {GraphId::DEEP_FWD_BWD, Variant::TrainBase, 0});
  EXPECT_NE(msg.find("capturing DEEP_FWD_BWD (variant train_base, rank 0): injected capture failure"),
            std::string::npos)
      << msg;
  msg = fail_capture(Backend::Cpu, 2, {GraphId::OPTIMIZER, Variant::TrainBase, 1});
  EXPECT_NE(msg.find("capturing OPTIMIZER (variant "), std::string::npos) << msg;
  EXPECT_NE(msg.find(", rank 1): injected capture failure"), std::string::npos) << msg;
  std::printf("[ capture failure ] cpu: %s\n", msg.c_str());
  // Nothing half-made is left behind: the same run again trains exactly as before.
  EXPECT_EQ(train_one_epoch(Backend::Cpu, 2), before);
}

#ifdef TR_HAVE_CUDA
TEST(CaptureFailure, LeavesTheGpuCleanAndNamesTheGraph) {
  SKIP_WITHOUT_GPU();
  const double before = train_one_epoch(Backend::Cuda, 1);  // also loads the libraries once
  size_t free0 = 0, total = 0;
  ASSERT_EQ(cudaMemGetInfo(&free0, &total), cudaSuccess);
  const std::string msg = fail_capture(Backend::Cuda, 1, {GraphId::DEEP_FWD_BWD, Variant::TrainBase, 0});
  EXPECT_NE(msg.find("capturing DEEP_FWD_BWD (variant train_base, rank 0): injected capture failure"),
            std::string::npos)
      << msg;
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  size_t free1 = 0;
  ASSERT_EQ(cudaMemGetInfo(&free1, &total), cudaSuccess);
  std::printf("[ capture failure ] gpu: %s; device memory free %zu -> %zu bytes\n", msg.c_str(), free0, free1);
  // The failed session's arena, graphs and streams are all returned: 4 MiB of
  // slack for the driver's own pools, far below the cnn's arena and graphs.
  EXPECT_GE(free1 + (4u << 20), free0);
  EXPECT_EQ(train_one_epoch(Backend::Cuda, 1), before);
}
#endif

}  // namespace
}  // namespace tr
