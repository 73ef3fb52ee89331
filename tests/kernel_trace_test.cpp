// tr-bench --kernel-trace: the Chrome trace of each case's traced kernels.
#include <gtest/gtest.h>

#include "harness/lib/bench/kernel_trace.h"

namespace tr::bench {
namespace {

BenchCase traced_case(int64_t batch, std::vector<KernelRecord> kernels) {
  BenchCase c;
  c.model = "cnn";
  c.mode = "full-capture";
  c.variant = "train_base";
  c.batch = batch;
  c.kernel_trace = std::move(kernels);
  return c;
}

TEST(KernelTrace, OneProcessPerCaseOneThreadPerStreamTimesFromTheFirstKernel) {
  BenchReport r;
  r.context.device_kind = "cuda";
  r.context.device_name = "NVIDIA H200";
  // GPU clock in ns: two streams, the second kernel beside the first.
  r.cases.push_back(traced_case(
      256,
      {{"conv", 7, 1'000'000, 1'004'500}, {"wgrad", 9, 1'002'000, 1'010'000}, {"bn_stats", 7, 1'005'000, 1'005'250}}));
  r.cases.push_back(traced_case(64, {}));  // no CUPTI: left out
  r.cases.push_back(traced_case(1024, {{"conv", 3, 50, 1050}}));
  const nlohmann::json j = kernel_trace_json(r);
  ASSERT_TRUE(j.contains("traceEvents"));
  EXPECT_EQ(j["otherData"]["device"], "NVIDIA H200");

  std::map<int, std::string> process;
  std::map<std::pair<int, int>, std::string> thread;
  std::vector<nlohmann::json> kernels;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "process_name") process[e["pid"]] = e["args"]["name"];
    if (e["ph"] == "M" && e["name"] == "thread_name") thread[{e["pid"], e["tid"]}] = e["args"]["name"];
    if (e["ph"] == "X") kernels.push_back(e);
  }
  ASSERT_EQ(process.size(), 2u);
  EXPECT_EQ(process[1], r.cases[0].name("cuda"));
  EXPECT_EQ(process[2], r.cases[2].name("cuda"));
  EXPECT_EQ(thread.size(), 3u);
  EXPECT_EQ(thread[std::make_pair(1, 9)], "stream 9");
  ASSERT_EQ(kernels.size(), 4u);
  // Microseconds from each case's first kernel.
  EXPECT_EQ(kernels[0]["name"], "conv");
  EXPECT_EQ(kernels[0]["pid"], 1);
  EXPECT_EQ(kernels[0]["tid"], 7);
  EXPECT_DOUBLE_EQ(kernels[0]["ts"].get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(kernels[0]["dur"].get<double>(), 4.5);
  EXPECT_DOUBLE_EQ(kernels[1]["ts"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(kernels[1]["dur"].get<double>(), 8.0);
  EXPECT_DOUBLE_EQ(kernels[2]["ts"].get<double>(), 5.0);
  EXPECT_DOUBLE_EQ(kernels[2]["dur"].get<double>(), 0.25);
  EXPECT_EQ(kernels[3]["pid"], 2);
  EXPECT_DOUBLE_EQ(kernels[3]["ts"].get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(kernels[3]["dur"].get<double>(), 1.0);
}

TEST(KernelTrace, NoTracedCaseGivesAnEmptyButValidTrace) {
  BenchReport r;
  r.cases.push_back(traced_case(256, {}));
  const nlohmann::json j = kernel_trace_json(r);
  EXPECT_TRUE(j["traceEvents"].is_array());
  EXPECT_TRUE(j["traceEvents"].empty());
}

}  // namespace
}  // namespace tr::bench
