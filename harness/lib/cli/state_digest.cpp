#include "harness/lib/cli/state_digest.h"

#include <cstdio>

#include "framework/core/error.h"
#include "framework/core/fnv1a.h"
#include "framework/train/param_init.h"

namespace tr {

std::string StateDigest::str() const {
  char h[24];
  std::snprintf(h, sizeof h, "%016llx", static_cast<unsigned long long>(hash));
  return cat("0x", h, " (", tensors, " tensors, ", floats, " floats)");
}

StateDigest state_digest(Trainer& t, int local) {
  StateDigest d;
  Fnv1a f;
  const CompiledModel& m = t.model();
  const MemoryPlan& p = t.plans().plan(Variant::TrainBase);
  for (TensorId id = 0; id < m.cg.num_tensors(); ++id) {
    if (!is_training_state(m.cg.tensor(id).role)) continue;
    const std::vector<float> v = read_tensor(m, p, t.context(local), id);
    f.bytes(v.data(), v.size() * sizeof(float));
    ++d.tensors;
    d.floats += static_cast<int64_t>(v.size());
  }
  d.hash = f.h;
  return d;
}

}  // namespace tr
