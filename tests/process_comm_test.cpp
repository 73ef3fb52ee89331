// The multi-process code paths without MPI (tests/thread_world.h): ProcessComm
// keeps Note [fixed summation order] across "processes" (the same bits as rank
// threads), a mismatch across processes is named on each, and a process that
// never arrives trips the watchdog. Runs under ASan and TSan in CI.
#include <gtest/gtest.h>

#include <chrono>
#include <exception>
#include <thread>

#include "framework/comm/process_comm.h"
#include "framework/comm/shared_memory_comm.h"
#include "tests/thread_world.h"
#include "tests/train_test_util.h"

namespace tr {
namespace {

using testing::ThreadWorld;
using testing::ThreadWorldHub;

// Runs fn(process) on P threads, each with its own ThreadWorld; rethrows the
// first failure.
void on_processes(int P, const std::function<void(World&)>& fn) {
  auto hub = std::make_shared<ThreadWorldHub>(P);
  std::vector<std::exception_ptr> errors(static_cast<size_t>(P));
  std::vector<std::thread> threads;
  for (int p = 0; p < P; ++p)
    threads.emplace_back([&, p] {
      try {
        ThreadWorld w(hub, p);
        fn(w);
      } catch (...) {
        errors[size_t(p)] = std::current_exception();
      }
    });
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

TEST(ProcessComm, SumsInRankOrderLikeTheSharedMemoryComm) {
  const int P = 3, L = 2, R = P * L;
  const int64_t n = 1001;  // not a multiple of P: the last chunk is short
  std::vector<std::vector<float>> data(static_cast<size_t>(R), std::vector<float>(static_cast<size_t>(n)));
  for (int r = 0; r < R; ++r)
    for (int64_t i = 0; i < n; ++i) data[size_t(r)][size_t(i)] = 1.f / float(3 + r * 7 + i) * (i % 2 ? 1e4f : 1e-3f);
  // Reference: R rank threads of one process.
  auto ref = data;
  {
    SharedMemoryComm c(R, std::chrono::milliseconds(10000));
    std::vector<std::thread> t;
    for (int r = 0; r < R; ++r)
      t.emplace_back([&, r] { c.allreduce(r, ref[size_t(r)].data(), n, DType::F32, ReduceOp::Average, nullptr); });
    for (auto& x : t) x.join();
  }
  auto got = data;
  on_processes(P, [&](World& w) {
    ProcessComm c(w, L, std::chrono::milliseconds(10000));
    EXPECT_EQ(c.ranks(), R);
    std::vector<std::exception_ptr> errors(static_cast<size_t>(L));
    std::vector<std::thread> t;
    for (int l = 0; l < L; ++l)
      t.emplace_back([&, l] {
        const int r = w.process() * L + l;
        try {
          c.allreduce(r, got[size_t(r)].data(), n, DType::F32, ReduceOp::Average, nullptr);
        } catch (...) {
          errors[size_t(l)] = std::current_exception();
        }
      });
    for (auto& x : t) x.join();
    for (auto& e : errors)
      if (e) std::rethrow_exception(e);
  });
  for (int r = 0; r < R; ++r)
    EXPECT_EQ(0, std::memcmp(ref[size_t(r)].data(), got[size_t(r)].data(), size_t(n) * sizeof(float))) << "rank " << r;
}

TEST(ProcessComm, AProcessThatNeverArrivesTripsTheWatchdog) {
  std::string message;
  const auto t0 = std::chrono::steady_clock::now();
  on_processes(2, [&](World& w) {
    if (w.process() == 1) return;  // never joins the all-reduce
    ProcessComm c(w, 1, std::chrono::milliseconds(300));
    std::vector<float> v(16, 1.f);
    try {
      c.allreduce(0, v.data(), 16, DType::F32, ReduceOp::Sum, nullptr);
    } catch (const Error& e) {
      message = e.what();
    }
  });
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_NE(message.find("watchdog: process 0 of 2 waited 300 ms in all-reduce #0"), std::string::npos) << message;
  EXPECT_LT(s, 5.0);
}

// P "processes" x L rank threads train to the bits of P*L rank threads, and a
// mismatched collective sequence is refused on every process.
TEST(ProcessComm, TrainingAcrossThreadProcessesMatchesRankThreads) {
  const int P = 2, L = 2, R = P * L;
  const auto train = testing::model_data("cnn", 4 * 32 - 8, 51);
  const auto val = testing::model_data("cnn", 64, 52);
  auto run_of = [&](World* w) {
    RunOptions o = testing::small_run("cnn", OptimizerKind::Lars, ExecMode::FullCapture, 32);
    o.train.ranks = R;
    o.world = w;
    o.watchdog_ms = 20000;
    return o;
  };
  Trainer threads(run_of(nullptr), testing::view_of(train), testing::view_of(val));
  const EpochStats st = threads.run_epoch();
  std::vector<std::map<std::string, std::vector<float>>> got(static_cast<size_t>(R));
  std::vector<EpochStats> stats(static_cast<size_t>(P));
  on_processes(P, [&](World& w) {
    Trainer t(run_of(&w), testing::view_of(train), testing::view_of(val));
    stats[size_t(w.process())] = t.run_epoch();
    for (int l = 0; l < L; ++l) got[size_t(w.process() * L + l)] = testing::state_of(t, l);
  });
  int differ = 0;
  for (int r = 0; r < R; ++r) differ += testing::differing_tensors(testing::state_of(threads, r), got[size_t(r)], cat("rank ", r));
  std::printf("[ process comm ] %d thread-processes x %d ranks: %zu state tensors per rank, %d differ from %d rank "
              "threads; train loss %.9g vs %.9g\n",
              P, L, got[0].size(), differ, R, stats[0].train_loss, st.train_loss);
  for (const EpochStats& s : stats) {
    EXPECT_EQ(s.val_loss, st.val_loss);
    EXPECT_NEAR(s.train_loss, st.train_loss, 1e-12);  // summed in another order, in double
  }

  std::vector<std::string> errors(static_cast<size_t>(P));
  on_processes(P, [&](World& w) {
    RunOptions o = run_of(&w);
    o.train.bucket_bytes = w.process() == 1 ? 16 * 1024 : int64_t(25) << 20;
    try {
      Trainer t(o, testing::view_of(train), testing::view_of(val));
    } catch (const Error& e) {
      errors[size_t(w.process())] = e.what();
    }
  });
  for (int p = 0; p < P; ++p)
    EXPECT_NE(errors[size_t(p)].find("collective sequence mismatch: rank 2 differs from rank 0 at collective #"),
              std::string::npos)
        << "process " << p << ": " << errors[size_t(p)];
}

}  // namespace
}  // namespace tr
