#include "framework/graph/graph_atlas.h"

#include <map>
#include <tuple>

#include "framework/graph/shape_inference.h"

namespace tr {

GraphAtlas build_atlas(const ComputationGraph& cg, const PlanSet& plans) {
  GraphAtlas atlas;
  // shape_id: index of the distinct VariantDims among present variants, so two
  // variants with equal shapes share their shape-dependent graphs too.
  std::vector<VariantDims> distinct;
  for (Variant v : kAllVariants) {
    const MemoryPlan& p = plans.plan(v);
    if (!p.present()) continue;
    int32_t sid = -1;
    for (size_t i = 0; i < distinct.size(); ++i)
      if (distinct[i] == p.dims) sid = static_cast<int32_t>(i);
    if (sid < 0) {
      sid = static_cast<int32_t>(distinct.size());
      distinct.push_back(p.dims);
    }
    for (GraphId g : graphs_of(cg, v)) {
      AtlasSlot& s = atlas.slot(v, g);
      s.cg = &cg;
      s.plan = &p;
      s.shape_id = is_shape_invariant(g) ? kShapeInvariant : sid;
      s.stream = stream_for(g);
    }
  }
  return atlas;
}

DedupResult dedup(GraphAtlas& atlas) {
  DedupResult r;
  std::map<std::tuple<const ComputationGraph*, int, int32_t>, int32_t> seen;
  for (Variant v : kAllVariants) {
    for (int gi = 0; gi < kGraphIdCount; ++gi) {
      AtlasSlot& s = atlas.slot(v, static_cast<GraphId>(gi));
      if (!s.present()) continue;
      ++r.total_slots;
      const auto key = std::make_tuple(s.cg, gi, s.shape_id);
      auto it = seen.find(key);
      if (it != seen.end()) {
        s.captured_idx = it->second;
        ++r.reused;
        continue;
      }
      s.captured_idx = static_cast<int32_t>(r.graphs.size());
      seen.emplace(key, s.captured_idx);
      r.graphs.push_back({static_cast<GraphId>(gi), v, s.shape_id, s.cg->has_collective(static_cast<GraphId>(gi))});
      ++r.unique;
    }
  }
  return r;
}

}  // namespace tr
