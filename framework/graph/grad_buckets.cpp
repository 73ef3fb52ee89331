#include "framework/graph/grad_buckets.h"

#include <algorithm>
#include <map>

namespace tr {

std::vector<GradBucket> grad_buckets(const ComputationGraph& cg, int64_t bucket_bytes) {
  std::map<int32_t, int64_t, std::greater<int32_t>> bytes_of_slot;  // highest slot first
  for (TensorId t = 0; t < cg.num_tensors(); ++t) {
    const TensorInfo& ti = cg.tensor(t);
    if (ti.role == Role::ParamMaster && ti.group != ParamGroup::First)
      bytes_of_slot[ti.slot] = ti.fixed_shape.numel() * int64_t(sizeof(float));
  }
  std::vector<GradBucket> out;
  for (const auto& [slot, bytes] : bytes_of_slot) {
    if (out.empty() || (bucket_bytes > 0 && out.back().bytes >= bucket_bytes)) out.push_back({slot + 1, slot + 1, 0});
    out.back().slot_lo = slot;
    out.back().bytes += bytes;
  }
  return out;
}

}  // namespace tr
