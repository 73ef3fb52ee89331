#pragma once
// What the model tests count in a built model.
#include <cstdint>

#include "framework/graph/model_builder.h"

namespace tr::testing {

// The trained parameters: every f32 master weight (a tied head has none of its own).
inline int64_t parameter_count(const CompiledModel& m) {
  int64_t n = 0;
  for (TensorId t = 0; t < m.cg.num_tensors(); ++t)
    if (m.cg.tensor(t).role == Role::ParamMaster) n += m.cg.tensor(t).fixed_shape.numel();
  return n;
}

}  // namespace tr::testing
