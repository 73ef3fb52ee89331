// Data parallelism on the GPUs of one host (NCCL, one thread per GPU, NVLink
// multicast left off by the GPU check):
//  - N GPUs x B/N train like 1 GPU x B (the bound of the CPU test,
//    data_parallel_test.cpp, for the same reasons), and every GPU holds the
//    same state bit for bit;
//  - eager, partial and full capture stay bit-identical with N GPUs, with
//    synchronised BN and with per-GPU BN (TrainConfig::bn_sync);
//  - on one GPU, with collectives forced: NCCL inside the captured graphs, and
//    the gradient all-reduce timing that tr-bench reports.
// Tests that need N GPUs skip when fewer are visible; every test skips without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>

#include "framework/runtime/context_factory.h"
#include "harness/lib/bench/bench_driver.h"
#include "tests/gpu_test_util.h"
#include "tests/train_test_util.h"

namespace tr {
namespace {

using testing::small_run;
using testing::state_of;
using testing::view_of;

RunOptions gpu_dp_run(int gpus, ExecMode mode) {
  RunOptions o = small_run("cnn", OptimizerKind::Lars, mode, 32);
  o.backend = Backend::Cuda;
  o.train.ranks = gpus;
  o.epochs = 1;
  return o;
}

// 20 steps of N GPUs x 32/N against 1 GPU x 32, each from the same state
// (Note [stepwise rank equivalence]); the bounds of a few flips, as
// GpuProcesses.MatchOneGpuWithTheWholeBatch says: on a GPU a rank's BatchNorm
// sums are f32 partials and cuDNN may choose by batch, so a sample's forward is
// not the same bits in both, and a step may flip a max-pool tie or a ReLU.
TEST(GpuDataParallel, GpusMatchOneGpuWithTheWholeBatch) {
  SKIP_WITHOUT_GPUS(2);
  const int have = cuda_device_count();
  const auto train = testing::model_data("cnn", 20 * 32, 21);
  auto window = testing::model_data("cnn", 32, 21);
  const auto run = [](int gpus) { return testing::stepwise_run(gpu_dp_run(gpus, ExecMode::FullCapture), 20); };
  for (int gpus : {2, 4, 8}) {
    if (gpus > have) break;
    Trainer one(run(1), view_of(window), view_of(window));
    Trainer t(run(gpus), view_of(window), view_of(window));
    const testing::StepwiseDiff d = testing::compare_stepwise(one, t, window, train, 20);
    for (int r = 1; r < gpus; ++r)
      EXPECT_EQ(testing::differing_tensors(state_of(t, 0), state_of(t, r), cat("gpu 0 vs gpu ", r)), 0);
    std::printf(
        "[ gpu dp ] %d GPUs x %d vs 1 GPU x 32, 20 steps from the same state: updates differ by at most "
        "%.3g overall (step %d), worst tensor %.3g (%s, step %d); training loss within %.3g\n",
        gpus, 32 / gpus, d.total, d.total_step, d.worst, d.worst_name.c_str(), d.worst_step, d.loss_rel);
    EXPECT_LT(d.total, 2e-3) << "step " << d.total_step;
    EXPECT_LT(d.worst, 0.05) << d.worst_name << ", step " << d.worst_step;
    EXPECT_LT(d.loss_rel, 1e-3);  // a flip moves one sample's loss: a few parts in 10^4 of the mean over 32
  }
}

TEST(GpuDataParallel, ModesStayBitIdenticalOnSeveralGpus) {
  SKIP_WITHOUT_GPUS(2);
  const int have = cuda_device_count();
  const int gpus = have >= 8 ? 8 : have >= 4 ? 4 : 2;
  const auto train = testing::model_data("cnn", 10 * 32 - 8, 23);  // incomplete last batch
  const auto val = testing::model_data("cnn", 64, 24);
  for (BnSync sync : {BnSync::Batch, BnSync::Running}) {
    std::map<std::string, std::vector<float>> ref;
    for (auto [mode, split] : testing::kModeRuns) {
      RunOptions o = gpu_dp_run(gpus, mode);
      o.step_graphs = !split;
      o.train.bn_sync = sync;
      Trainer t(o, view_of(train), view_of(val));
      t.run_epoch();
      const auto s = state_of(t, gpus - 1);
      // Every GPU holds the same state, whichever way BN shares statistics.
      const auto s0 = state_of(t, 0);
      for (const auto& [name, v] : s0)
        EXPECT_EQ(0, std::memcmp(v.data(), s.at(name).data(), v.size() * 4)) << name << ": gpu 0 vs " << gpus - 1;
      if (mode == ExecMode::Eager) {
        ref = s;
        continue;
      }
      const int differing =
          testing::differing_tensors(ref, s, cat("eager vs ", mode_name(mode), split ? " split" : ""));
      std::printf("[ gpu dp ] %d GPUs, BN sync %s, %s%s: %zu state tensors, %d differ from eager\n", gpus,
                  bn_sync_name(sync).c_str(), mode_name(mode).c_str(), split ? " (split steps)" : "", s.size(),
                  differing);
    }
  }
}

// Per-GPU BN (BnSync::Running) against its CPU oracle, the same two ranks as
// threads: after one step every state tensor agrees to 1e-4 relative (max
// difference over max magnitude; first-step gradients GPU vs CPU agree to
// ~7e-6, and the step moves weights by lr x gradient). A wrong statistics count
// or a missing average is off by tens of percent in the BN running statistics.
TEST(GpuDataParallel, PerGpuBnMatchesTheCpuRanksAfterOneStep) {
  SKIP_WITHOUT_GPUS(2);
  const auto train = testing::model_data("cnn", 32, 63);
  const auto val = testing::model_data("cnn", 32, 64);
  auto one_step = [&](Backend b) {
    RunOptions o = gpu_dp_run(2, ExecMode::FullCapture);
    o.backend = b;
    o.train.bn_sync = BnSync::Running;
    Trainer t(o, view_of(train), view_of(val));
    t.run_epoch();
    return state_of(t, 1);
  };
  const auto gpu = one_step(Backend::Cuda), cpu = one_step(Backend::Cpu);
  double worst = 0;
  std::string worst_name;
  for (const auto& [name, c] : cpu) {
    const auto& g = gpu.at(name);
    double num = 0, den = 0;
    for (size_t i = 0; i < c.size(); ++i) {
      num = std::max(num, std::fabs(double(g[i]) - double(c[i])));
      den = std::max(den, std::fabs(double(c[i])));
    }
    const double rel = den > 0 ? num / den : num;
    EXPECT_LT(rel, 1e-4) << name;
    if (rel > worst) worst = rel, worst_name = name;
  }
  std::printf("[ gpu dp ] per-GPU BN, 2 GPUs vs 2 CPU ranks, one step: worst tensor differs by %.3g (%s)\n", worst,
              worst_name.c_str());
}

// One GPU with NCCL inside its captured graphs (collectives forced with one
// rank): gradient buckets, BN statistics and validation metrics go through
// ncclAllReduce, captured; the result is bit-identical to eager and to a run
// without collectives (a sum over one rank is the value itself). Per-GPU BN
// (BnSync::Running) puts NCCL's average of the BN statistics in FIRST_COMM
// instead: over one rank that too changes nothing.
TEST(GpuDataParallel, OneRankRunsNcclInsideCapturedGraphs) {
  SKIP_WITHOUT_GPU();
  const auto train = testing::model_data("cnn", 10 * 32 - 8, 59);
  const auto val = testing::model_data("cnn", 64, 60);
  auto run = [&](ExecMode mode, bool collectives, int* captured_collective, BnSync sync = BnSync::Batch) {
    RunOptions o = small_run("cnn", OptimizerKind::Lars, mode, 32);
    o.backend = Backend::Cuda;
    o.epochs = 2;
    o.train.force_collectives = collectives;
    o.train.bn_sync = sync;
    Trainer t(o, view_of(train), view_of(val));
    if (captured_collective) *captured_collective = t.capture().collective;
    EpochStats s;
    for (int e = 0; e < 2; ++e) s = t.run_epoch();
    EXPECT_TRUE(std::isfinite(s.train_loss));
    return state_of(t);
  };
  int collective_graphs = 0;
  const auto full = run(ExecMode::FullCapture, true, &collective_graphs);
  const auto eager = run(ExecMode::Eager, true, nullptr);
  const auto plain = run(ExecMode::FullCapture, false, nullptr);
  int running_graphs = 0;
  const auto running = run(ExecMode::FullCapture, true, &running_graphs, BnSync::Running);
  std::printf("[ nccl ] one rank: %d captured graphs hold NCCL all-reduces (%d with per-GPU BN)\n", collective_graphs,
              running_graphs);
  EXPECT_EQ(collective_graphs, testing::kCnnCollectiveGraphs.at(BnSync::Batch));
  EXPECT_EQ(running_graphs, testing::kCnnCollectiveGraphs.at(BnSync::Running));
  for (const auto& [name, v] : full) {
    EXPECT_EQ(0, std::memcmp(v.data(), eager.at(name).data(), v.size() * 4)) << name << ": full vs eager";
    EXPECT_EQ(0, std::memcmp(v.data(), plain.at(name).data(), v.size() * 4)) << name << ": with vs without NCCL";
    EXPECT_EQ(0, std::memcmp(v.data(), running.at(name).data(), v.size() * 4)) << name << ": per-GPU BN";
  }
}

TEST(GpuDataParallel, GradientAllreduceIsTimedInsideTheStepAndAlone) {
  SKIP_WITHOUT_GPU();
  const auto train = testing::model_data("cnn", 4 * 64, 61);
  const auto val = testing::model_data("cnn", 64, 62);
  const int gpus = cuda_device_count() >= 2 ? 2 : 1;
  RunOptions o = gpu_dp_run(gpus, ExecMode::FullCapture);
  o.batch = 64;
  o.train.force_collectives = gpus == 1;
  Trainer t(o, view_of(train), view_of(val));
  const auto msgs = bench::BenchDriver(t.session()).grad_allreduce_messages(Variant::TrainBase);
  ASSERT_FALSE(msgs.empty());
  int64_t bytes = 0;
  for (const auto& m : msgs) bytes += m.bytes();
  bench::BenchDriver drive(t.session());
  drive.prime(Variant::TrainBase);
  drive.steps(Variant::TrainBase, 3);
  const auto at = drive.allreduce(Variant::TrainBase, 10);
  std::printf("[ allreduce ] %d GPU(s): %.3f MB in %zu messages per step: %.4f ms inside the step, %.4f ms alone\n",
              gpus, bytes / 1e6, msgs.size(), at.in_step_ms, at.alone_ms);
  EXPECT_GT(at.in_step_ms, 0);
  EXPECT_GT(at.alone_ms, 0);
}

}  // namespace
}  // namespace tr
