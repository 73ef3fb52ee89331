// Training across processes on the CPU (Note [processes and ranks]): P
// processes x L rank threads give the bits of P*L rank threads in one process
// (ProcessComm keeps Note [fixed summation order]), the modes stay
// bit-identical, N ranks x B/N stays within the thread ranks' bound of 1 x B,
// and a collective mismatch is named alike on every process.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "framework/core/error.h"
#include "tests/mpi/mpi_test_world.h"
#include "tests/train_test_util.h"

namespace tr {
namespace {

using testing::mpi_local_ranks;
using testing::mpi_world;
using testing::state_of;
using testing::view_of;

constexpr int64_t kBatch = 32;

RunOptions run_of(int ranks, ExecMode mode, World* world) {
  RunOptions o = testing::small_run("cnn", OptimizerKind::Lars, mode, kBatch);
  o.train.ranks = ranks;
  o.epochs = 1;
  o.validate = true;
  o.world = world;
  o.watchdog_ms = 30000;  // a broken test fails in seconds, not in two minutes
  return o;
}

int world_ranks() { return mpi_world().processes() * mpi_local_ranks(); }
int first_rank() { return mpi_world().process() * mpi_local_ranks(); }
bool loud() { return mpi_world().process() == 0; }

TEST(Processes, MatchRankThreadsBitForBit) {
  const int R = world_ranks(), L = mpi_local_ranks();
  const auto train = testing::model_data("cnn", 6 * kBatch - 8, 41);  // an incomplete last batch too
  const auto val = testing::model_data("cnn", 64, 42);
  for (ExecMode mode : {ExecMode::Eager, ExecMode::FullCapture}) {
    Trainer threads(run_of(R, mode, nullptr), view_of(train), view_of(val));
    const EpochStats st = threads.run_epoch();
    Trainer procs(run_of(R, mode, &mpi_world()), view_of(train), view_of(val));
    ASSERT_EQ(procs.local_ranks(), L);
    const EpochStats sp = procs.run_epoch();
    int tensors = 0, differ = 0;
    for (int l = 0; l < L; ++l) {
      const auto ref = state_of(threads, first_rank() + l);
      differ += testing::differing_tensors(ref, state_of(procs, l), cat(mode_name(mode), ", rank ", first_rank() + l));
      tensors += static_cast<int>(ref.size());
    }
    // Validation metrics come out of the all-reduce too: the same bits.
    EXPECT_EQ(sp.val_loss, st.val_loss);
    EXPECT_EQ(sp.val_acc, st.val_acc);
    EXPECT_EQ(sp.val_ema_loss, st.val_ema_loss);
    if (loud())
      std::printf(
          "[ mpi ] %d processes x %d rank(s), %s, %lld steps: %d state tensors of process 0, %d differ from "
          "%d rank threads; val loss %.9g vs %.9g\n",
          mpi_world().processes(), L, mode_name(mode).c_str(), static_cast<long long>(procs.steps_per_epoch()), tensors,
          differ, R, sp.val_loss, st.val_loss);
  }
}

TEST(Processes, ModesStayBitIdentical) {
  const int R = world_ranks();
  const auto train = testing::model_data("cnn", 5 * kBatch, 43);
  const auto val = testing::model_data("cnn", 64, 44);
  std::map<std::string, std::vector<float>> ref;
  for (ExecMode mode : {ExecMode::Eager, ExecMode::PartialCapture, ExecMode::FullCapture}) {
    Trainer t(run_of(R, mode, &mpi_world()), view_of(train), view_of(val));
    t.run_epoch();
    const auto s = state_of(t, 0);
    if (mode == ExecMode::Eager) {
      ref = s;
      continue;
    }
    const int differ = testing::differing_tensors(ref, s, cat("eager vs ", mode_name(mode), " across processes"));
    if (loud())
      std::printf("[ mpi modes ] %d ranks in %d processes, %s: %zu state tensors, %d differ from eager\n", R,
                  mpi_world().processes(), mode_name(mode).c_str(), s.size(), differ);
  }
}

// 20 steps of R ranks as processes give the bits of R rank threads (Note
// [fixed summation order] across processes), and every step of them is within
// Note [rank-split bounds] of one rank with the whole batch, started from the
// same state (Note [stepwise rank equivalence]).
TEST(Processes, MatchOneRankWithTheWholeBatchLikeRankThreads) {
  const int R = world_ranks();
  const auto train = testing::model_data("cnn", 20 * kBatch, 21);
  const auto val = testing::model_data("cnn", 64, 22);
  Trainer threads(run_of(R, ExecMode::FullCapture, nullptr), view_of(train), view_of(val));
  threads.run_epoch();
  Trainer procs(run_of(R, ExecMode::FullCapture, &mpi_world()), view_of(train), view_of(val));
  procs.run_epoch();
  const int differ = testing::differing_tensors(state_of(threads, first_rank()), state_of(procs, 0),
                                                "20 steps as processes vs as rank threads");
  auto window = testing::model_data("cnn", kBatch, 21);
  const auto stepwise = [&](int ranks, World* world) {
    return testing::stepwise_run(run_of(ranks, ExecMode::FullCapture, world), 20);
  };
  Trainer one(stepwise(1, nullptr), view_of(window), view_of(window));
  Trainer many(stepwise(R, &mpi_world()), view_of(window), view_of(window));
  const testing::StepwiseDiff d = testing::compare_stepwise(one, many, window, train, 20);
  if (loud())
    std::printf(
        "[ mpi dp ] %d ranks x %lld in %d processes: 20 steps give the rank threads' bits (%d tensors "
        "differ); from the same state as 1 rank x %lld, updates differ by at most %.3g overall (step %d), "
        "worst tensor %.3g (%s, step %d)\n",
        R, static_cast<long long>(kBatch / R), mpi_world().processes(), differ, static_cast<long long>(kBatch), d.total,
        d.total_step, d.worst, d.worst_name.c_str(), d.worst_step);
  EXPECT_LT(d.total, testing::kRankSplitStepTotal) << "step " << d.total_step;
  EXPECT_LT(d.worst, testing::kRankSplitStepWorst) << d.worst_name << ", step " << d.worst_step;
  EXPECT_LT(d.loss_rel, 1e-5);  // DataParallel.RanksMatchOneRankWithTheWholeBatch
}

// The last process buckets its gradients differently, so its collective
// sequence differs: every process must refuse, naming the same rank.
TEST(Processes, ACollectiveMismatchIsNamedOnEveryProcess) {
  if (mpi_world().processes() < 2) GTEST_SKIP() << "needs 2 processes";
  const auto train = testing::model_data("cnn", 2 * kBatch, 47);
  const auto val = testing::model_data("cnn", 64, 48);
  RunOptions o = run_of(world_ranks(), ExecMode::FullCapture, &mpi_world());
  const int last = mpi_world().processes() - 1;
  o.train.bucket_bytes = mpi_world().process() == last ? 16 * 1024 : int64_t(25) << 20;
  const std::string expected = cat("collective sequence mismatch: rank ", last * mpi_local_ranks(), " differs");
  try {
    Trainer t(o, view_of(train), view_of(val));
    ADD_FAILURE() << "no error on process " << mpi_world().process();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
    std::printf("[ mpi mismatch ] process %d: %s\n", mpi_world().process(), e.what());
  }
}

}  // namespace
}  // namespace tr
