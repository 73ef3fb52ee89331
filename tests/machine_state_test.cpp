// Note [machine state] (harness/lib/bench/nvml.h): the throttle reasons by
// name, NVML's absence stated rather than guessed, the repetitions' energy,
// clocks and throttling as counters, and the gate's note on throttled runs.
#include <gtest/gtest.h>

#include <cmath>

#include "harness/lib/bench/machine_counters.h"
#include "harness/lib/bench/nvml.h"
#include "harness/lib/report/gate.h"

namespace tr::bench {
namespace {

TEST(MachineState, ThrottleReasonsByName) {
  EXPECT_EQ(throttle_names(0), "none");
  EXPECT_EQ(throttle_names(0x1 | 0x2), "none");  // idle and the application-clock setting slow nothing measured
  EXPECT_EQ(throttle_names(0x4 | 0x40), "sw_power_cap,hw_thermal_slowdown");
  EXPECT_EQ(throttle_names(kThrottleMask),
            "sw_power_cap,hw_slowdown,sw_thermal_slowdown,hw_thermal_slowdown,hw_power_brake");
}

// Without the driver's library (this machine, CI's) the state says so and no
// sample is invented.
TEST(MachineState, WithoutNvmlTheReportSaysWhy) {
  const Nvml& nvml = Nvml::get();
  if (nvml.available()) GTEST_SKIP() << "libnvidia-ml.so.1 is present here";
  const auto state = nvml.state("0000:00:00.0");
  ASSERT_EQ(state.size(), 1u);
  EXPECT_EQ(state.at("nvml"), "unavailable: libnvidia-ml.so.1 not found (no NVIDIA driver here)");
  GpuSample s;
  EXPECT_FALSE(nvml.sample("0000:00:00.0", s));
}

TEST(MachineState, RepetitionsBecomeCounters) {
  auto rep = [](double joules, unsigned sm, unsigned temp, uint64_t reasons) {
    RepMachine r;
    r.energy_j = joules;
    r.seconds = 2.5;  // past kMinEnergyWindowS
    r.end.sm_mhz = sm;
    r.end.mem_mhz = 2619;
    r.end.temperature_c = temp;
    r.end.reasons = reasons;
    return r;
  };
  // 3 repetitions of 5 steps at batch 8; the second ran power-capped while idle-flagged.
  const std::vector<RepMachine> reps = {rep(10, 1980, 40, 0), rep(12, 1755, 44, 0x4 | 0x1), rep(11, 1980, 42, 0x1)};
  const auto k = machine_counters(reps, 5, 8, 0);
  EXPECT_DOUBLE_EQ(k.at("energy_j_per_step"), 11.0 / 5);
  EXPECT_DOUBLE_EQ(k.at("power_w"), 11.0 / 2.5);
  EXPECT_DOUBLE_EQ(k.at("samples_per_joule"), 8.0 * 5 * 3 / 33);
  EXPECT_EQ(k.count("tokens_per_joule"), 0u);
  EXPECT_EQ(k.at("sm_clock_mhz_min"), 1755);
  EXPECT_EQ(k.at("mem_clock_mhz_min"), 2619);
  EXPECT_EQ(k.at("temperature_c_max"), 44);
  EXPECT_EQ(k.at("throttled_repetitions"), 1);
  EXPECT_EQ(k.at("throttle_reasons"), 0x4);
  EXPECT_DOUBLE_EQ(machine_counters(reps, 5, 8, 1024).at("tokens_per_joule"), 8.0 * 5 * 3 * 1024 / 33);
  EXPECT_TRUE(machine_counters({}, 5, 8, 0).empty());
  // A counter that did not move gives no energy and no rate rather than an
  // impossible 0 J or an infinite rate; the clocks and throttling stay.
  const auto still = machine_counters({rep(0, 1980, 40, 0)}, 5, 8, 0);
  for (const char* key : {"energy_j_per_step", "power_w", "samples_per_joule"}) EXPECT_EQ(still.count(key), 0u) << key;
  EXPECT_EQ(still.at("sm_clock_mhz_min"), 1980);
  // A repetition shorter than kMinEnergyWindowS is left out of the energy, the others kept.
  std::vector<RepMachine> mixed = {rep(10, 1980, 40, 0), rep(12, 1980, 40, 0)};
  mixed[1].seconds = kMinEnergyWindowS / 2;
  const auto m = machine_counters(mixed, 5, 8, 0);
  EXPECT_DOUBLE_EQ(m.at("energy_j_per_step"), 10.0 / 5);
  EXPECT_DOUBLE_EQ(m.at("samples_per_joule"), 8.0 * 5 / 10);
  EXPECT_EQ(machine_counters({mixed[1]}, 5, 8, 0).count("energy_j_per_step"), 0u);
}

// Note [energy window]: repetitions too short for the counter take their
// energy from the untimed window, which says so; it never replaces a
// repetition's energy, and its throttling is not a repetition's.
TEST(MachineState, AnEnergyWindowStandsInForShortRepetitions) {
  RepMachine short_rep;
  short_rep.energy_j = 0.02;
  short_rep.seconds = 0.015;  // 30 steps of 0.5 ms
  short_rep.end.sm_mhz = 1980;
  RepMachine window;
  window.steps = 5000;
  window.energy_j = 1000;
  window.seconds = 2.56;
  window.end.sm_mhz = 1500;
  window.end.reasons = 0x4;
  const auto k = machine_counters({short_rep, short_rep}, 30, 256, 0, &window);
  EXPECT_DOUBLE_EQ(k.at("energy_j_per_step"), 1000.0 / 5000);
  EXPECT_DOUBLE_EQ(k.at("power_w"), 1000 / 2.56);
  EXPECT_DOUBLE_EQ(k.at("samples_per_joule"), 256.0 * 5000 / 1000);
  EXPECT_EQ(k.at("energy_window_steps"), 5000);
  EXPECT_EQ(k.at("sm_clock_mhz_min"), 1980);
  EXPECT_EQ(k.at("throttled_repetitions"), 0);
  // Long repetitions keep their own energy; the window is not consulted.
  RepMachine long_rep = short_rep;
  long_rep.energy_j = 300;
  long_rep.seconds = 2.5;
  const auto own = machine_counters({long_rep}, 30, 256, 0, &window);
  EXPECT_DOUBLE_EQ(own.at("energy_j_per_step"), 10.0);
  EXPECT_EQ(own.count("energy_window_steps"), 0u);
  // A window whose counter did not move gives nothing.
  window.energy_j = 0;
  EXPECT_EQ(machine_counters({short_rep}, 30, 256, 0, &window).count("energy_j_per_step"), 0u);
  // Its length: a quarter over two seconds, at least one step.
  EXPECT_EQ(energy_window_steps(0.5), 5000);
  EXPECT_EQ(energy_window_steps(8000), 1);
  EXPECT_EQ(energy_window_steps(0), 1);
}

TEST(MachineState, TheGateNamesThrottledRepetitions) {
  BenchReport r;
  r.context.device_kind = "cuda";
  r.context.device_name = "NVIDIA H100 80GB HBM3";
  BenchCase c;
  c.model = "gpt2";
  c.mode = "full-capture";
  c.variant = "train_base";
  c.batch = 4;
  c.iterations = 5;
  c.step_ms = {1, 1, 1};
  c.cpu_ms = {1, 1, 1};
  c.counters = {{"graph_launches_per_step", 1}};
  r.cases.push_back(c);
  BenchReport hot = r;
  hot.cases[0].counters["throttled_repetitions"] = 2;
  hot.cases[0].counters["throttle_reasons"] = 0x40;
  GateOptions opt;
  opt.counters_only = true;
  const GateResult g = run_gate(r, hot, opt);
  ASSERT_EQ(g.notes.size(), 1u);
  EXPECT_NE(g.notes[0].find("2 of 3 repetitions in the current ran throttled (hw_thermal_slowdown)"), std::string::npos)
      << g.notes[0];
  EXPECT_TRUE(run_gate(r, r, opt).notes.empty());
}

}  // namespace
}  // namespace tr::bench
