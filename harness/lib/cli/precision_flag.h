#pragma once
// --precision, as tr-train and tr-bench spell it, and the name a report gives it:
//   fp32  f32 everywhere;
//   amp   f16 storage and tensor-core compute, f32 master weights, a dynamic
//         loss scale starting at 2^16;
//   bf16  bf16 storage and tensor-core compute, f32 master weights, no loss
//         scaling (bf16 has f32's exponent range): the scale stays 1.
// Any other name is a user error naming the three.
#include <string>
#include <string_view>

#include "framework/graph/model_config.h"

namespace tr {

void set_precision(std::string_view name, TrainConfig& tc);
std::string precision_name(const TrainConfig& tc);

}  // namespace tr
