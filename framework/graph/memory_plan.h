#pragma once
// MemoryPlan (docs/design.md, "Vocabulary"): a fixed, 256-byte aligned offset for every tensor id
// inside one arena per rank.
//
// Note [same offset in every variant]: all variants share one layout; a slot is
// sized by the largest shape any variant gives the tensor. So a shape-invariant
// graph captured against one variant's plan is valid for every variant, and a
// pointer captured into a CUDA graph never goes stale.
//
// Arena layout, in order:
//   [TrainScalars][library workspace][param/bn regions by role][inputs + persistent][activation pool]
// Activations share the pool by liveness over the canonical step order; two
// tensors whose live ranges touch never overlap (a node's inputs and outputs never alias).
#include <array>
#include <vector>

#include "framework/core/variant_dims.h"
#include "framework/graph/model_builder.h"
#include "framework/graph/variant.h"

namespace tr {

struct RegionLayout {
  std::vector<Segment> segs;       // in layout order (group, then slot)
  std::vector<ParamGroup> groups;  // group of each seg
  std::vector<int32_t> slots;      // slot of each seg
  int64_t elems = 0;               // padded total
};

struct RoleRegion {
  bool present = false;
  int64_t offset = 0;  // bytes from arena base
  DType dtype = DType::F32;
  Layout layout = Layout::None;
};

// A resolved RANGE operand: where it lives and what it holds.
struct ResolvedRange {
  int64_t offset = 0;
  DType dtype = DType::F32;
  int64_t elems = 0;
  std::vector<Segment> segs;  // relative to offset
};

struct MemoryPlan {
  Variant variant = Variant::TrainBase;
  VariantDims dims;
  std::vector<int64_t> offsets;  // bytes per tensor id; -1 = not in the arena
  std::vector<Shape> shapes;     // this variant's shapes (rank 0 = unused by it)
  int64_t arena_bytes = 0;

  bool present() const { return dims.batch > 0; }
  int64_t offset_of(TensorId t) const { return offsets.at(static_cast<size_t>(t)); }
  const Shape& shape_of(TensorId t) const { return shapes.at(static_cast<size_t>(t)); }
};

struct PlanSet {
  std::array<MemoryPlan, kVariantCount> plans;  // absent variants have dims.batch == 0
  RegionLayout param_layout, bn_layout;
  std::array<RoleRegion, kRoleCount> roles;
  int64_t arena_bytes = 0;
  int64_t scalars_offset = 0;
  int64_t workspace_offset = 0, workspace_bytes = 0;
  int64_t activation_pool_offset = 0;
  int64_t activation_pool_bytes = 0;      // with liveness reuse
  int64_t activation_no_reuse_bytes = 0;  // sum of every activation slot

  const MemoryPlan& plan(Variant v) const { return plans[static_cast<size_t>(vidx(v))]; }
  ResolvedRange resolve(const ComputationGraph& cg, const RangeRef& r, const MemoryPlan& p) const;
};

// dims[v].batch == 0 marks a variant the run does not use.
PlanSet plan_memory(const CompiledModel& m, const std::array<VariantDims, kVariantCount>& dims,
                    int64_t workspace_bytes);

constexpr int64_t align_up(int64_t x, int64_t a) { return (x + a - 1) / a * a; }

}  // namespace tr
