// The rule by which tr-bench checks its own launch counts against CUPTI's
// (harness/lib/bench/launch_crosscheck.h), case by case; and, on a GPU, that a
// tr-bench run of every mode passes it with the counts full capture promises.
#include <gtest/gtest.h>

#include <unistd.h>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "harness/lib/bench/launch_crosscheck.h"
#include "harness/lib/report/json_report.h"
#include "tests/bin_dir.h"
#include "tests/gpu_test_util.h"

namespace tr::bench {
namespace {

TEST(LaunchCrosscheck, TheRuleCaseByCase) {
  const StepLaunches full{1, 0, 0};  // full capture: one graph, nothing else
  EXPECT_TRUE(launch_counts_agree(full, full));
  EXPECT_FALSE(launch_counts_agree(full, {2, 0, 0})) << "a graph launch the framework did not count";
  EXPECT_FALSE(launch_counts_agree(full, {0, 0, 0})) << "a graph launch CUPTI did not see";
  EXPECT_FALSE(launch_counts_agree(full, {1, 1, 0})) << "a memcpy the framework did not count";
  EXPECT_FALSE(launch_counts_agree(full, {1, 0, 3})) << "kernels outside the graph, counted by nobody here";
  const StepLaunches eager{0, 1, 80};  // eager: kernels and library calls, the input copy
  EXPECT_TRUE(launch_counts_agree(eager, {0, 1, 80}));
  EXPECT_TRUE(launch_counts_agree(eager, {0, 1, 95})) << "library calls may start several kernels each";
  EXPECT_FALSE(launch_counts_agree(eager, {0, 1, 79})) << "fewer kernels than the framework launched";
  EXPECT_FALSE(launch_counts_agree(eager, {0, 1, 0})) << "none seen where the framework launched 80";
  EXPECT_FALSE(launch_counts_agree(eager, {0, 0, 80})) << "a memcpy CUPTI did not see";
}

// tr-bench beside this test executable (tests/bin_dir.h).
std::string tr_bench() { return testing::bin_dir() + "/tr-bench"; }

TEST(LaunchCrosscheckGpu, TrBenchAgreesWithCuptiInEveryMode) {
  SKIP_WITHOUT_GPU();
  const std::string json = ::testing::TempDir() + "launch_crosscheck_" + std::to_string(getpid()) + ".json";
  const std::string cmd = tr_bench() +
                          " --device cuda --model cnn --batch 64 --precision amp --variants train_base "
                          "--mode eager,partial-capture,full-capture --warmup 2 --iters 5 --repetitions 1 --json " +
                          json + " > /dev/null 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  const BenchReport r = read_report(json);
  int checked = 0;
  for (const BenchCase& c : r.cases) {
    const std::string name = c.name(r.context.device_kind);
    ASSERT_TRUE(c.counters.count("launch_crosscheck_ok")) << name << ": no CUPTI counts (is CUPTI on the path?)";
    EXPECT_EQ(c.counters.at("launch_crosscheck_ok"), 1.0) << name;
    if (c.mode == "full-capture") {
      EXPECT_EQ(c.counters.at("cupti_graph_launches_per_step"), 1.0) << name;
      EXPECT_EQ(c.counters.at("cupti_kernel_launches_per_step"), 0.0) << name;
    }
    ++checked;
  }
  std::filesystem::remove(json);
  EXPECT_EQ(checked, 3) << "eager, partial and full capture";
}

}  // namespace
}  // namespace tr::bench
