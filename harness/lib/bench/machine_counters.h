#pragma once
// Note [machine state] (nvml.h) per bench case: the timed repetitions' energy,
// clocks, temperature and throttling, as the report's counters (measured,
// never gated; `gate` names a case whose repetitions throttled).
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "harness/lib/bench/nvml.h"

namespace tr::bench {

// One timed repetition: the energy the board counted over it, its wall time,
// and the GPU's state at its end.
struct RepMachine {
  double energy_j = 0, seconds = 0;
  GpuSample end;
  int64_t steps = 0;  // the steps it ran; 0: the case's steps_per_rep
};

// energy_j_per_step (median over the repetitions), power_w (median of energy /
// time), samples_per_joule and, for a sequence model (tokens_per_sample > 0),
// tokens_per_joule (all steps over all energy), each from the repetitions of at
// least kMinEnergyWindowS only, and absent when none was that long;
// sm_clock_mhz_min,
// mem_clock_mhz_min, temperature_c_max, throttled_repetitions (reasons in
// kThrottleMask) and throttle_reasons (their bits, ORed). Empty without samples.
// The board's energy counter advances in steps: on an H100 every repetition of
// 20 steps of 0.63 ms (13 ms) read no energy at all, and its steps are about a
// tenth of a second apart: three windows of 0.63 s of GPT-2 steps read 8.26,
// 7.19 and 7.17 J a step, one counter step (about 60 J) more in the first.
// Two seconds hold some twenty of them, so that one more or less is 5 %.
constexpr double kMinEnergyWindowS = 2.0;

// Note [energy window]: where no timed repetition lasted kMinEnergyWindowS (a
// cnn step of half a millisecond times 30 is 15 ms), the energy comes from
// one untimed window of its own that does: energy_window, its `steps` set.
// Its energy fills the counters above, energy_window_steps says so, and its
// clocks and throttling stay out of the repetitions' (it is not one). It runs
// after the profiled range, and only where every rank lives in one process
// (processes would have to agree on its steps, their collectives pairing up).
std::map<std::string, double> machine_counters(const std::vector<RepMachine>& reps, int64_t steps_per_rep,
                                               int64_t samples_per_step, int64_t tokens_per_sample,
                                               const RepMachine* energy_window = nullptr);

// The steps of an energy window of at least kMinEnergyWindowS (a quarter
// more, as steps vary) at `step_ms` a step; at least 1.
int64_t energy_window_steps(double step_ms);

}  // namespace tr::bench
