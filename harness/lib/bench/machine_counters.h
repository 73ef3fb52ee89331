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
};

// energy_j_per_step (median over the repetitions), power_w (median of energy /
// time), samples_per_joule and, for a sequence model (tokens_per_sample > 0),
// tokens_per_joule (all steps over all energy), sm_clock_mhz_min,
// mem_clock_mhz_min, temperature_c_max, throttled_repetitions (reasons in
// kThrottleMask) and throttle_reasons (their bits, ORed). Empty without samples.
std::map<std::string, double> machine_counters(const std::vector<RepMachine>& reps, int64_t steps_per_rep,
                                               int64_t samples_per_step, int64_t tokens_per_sample);

}  // namespace tr::bench
