// NVTX ranges checked without Nsight: the tools run with a recording NVTX
// injection library (tests/nvtx_recorder), and the test reads back every push
// and pop of the "tr" domain: names, nesting and balance.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct Range {
  std::string name;
  std::string parent;  // enclosing range on the same thread ("" at the top)
  int depth = 0;
};

std::string bin_dir() {
  std::error_code ec;
  return std::filesystem::read_symlink("/proc/self/exe", ec).parent_path().string();
}

#ifdef TR_NVTX_RECORDER
// The recorder beside the executables (a packed copy on another machine, see
// ci/pack_device.sh) or where the build left it.
std::string recorder_path() {
  const std::filesystem::path packed =
      std::filesystem::path(bin_dir()) / std::filesystem::path(TR_NVTX_RECORDER).filename();
  return std::filesystem::exists(packed) ? packed.string() : std::string(TR_NVTX_RECORDER);
}
#endif

// Runs a tool with the recorder and returns its ranges in push order.
std::vector<Range> record(const std::string& args) {
#ifndef TR_NVTX_RECORDER
  (void)args;
  return {};
#else
  EXPECT_TRUE(std::filesystem::exists(recorder_path())) << "NVTX recorder missing: " << recorder_path();
  // ctest runs test cases as parallel processes: one log per process.
  const std::string log = testing::TempDir() + "tr_nvtx_" + std::to_string(getpid()) + ".log";
  std::filesystem::remove(log);
  const std::string cmd = "NVTX_INJECTION64_PATH=" + recorder_path() + " TR_NVTX_LOG=" + log + " " + bin_dir() + "/" +
                          args + " > /dev/null";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::ifstream f(log);
  std::map<std::string, std::vector<std::string>> stacks;  // per thread
  std::vector<Range> out;
  std::string line;
  while (std::getline(f, line)) {
    std::istringstream is(line);
    std::string op, thread, domain, name;
    is >> op >> thread >> domain;
    std::getline(is, name);
    if (!name.empty() && name[0] == ' ') name.erase(0, 1);
    EXPECT_EQ(domain, "tr") << line;
    auto& st = stacks[thread];
    if (op == "push") {
      out.push_back({name, st.empty() ? "" : st.back(), static_cast<int>(st.size())});
      st.push_back(name);
    } else {
      EXPECT_FALSE(st.empty()) << "pop without push: " << line;
      if (!st.empty()) st.pop_back();
    }
  }
  for (const auto& [t, st] : stacks)
    EXPECT_TRUE(st.empty()) << "thread " << t << " left " << st.size() << " open ranges";
  return out;
#endif
}

int count(const std::vector<Range>& rs, const std::string& name, const std::string& parent) {
  int n = 0;
  for (const auto& r : rs) n += r.name == name && r.parent == parent;
  return n;
}

TEST(Nvtx, TrainRangesNestAsPhasesStepsAndGraphs) {
#ifndef TR_NVTX_RECORDER
  GTEST_SKIP() << "built without NVTX headers";
#endif
  // mlp, 4 steps of 50, validation of 2 batches; steps as their sub-graphs.
  const auto rs =
      record("tr-train --synthetic --train-subset 200 --val-subset 100 --batch 50 --epochs 1 --split-steps");
  ASSERT_FALSE(rs.empty());
  EXPECT_EQ(rs[0].name, "compile");
  EXPECT_EQ(count(rs, "compile", ""), 1);
  EXPECT_EQ(count(rs, "plan", ""), 1);
  EXPECT_EQ(count(rs, "capture", ""), 1);
  EXPECT_EQ(count(rs, "epoch", ""), 1);
  EXPECT_EQ(count(rs, "train_step", "epoch"), 4);
  EXPECT_EQ(count(rs, "DEEP_FWD_BWD", "train_step"), 4);
  EXPECT_EQ(count(rs, "OPTIMIZER", "train_step"), 4);
  EXPECT_EQ(count(rs, "FIRST_LAYER_FWD_A", "train_step"), 2);  // A/B alternate
  EXPECT_EQ(count(rs, "FIRST_LAYER_FWD_B", "train_step"), 2);
  EXPECT_EQ(count(rs, "TRANSFER_B", "train_step") + count(rs, "TRANSFER_A", "train_step"), 3);  // next batches
  EXPECT_EQ(count(rs, "CLEAR_METRICS", "epoch"), 1);
  EXPECT_EQ(count(rs, "validate", ""), 1);
  EXPECT_EQ(count(rs, "val_step", "validate"), 2);
  EXPECT_EQ(count(rs, "INF_MAIN_A", "val_step"), 1);
  EXPECT_EQ(count(rs, "INF_EMA", "val_step"), 2);
  for (const auto& r : rs) EXPECT_LE(r.depth, 2) << r.name << " under " << r.parent;
}

TEST(Nvtx, BenchRangesCoverWarmupAndMeasure) {
#ifndef TR_NVTX_RECORDER
  GTEST_SKIP() << "built without NVTX headers";
#endif
  const auto rs =
      record("tr-bench --device cpu --model mlp --batch 32 --mode full-capture --warmup 2 --iters 3 --repetitions 2");
  EXPECT_EQ(count(rs, "warmup", ""), 1);
  EXPECT_EQ(count(rs, "measure", ""), 1);
  EXPECT_EQ(count(rs, "train_step", "warmup"), 2);
  EXPECT_EQ(count(rs, "train_step", "measure"), 6);
  // Full capture runs a step as one step graph; its sub-graphs have no ranges then.
  EXPECT_EQ(count(rs, "step_graph", "train_step"), 8);
  EXPECT_EQ(count(rs, "DEEP_FWD_BWD", "train_step"), 0);
  EXPECT_EQ(count(rs, "capture", ""), 1);
}

TEST(Nvtx, SplitStepsShowEverySubGraph) {
#ifndef TR_NVTX_RECORDER
  GTEST_SKIP() << "built without NVTX headers";
#endif
  const auto rs = record(
      "tr-bench --device cpu --model mlp --batch 32 --mode full-capture --warmup 2 --iters 3 "
      "--repetitions 2 --split-steps");
  EXPECT_EQ(count(rs, "train_step", "measure"), 6);
  EXPECT_EQ(count(rs, "step_graph", "train_step"), 0);
  EXPECT_EQ(count(rs, "DEEP_FWD_BWD", "train_step"), 8);
  EXPECT_EQ(count(rs, "OPTIMIZER", "train_step"), 8);
}

}  // namespace
