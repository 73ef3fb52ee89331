#include "harness/lib/cli/precision_flag.h"

#include "framework/core/error.h"

namespace tr {

void set_precision(std::string_view name, TrainConfig& tc) {
  TR_USER_CHECK(name == "fp32" || name == "amp" || name == "bf16", "--precision must be fp32, amp or bf16, got '", name,
                "'");
  tc.amp = name != "fp32";
  tc.amp_dtype = name == "bf16" ? DType::BF16 : DType::F16;
  tc.init_loss_scale = tc.loss_scaling() ? 65536.f : 1.f;
}

std::string precision_name(const TrainConfig& tc) {
  if (!tc.amp) return "fp32";
  return tc.amp_dtype == DType::BF16 ? "bf16" : "amp";
}

}  // namespace tr
