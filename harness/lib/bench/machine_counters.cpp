#include "harness/lib/bench/machine_counters.h"

#include <algorithm>
#include <cmath>

#include "harness/lib/report/statistics.h"

namespace tr::bench {

std::map<std::string, double> machine_counters(const std::vector<RepMachine>& reps, int64_t steps_per_rep,
                                               int64_t samples_per_step, int64_t tokens_per_sample,
                                               const RepMachine* energy_window) {
  if (reps.empty() || steps_per_rep <= 0) return {};
  std::vector<double> per_step, power;
  double energy = 0;
  unsigned sm = reps[0].end.sm_mhz, mem = reps[0].end.mem_mhz, temp = 0;
  uint64_t reasons = 0;
  int throttled = 0;
  int64_t energy_steps = 0;
  auto count_energy = [&](const RepMachine& r) {
    const int64_t steps = r.steps > 0 ? r.steps : steps_per_rep;
    if (r.seconds < kMinEnergyWindowS || r.energy_j <= 0) return;
    per_step.push_back(r.energy_j / double(steps));
    power.push_back(r.energy_j / r.seconds);
    energy += r.energy_j;
    energy_steps += steps;
  };
  for (const RepMachine& r : reps) {
    count_energy(r);
    sm = std::min(sm, r.end.sm_mhz);
    mem = std::min(mem, r.end.mem_mhz);
    temp = std::max(temp, r.end.temperature_c);
    reasons |= r.end.reasons & kThrottleMask;
    throttled += (r.end.reasons & kThrottleMask) != 0;
  }
  std::map<std::string, double> k = {{"sm_clock_mhz_min", double(sm)},
                                     {"mem_clock_mhz_min", double(mem)},
                                     {"temperature_c_max", double(temp)},
                                     {"throttled_repetitions", double(throttled)},
                                     {"throttle_reasons", double(reasons)}};
  if (energy_steps == 0 && energy_window != nullptr) {
    count_energy(*energy_window);
    if (energy_steps > 0) k["energy_window_steps"] = double(energy_steps);
  }
  if (energy_steps > 0) {
    k["energy_j_per_step"] = median(per_step);
    k["power_w"] = median(power);
    const double samples = double(samples_per_step) * double(energy_steps);
    k["samples_per_joule"] = samples / energy;
    if (tokens_per_sample > 0) k["tokens_per_joule"] = samples * double(tokens_per_sample) / energy;
  }
  return k;
}

int64_t energy_window_steps(double step_ms) {
  if (!(step_ms > 0)) return 1;
  return std::max<int64_t>(1, int64_t(std::ceil(1.25 * kMinEnergyWindowS * 1e3 / step_ms)));
}

}  // namespace tr::bench
