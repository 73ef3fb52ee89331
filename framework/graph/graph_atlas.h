#pragma once
// GraphAtlas (docs/design.md, "Vocabulary"): variants x GraphId table of slots. Dedup (pre_capture
// B1) gives every slot with the same key (cg, gid, shape_id) one captured graph.
#include <array>
#include <cstdint>
#include <vector>

#include "framework/graph/computation_graph.h"
#include "framework/graph/memory_plan.h"

namespace tr {

constexpr int32_t kShapeInvariant = -1;

struct AtlasSlot {
  const ComputationGraph* cg = nullptr;  // null: this variant has no such graph
  const MemoryPlan* plan = nullptr;
  int32_t shape_id = kShapeInvariant;
  StreamKind stream = StreamKind::COMP_1;
  int32_t captured_idx = -1;  // filled by dedup
  bool present() const { return cg != nullptr; }
};

// One graph to capture: the first slot that had its key.
struct UniqueGraph {
  GraphId gid = GraphId::COUNT;
  Variant variant = Variant::TrainBase;  // whose plan it is captured against
  int32_t shape_id = kShapeInvariant;
  bool collective = false;  // B2.5: holds cross-rank collectives
};

class GraphAtlas {
 public:
  AtlasSlot& slot(Variant v, GraphId g) { return slots_[static_cast<size_t>(vidx(v))][static_cast<size_t>(g)]; }
  const AtlasSlot& slot(Variant v, GraphId g) const {
    return slots_[static_cast<size_t>(vidx(v))][static_cast<size_t>(g)];
  }

 private:
  std::array<std::array<AtlasSlot, kGraphIdCount>, kVariantCount> slots_{};
};

struct DedupResult {
  int total_slots = 0, unique = 0, reused = 0;
  std::vector<UniqueGraph> graphs;  // index = captured_idx
};

GraphAtlas build_atlas(const ComputationGraph& cg, const PlanSet& plans);
// B1: assigns captured_idx to every present slot.
DedupResult dedup(GraphAtlas& atlas);

}  // namespace tr
