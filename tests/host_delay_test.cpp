// tr-bench --host-delay-us: the host sleeps before launching each step, as a
// slow input pipeline would make it. On the CPU the steps take at least the
// delay; on a GPU an idle gap opens between steps, and both busy fractions of
// Note [busy fraction] (resident, and the kernels' own work measured without
// programmatic launch) fall by as much as the gap says they must.
#include <gtest/gtest.h>

#include <unistd.h>
#include <cstdio>
#include <string>

#include "harness/lib/report/json_report.h"
#include "tests/gpu_test_util.h"
#include "tests/tool_run.h"

namespace tr::bench {
namespace {

std::string temp_json(const char* tag) {
  return ::testing::TempDir() + "tr_host_delay_" + tag + "_" + std::to_string(getpid()) + ".json";
}

BenchReport bench(const std::string& args, const std::string& json) {
  const testing::ToolResult r = testing::run_tool("tr-bench " + args + " --json " + json);
  EXPECT_EQ(r.code, 0) << args << "\n" << r.err;
  BenchReport rep = read_report(json);
  std::remove(json.c_str());
  return rep;
}

TEST(HostDelay, BadValuesAreRefused) {
  testing::expect_tool_user_error("tr-bench --device cpu --host-delay-us -1", "--host-delay-us");
  testing::expect_tool_user_error("tr-bench --device cpu --host-delay-us soon", "--host-delay-us");
}

TEST(HostDelay, EveryCpuStepTakesAtLeastTheDelayAndTheReportSaysSo) {
  const std::string args =
      "--device cpu --model mlp --width 0.25 --batch 8 --mode full-capture --warmup 0 --iters 3 "
      "--repetitions 2";
  const BenchReport with = bench(args + " --host-delay-us 30000", temp_json("cpu"));
  ASSERT_EQ(with.cases.size(), 1u);
  EXPECT_EQ(with.context.host_delay_us, 30000);
  // The host sleeps 30 ms before each of a repetition's steps, and a step is
  // timed from before its sleep: no step can be shorter than the sleep.
  for (double ms : with.cases[0].step_ms) EXPECT_GE(ms, 30.0);
  const BenchReport without = bench(args, temp_json("cpu0"));
  EXPECT_EQ(without.context.host_delay_us, 0);
  // Two reports with different delays time different things: the gate refuses them.
  const std::string a = temp_json("gate_a"), b = temp_json("gate_b");
  write_report(with, a);
  write_report(without, b);
  const testing::ToolResult g = testing::run_tool("tr-bench gate --counters-only --baseline " + a + " --current " + b);
  EXPECT_NE(g.code, 0) << g.out;
  EXPECT_NE((g.out + g.err).find("host delay before each step"), std::string::npos) << g.out << g.err;
  std::remove(a.c_str());
  std::remove(b.c_str());
}

// The span of a traced repetition's kernels holds (iters - 1) sleeps of the
// host at least (the last step's kernels start after the host's last sleep,
// which follows the first step's launch by iters - 1 sleeps), and the union
// of the kernel intervals is at most their summed time. So
//   fraction <= iters * kernel_ms_per_step / ((iters - 1) * delay_ms),
// for the resident fraction with the kernels' time under programmatic launch
// and for the busy one with their time without it.
TEST(HostDelayGpu, AGapBetweenStepsLowersBothFractionsByWhatItMust) {
  SKIP_WITHOUT_GPU();
  const int iters = 10;
  const double delay_ms = 4.0;
  const std::string args =
      "--device cuda --model cnn --batch 64 --precision amp --mode full-capture --warmup 3 "
      "--repetitions 1 --iters " +
      std::to_string(iters);
  const BenchReport tight = bench(args, temp_json("gpu0"));
  const BenchReport gapped = bench(args + " --host-delay-us " + std::to_string(int(delay_ms * 1000)), temp_json("gpu"));
  ASSERT_EQ(tight.cases.size(), 1u);
  ASSERT_EQ(gapped.cases.size(), 1u);
  const auto& t = tight.cases[0].counters;
  const auto& g = gapped.cases[0].counters;
  for (const auto* c : {&t, &g})
    for (const char* key :
         {"gpu_resident_fraction", "gpu_busy_fraction", "gpu_kernel_ms_per_step", "gpu_busy_kernel_ms_per_step"})
      ASSERT_TRUE(c->count(key)) << key << " missing (is CUPTI on the path?)";
  std::printf(
      "[ host delay ] cnn b64 full capture: resident %.3f -> %.3f, busy %.3f -> %.3f with %.0f ms before "
      "each step (kernels %.3f ms a step with programmatic launch, %.3f ms without)\n",
      t.at("gpu_resident_fraction"), g.at("gpu_resident_fraction"), t.at("gpu_busy_fraction"),
      g.at("gpu_busy_fraction"), delay_ms, g.at("gpu_kernel_ms_per_step"), g.at("gpu_busy_kernel_ms_per_step"));
  // The bound is only a test when the kernels are short beside the delay.
  ASSERT_LT(g.at("gpu_kernel_ms_per_step"), delay_ms / 4) << "the step's kernels are too long for this delay";
  const double k = double(iters) / (double(iters - 1) * delay_ms);
  EXPECT_LE(g.at("gpu_resident_fraction"), k * g.at("gpu_kernel_ms_per_step"));
  EXPECT_LE(g.at("gpu_busy_fraction"), k * g.at("gpu_busy_kernel_ms_per_step"));
  EXPECT_LT(g.at("gpu_resident_fraction"), t.at("gpu_resident_fraction"));
  EXPECT_LT(g.at("gpu_busy_fraction"), t.at("gpu_busy_fraction"));
  // Without programmatic launch no kernel waits while resident: it can only be less busy.
  EXPECT_LE(t.at("gpu_busy_kernel_ms_per_step"), t.at("gpu_kernel_ms_per_step"));
}

}  // namespace
}  // namespace tr::bench
