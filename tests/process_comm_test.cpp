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
#include "harness/lib/cli/process_agreement.h"
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

// R rank threads of one process, then P "processes" x L threads, average the
// same values of T (f32, or f64 as BatchNorm's sums are on the CPU): the same
// bits, every element summed in global rank order.
template <class T>
void expect_processes_sum_like_threads(DType dtype) {
  const int P = 3, L = 2, R = P * L;
  const int64_t n = 1001;  // not a multiple of P: the last chunk is short
  std::vector<std::vector<T>> data(static_cast<size_t>(R), std::vector<T>(static_cast<size_t>(n)));
  for (int r = 0; r < R; ++r)
    for (int64_t i = 0; i < n; ++i) data[size_t(r)][size_t(i)] = T(1) / T(3 + r * 7 + i) * (i % 2 ? T(1e4) : T(1e-3));
  // Reference: R rank threads of one process.
  auto ref = data;
  {
    SharedMemoryComm c(R, std::chrono::milliseconds(10000));
    std::vector<std::thread> t;
    for (int r = 0; r < R; ++r)
      t.emplace_back([&, r] { c.allreduce(r, ref[size_t(r)].data(), n, dtype, ReduceOp::Average, nullptr); });
    for (auto& x : t) x.join();
  }
  // The sum in rank order, written out here.
  for (int64_t i = 0; i < n; ++i) {
    T s = data[0][size_t(i)];
    for (int r = 1; r < R; ++r) s += data[size_t(r)][size_t(i)];
    ASSERT_EQ(ref[0][size_t(i)], s / T(R)) << "element " << i;
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
          c.allreduce(r, got[size_t(r)].data(), n, dtype, ReduceOp::Average, nullptr);
        } catch (...) {
          errors[size_t(l)] = std::current_exception();
        }
      });
    for (auto& x : t) x.join();
    for (auto& e : errors)
      if (e) std::rethrow_exception(e);
  });
  for (int r = 0; r < R; ++r)
    EXPECT_EQ(0, std::memcmp(ref[size_t(r)].data(), got[size_t(r)].data(), size_t(n) * sizeof(T))) << "rank " << r;
}

TEST(ProcessComm, SumsInRankOrderLikeTheSharedMemoryComm) { expect_processes_sum_like_threads<float>(DType::F32); }
TEST(ProcessComm, SumsDoublesInRankOrderLikeTheSharedMemoryComm) {
  expect_processes_sum_like_threads<double>(DType::F64);
}

// Two processes that post the same count in other element types are refused
// on both, naming the types; so are two rank threads.
TEST(ProcessComm, AnotherElementTypeIsACollectiveMismatch) {
  std::vector<std::string> errors(2);
  on_processes(2, [&](World& w) {
    ProcessComm c(w, 1, std::chrono::milliseconds(10000));
    std::vector<double> v(8, 1.0);
    try {
      c.allreduce(w.process(), v.data(), 8, w.process() == 0 ? DType::F64 : DType::F32, ReduceOp::Sum, nullptr);
    } catch (const Error& e) {
      errors[size_t(w.process())] = e.what();
    }
  });
  EXPECT_NE(errors[0].find("collective mismatch at all-reduce #0 (8 f64): process 1 (rank 1) posted 8 f32 elements"),
            std::string::npos)
      << errors[0];
  EXPECT_NE(errors[1].find("collective mismatch at all-reduce #0 (8 f32): process 0 (rank 0) posted 8 f64 elements"),
            std::string::npos)
      << errors[1];
  SharedMemoryComm c(2, std::chrono::milliseconds(10000));
  std::vector<std::string> thread_errors(2);
  std::vector<std::thread> t;
  for (int r = 0; r < 2; ++r)
    t.emplace_back([&, r] {
      std::vector<double> v(8, 1.0);
      try {
        c.allreduce(r, v.data(), 8, r == 0 ? DType::F64 : DType::F32, ReduceOp::Sum, nullptr);
      } catch (const Error& e) {
        thread_errors[size_t(r)] = e.what();
      }
    });
  for (auto& x : t) x.join();
  for (int r = 0; r < 2; ++r)
    EXPECT_NE(thread_errors[size_t(r)].find("rank 1 posted 8 f32 elements, rank 0 posted 8 f64"), std::string::npos)
        << "rank " << r << ": " << thread_errors[size_t(r)];
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
  EXPECT_NE(message.find("for the other processes: process 1 did not arrive"), std::string::npos) << message;
  EXPECT_LT(s, 5.0);
}

// Note [processes agree]: every process sees every list, so every process
// refuses with the same message, naming the setting and who holds what.
TEST(ProcessAgreement, ProcessesStartedDifferentlyAllRefuseNamingTheSetting) {
  std::vector<std::string> messages(3);
  on_processes(3, [&](World& w) {
    std::vector<RunSetting> mine = {{"tool", "tr-train"}, {"--epochs", "2"}, {"--seed", w.process() == 2 ? "7" : "1"}};
    if (w.process() == 1) mine.push_back({"TR_X", "on"});
    try {
      check_processes_agree(w, mine, std::chrono::milliseconds(20000));
    } catch (const UserError& e) {
      messages[size_t(w.process())] = e.what();
    }
  });
  const std::string want =
      "the processes were started differently: --seed is '1' on processes 0, 1 but '7' on process 2; TR_X is "
      "(not given) on processes 0, 2 but 'on' on process 1. Every process of a run must have the same flags, TR_* "
      "environment and data";
  for (const std::string& m : messages) EXPECT_EQ(m, want);
  // The same lists pass.
  on_processes(2, [&](World& w) {
    check_processes_agree(w, {{"data", "00ff00ff00ff00ff"}, {"--note", "a\nb"}}, std::chrono::milliseconds(20000));
  });
}

TEST(ProcessAgreement, NamesAtMostThreeSettings) {
  std::vector<std::vector<RunSetting>> lists(2);
  for (int i = 0; i < 5; ++i) {
    lists[0].push_back({cat("--f", i), "1"});
    lists[1].push_back({cat("--f", i), "2"});
  }
  const std::string m = disagreement(lists);
  EXPECT_NE(m.find("--f2 is '1' on process 0 but '2' on process 1; and 2 more setting(s)"), std::string::npos) << m;
  EXPECT_EQ(disagreement({lists[0], lists[0]}), "");
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
  for (int r = 0; r < R; ++r)
    differ += testing::differing_tensors(testing::state_of(threads, r), got[size_t(r)], cat("rank ", r));
  std::printf(
      "[ process comm ] %d thread-processes x %d ranks: %zu state tensors per rank, %d differ from %d rank "
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
