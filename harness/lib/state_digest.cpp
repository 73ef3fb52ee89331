#include "harness/lib/state_digest.h"

#include <cstdio>
#include <cstring>

#include "framework/core/error.h"
#include "framework/train/param_init.h"

namespace tr {

std::string StateDigest::str() const {
  char h[24];
  std::snprintf(h, sizeof h, "%016llx", static_cast<unsigned long long>(hash));
  return cat("0x", h, " (", tensors, " tensors, ", floats, " floats)");
}

StateDigest state_digest(Trainer& t, int local) {
  StateDigest d;
  d.hash = 1469598103934665603ull;
  const CompiledModel& m = t.model();
  const MemoryPlan& p = t.plans().plan(Variant::TrainBase);
  for (TensorId id = 0; id < m.cg.num_tensors(); ++id) {
    switch (m.cg.tensor(id).role) {
      case Role::ParamMaster: case Role::OptState1: case Role::OptState2: case Role::EmaParam:
      case Role::BnRunning: case Role::EmaBnRunning: {
        const std::vector<float> v = read_tensor(m, p, t.context(local), id);
        const auto* b = reinterpret_cast<const unsigned char*>(v.data());
        for (size_t i = 0; i < v.size() * sizeof(float); ++i) {
          d.hash ^= b[i];
          d.hash *= 1099511628211ull;
        }
        ++d.tensors;
        d.floats += static_cast<int64_t>(v.size());
        break;
      }
      default:
        break;
    }
  }
  return d;
}

}  // namespace tr
