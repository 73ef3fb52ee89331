#include "framework/graph/memory_plan.h"

#include <algorithm>
#include <array>
#include <map>

#include "framework/graph/shape_inference.h"

namespace tr {
namespace {

// Orders the slots of a layout by (group, slot) and gives each an element offset
// aligned to kRegionAlignElems (Note [parallel regions]).
RegionLayout make_layout(const ComputationGraph& cg, Layout l) {
  std::map<std::pair<int, int32_t>, TensorId> by_key;  // (group, slot) -> a tensor of that slot
  for (TensorId t = 0; t < cg.num_tensors(); ++t) {
    const TensorInfo& ti = cg.tensor(t);
    if (layout_of(ti.role) == l) by_key.emplace(std::make_pair(static_cast<int>(ti.group), ti.slot), t);
  }
  RegionLayout rl;
  int64_t off = 0;
  for (const auto& [key, t] : by_key) {
    const TensorInfo& ti = cg.tensor(t);
    Segment s;
    s.offset = off;
    s.elems = ti.fixed_shape.numel();
    s.decay = ti.decay;
    rl.segs.push_back(s);
    rl.groups.push_back(ti.group);
    rl.slots.push_back(ti.slot);
    off = align_up(off + s.elems, kRegionAlignElems);
  }
  rl.elems = off;
  return rl;
}

int64_t seg_index_of_slot(const RegionLayout& rl, int32_t slot) {
  for (size_t i = 0; i < rl.slots.size(); ++i)
    if (rl.slots[i] == slot) return static_cast<int64_t>(i);
  TR_CHECK(false, "slot ", slot, " not in layout");
  return -1;
}

struct Interval {
  TensorId id;
  int64_t bytes;
  int first, last;
};

}  // namespace

ResolvedRange PlanSet::resolve(const ComputationGraph& cg, const RangeRef& r, const MemoryPlan& p) const {
  ResolvedRange out;
  if (r.is_tensor) {
    const TensorInfo& ti = cg.tensor(r.tensor);
    out.offset = p.offset_of(r.tensor);
    out.dtype = ti.dtype;
    out.elems = p.shape_of(r.tensor).numel();
    TR_CHECK(out.offset >= 0 && out.elems > 0, "range operand ", ti.name, " is not placed");
    out.segs.push_back(Segment{0, out.elems, ti.decay});
    return out;
  }
  const RoleRegion& rr = roles[static_cast<size_t>(r.role)];
  TR_CHECK(rr.present, "region of role ", static_cast<int>(r.role), " does not exist in this model");
  const RegionLayout& rl = rr.layout == Layout::Param ? param_layout : bn_layout;
  int first = -1, last = -1;
  for (size_t i = 0; i < rl.segs.size(); ++i) {
    if ((r.groups & group_bit(rl.groups[i])) && rl.slots[i] >= r.slot_lo && rl.slots[i] < r.slot_hi) {
      TR_CHECK(last == -1 || last == static_cast<int>(i) - 1, "region groups or slots are not contiguous");
      if (first < 0) first = static_cast<int>(i);
      last = static_cast<int>(i);
    }
  }
  out.dtype = rr.dtype;
  if (first < 0) {  // no tensor of these groups: an empty range
    out.offset = rr.offset;
    return out;
  }
  const int64_t start = rl.segs[static_cast<size_t>(first)].offset;
  const int64_t end =
      static_cast<size_t>(last) + 1 < rl.segs.size() ? rl.segs[static_cast<size_t>(last) + 1].offset : rl.elems;
  out.offset = rr.offset + start * static_cast<int64_t>(dtype_size(rr.dtype));
  out.elems = end - start;
  for (int i = first; i <= last; ++i) {
    Segment s = rl.segs[static_cast<size_t>(i)];
    s.offset -= start;
    out.segs.push_back(s);
  }
  return out;
}

namespace {

// Shapes per variant; each tensor's slot is its largest size over them.
std::vector<int64_t> shape_variants(const ComputationGraph& cg, const std::array<VariantDims, kVariantCount>& dims,
                                    PlanSet& ps) {
  const size_t nt = static_cast<size_t>(cg.num_tensors());
  std::vector<int64_t> slot_bytes(nt, 0);
  for (Variant v : kAllVariants) {
    MemoryPlan& p = ps.plans[static_cast<size_t>(vidx(v))];
    p.variant = v;
    p.dims = dims[static_cast<size_t>(vidx(v))];
    if (!p.present()) continue;
    p.shapes = infer_shapes(cg, v, p.dims);
    for (size_t t = 0; t < nt; ++t)
      slot_bytes[t] =
          std::max<int64_t>(slot_bytes[t], p.shapes[t].numel() * int64_t(dtype_size(cg.tensor(TensorId(t)).dtype)));
  }
  return slot_bytes;
}

// Regions: one per role of a layout, its tensors at their layout offsets
// (Note [parallel regions]). Returns the cursor past them.
int64_t place_regions(const ComputationGraph& cg, PlanSet& ps, std::vector<int64_t>& offsets, int64_t cursor) {
  for (int r = 0; r < kRoleCount; ++r) {
    const Role role = static_cast<Role>(r);
    const Layout l = layout_of(role);
    if (l == Layout::None) continue;
    const RegionLayout& rl = l == Layout::Param ? ps.param_layout : ps.bn_layout;
    RoleRegion& rr = ps.roles[static_cast<size_t>(r)];
    for (TensorId t = 0; t < cg.num_tensors(); ++t) {
      const TensorInfo& ti = cg.tensor(t);
      if (ti.role != role) continue;
      if (!rr.present) {
        rr.present = true;
        rr.dtype = ti.dtype;
        rr.layout = l;
        rr.offset = cursor;
      }
      TR_CHECK(ti.dtype == rr.dtype, ti.name, ": mixed dtypes in one region");
      const int64_t seg = seg_index_of_slot(rl, ti.slot);
      offsets[static_cast<size_t>(t)] =
          rr.offset + rl.segs[static_cast<size_t>(seg)].offset * int64_t(dtype_size(ti.dtype));
    }
    if (rr.present) cursor = align_up(cursor + rl.elems * int64_t(dtype_size(rr.dtype)), kArenaAlign);
  }
  return cursor;
}

// The activations' live ranges over the canonical order of every graph
// (training graphs then validation graphs, GraphId order).
std::vector<Interval> live_ranges(const ComputationGraph& cg, const std::vector<int64_t>& slot_bytes) {
  const size_t nt = static_cast<size_t>(cg.num_tensors());
  std::vector<int> first(nt, -1), last(nt, -1);
  int pos = 0;
  auto touch = [&](TensorId t) {
    if (cg.tensor(t).role != Role::Activation) return;
    const size_t i = static_cast<size_t>(t);
    if (first[i] < 0) first[i] = pos;
    last[i] = std::max(last[i], pos);  // a side node may have extended it already
  };
  // Position of each graph's last node in the canonical order.
  std::array<int, kGraphIdCount> graph_end{};
  for (int g = 0, end = -1; g < kGraphIdCount; ++g) {
    end += static_cast<int>(cg.nodes(static_cast<GraphId>(g)).size());
    graph_end[size_t(g)] = end;
  }
  for (int g = 0; g < kGraphIdCount; ++g) {
    const int side_end = graph_end[size_t(side_streams_joined_by(static_cast<GraphId>(g)))];
    for (const Node& n : cg.nodes(static_cast<GraphId>(g))) {
      for (TensorId t : n.in) touch(t);
      for (TensorId t : n.out) touch(t);
      for (const RangeRef& r : n.operands)
        if (r.is_tensor) touch(r.tensor);
      // Note [streams inside a graph]: a side-stream node may still be reading
      // (or writing) its tensors until its streams join: the graph's end, or
      // a later graph's (side_streams_joined_by).
      if (n.stream != StreamKind::COUNT) {
        const int here = pos;
        pos = side_end;
        for (TensorId t : n.in) touch(t);
        for (TensorId t : n.out) touch(t);
        pos = here;
      }
      ++pos;
    }
  }
  std::vector<Interval> iv;
  for (size_t t = 0; t < nt; ++t)
    if (first[t] >= 0 && slot_bytes[t] > 0)
      iv.push_back({TensorId(t), align_up(slot_bytes[t], kArenaAlign), first[t], last[t]});
  return iv;
}

// First fit by size, largest first: each activation at the lowest offset of
// the pool that no tensor alive at the same time holds. Sets the pool's place
// and sizes in ps; returns the cursor past it.
int64_t place_activations(std::vector<Interval> iv, PlanSet& ps, std::vector<int64_t>& offsets, int64_t cursor) {
  std::stable_sort(iv.begin(), iv.end(), [](const Interval& a, const Interval& b) { return a.bytes > b.bytes; });
  std::vector<std::pair<int64_t, const Interval*>> placed;  // offset within pool
  int64_t pool = 0, no_reuse = 0;
  for (const Interval& a : iv) {
    no_reuse += a.bytes;
    std::vector<std::pair<int64_t, int64_t>> busy;  // [start, end) of overlapping-lifetime tensors
    for (const auto& [off, b] : placed)
      if (!(b->last < a.first || a.last < b->first)) busy.push_back({off, off + b->bytes});
    std::sort(busy.begin(), busy.end());
    int64_t off = 0;
    for (const auto& [s, e] : busy) {
      if (off + a.bytes <= s) break;
      off = std::max(off, e);
    }
    placed.push_back({off, &a});
    pool = std::max(pool, off + a.bytes);
  }
  ps.activation_pool_offset = cursor;
  ps.activation_pool_bytes = pool;
  ps.activation_no_reuse_bytes = no_reuse;
  for (const auto& [off, a] : placed) offsets[static_cast<size_t>(a->id)] = cursor + off;
  return align_up(cursor + pool, kArenaAlign);
}

}  // namespace

PlanSet plan_memory(const CompiledModel& m, const std::array<VariantDims, kVariantCount>& dims,
                    int64_t workspace_bytes) {
  const ComputationGraph& cg = m.cg;
  PlanSet ps;
  ps.param_layout = make_layout(cg, Layout::Param);
  ps.bn_layout = make_layout(cg, Layout::Bn);
  const std::vector<int64_t> slot_bytes = shape_variants(cg, dims, ps);
  std::vector<int64_t> offsets(static_cast<size_t>(cg.num_tensors()), -1);
  int64_t cursor = 0;
  ps.scalars_offset = cursor;
  cursor = align_up(cursor + int64_t(sizeof(TrainScalars)), kArenaAlign);
  ps.workspace_offset = cursor;
  ps.workspace_bytes = workspace_bytes;
  cursor = align_up(cursor + workspace_bytes, kArenaAlign);
  cursor = place_regions(cg, ps, offsets, cursor);
  // Inputs and other persistent tensors: one slot each for the whole run.
  for (TensorId t = 0; t < cg.num_tensors(); ++t) {
    const Role role = cg.tensor(t).role;
    if (role != Role::Input && role != Role::Persistent) continue;
    offsets[static_cast<size_t>(t)] = cursor;
    cursor = align_up(cursor + slot_bytes[static_cast<size_t>(t)], kArenaAlign);
  }
  ps.arena_bytes = place_activations(live_ranges(cg, slot_bytes), ps, offsets, cursor);
  for (auto& p : ps.plans) {
    if (!p.present()) continue;
    p.offsets = offsets;
    p.arena_bytes = ps.arena_bytes;
  }
  return ps;
}

}  // namespace tr
