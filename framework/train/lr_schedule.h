#pragma once
// Learning-rate schedules, computed on the host once into a table that lives in
// device memory; AdvanceStep picks the entry on the device each step
// (Note [scalars in device memory]).
#include <cstdint>
#include <string>
#include <vector>

#include "framework/graph/model_config.h"

namespace tr {

enum class LrSchedule { Constant, Linear, Cosine };

struct LrScheduleSpec {
  LrSchedule kind = LrSchedule::Linear;
  float base_lr = 1e-3f;
  float warmup_fraction = 0.f;  // linear ramp from 0 over this share of the steps
  float final_fraction = 0.f;   // Linear / Cosine end at base_lr * final_fraction
};

std::vector<float> make_lr_table(const LrScheduleSpec& s, int64_t total_steps);
LrSchedule parse_lr_schedule(const std::string& s);  // throws UserError
std::string lr_schedule_name(LrSchedule s);

// The peak learning rate the tools use when none is given: AdamW 1e-3, SGD 0.05, LARS 0.1.
float default_lr(OptimizerKind k);

}  // namespace tr
