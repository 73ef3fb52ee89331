#include "framework/train/lr_schedule.h"

#include <cmath>

#include "framework/core/error.h"

namespace tr {

std::vector<float> make_lr_table(const LrScheduleSpec& s, int64_t total_steps) {
  TR_USER_CHECK(total_steps >= 1, "learning-rate schedule needs at least one step");
  TR_USER_CHECK(s.base_lr > 0 && std::isfinite(s.base_lr), "learning rate must be positive, got ", s.base_lr);
  TR_USER_CHECK(s.warmup_fraction >= 0 && s.warmup_fraction < 1, "warm-up fraction must be in [0, 1)");
  std::vector<float> t(static_cast<size_t>(total_steps));
  const double warm = std::floor(s.warmup_fraction * double(total_steps));
  for (int64_t i = 0; i < total_steps; ++i) {
    double lr = s.base_lr;
    if (i < warm) {
      lr = s.base_lr * double(i + 1) / warm;
    } else if (s.kind != LrSchedule::Constant) {
      const double span = std::max(1.0, double(total_steps) - warm);
      const double p = (double(i) - warm) / span;  // 0 .. <1
      const double lo = s.base_lr * s.final_fraction;
      lr = s.kind == LrSchedule::Linear ? s.base_lr + (lo - s.base_lr) * p
                                        : lo + 0.5 * (s.base_lr - lo) * (1.0 + std::cos(3.141592653589793 * p));
    }
    t[static_cast<size_t>(i)] = static_cast<float>(lr);
  }
  return t;
}

LrSchedule parse_lr_schedule(const std::string& s) {
  if (s == "constant") return LrSchedule::Constant;
  if (s == "linear") return LrSchedule::Linear;
  if (s == "cosine") return LrSchedule::Cosine;
  throw UserError(cat("unknown learning-rate schedule '", s, "' (expected constant, linear or cosine)"));
}

std::string lr_schedule_name(LrSchedule s) {
  switch (s) {
    case LrSchedule::Constant: return "constant";
    case LrSchedule::Linear: return "linear";
    case LrSchedule::Cosine: return "cosine";
  }
  return "?";
}

float default_lr(OptimizerKind k) {
  switch (k) {
    case OptimizerKind::AdamW: return 1e-3f;
    case OptimizerKind::Lars: return 0.1f;
    case OptimizerKind::Sgd: return 0.05f;
  }
  return 0.05f;
}

}  // namespace tr
