#include "framework/train/param_init.h"

#include <cstring>

#include "framework/core/bf16.h"
#include "framework/core/half.h"
#include "framework/core/rng.h"

namespace tr {

void init_arena_state(const CompiledModel& m, const PlanSet& plans, DeviceContext& ctx,
                      const std::vector<float>& lr_table, float init_loss_scale, uint64_t seed) {
  const ComputationGraph& cg = m.cg;
  const MemoryPlan& plan = plans.plan(Variant::TrainBase);
  TR_CHECK(plan.present(), "train_base variant must exist");
  TR_CHECK(int64_t(lr_table.size()) == m.train.schedule_len, "lr table length ", lr_table.size(),
           " != ", m.train.schedule_len);
  Rng rng(seed);
  // Masters first, in tensor order, so the stream of random numbers is fixed.
  std::vector<std::vector<float>> master_by_slot(static_cast<size_t>(cg.num_slots(Layout::Param)));
  for (TensorId t = 0; t < cg.num_tensors(); ++t) {
    const TensorInfo& ti = cg.tensor(t);
    if (ti.role != Role::ParamMaster) continue;
    std::vector<float> v(static_cast<size_t>(ti.fixed_shape.numel()));
    for (float& x : v) {
      switch (ti.init) {
        case Init::Zero: x = 0.f; break;
        case Init::One: x = 1.f; break;
        case Init::Normal: x = float(rng.normal()) * ti.init_std; break;
        case Init::BnRunning: TR_CHECK(false, "bad init for a parameter"); break;
      }
    }
    master_by_slot[static_cast<size_t>(ti.slot)] = v;
  }
  for (TensorId t = 0; t < cg.num_tensors(); ++t) {
    const TensorInfo& ti = cg.tensor(t);
    const int64_t off = plan.offset_of(t);
    if (ti.role == Role::ParamMaster || ti.role == Role::EmaParam) {
      const auto& v = master_by_slot[static_cast<size_t>(ti.slot)];
      ctx.upload(off, v.data(), v.size() * sizeof(float));
    } else if (ti.role == Role::ParamCompute && is_half(ti.dtype)) {
      // Mixed precision's compute copy starts as the master cast to f16 or
      // bf16, Cast's rounding: with the optimizer tail fused no CAST_MAIN graph
      // makes it (Note [optimizer tail], framework/graph/recipe_graphs.h).
      const auto& v = master_by_slot[static_cast<size_t>(ti.slot)];
      std::vector<uint16_t> h(v.size());
      for (size_t i = 0; i < v.size(); ++i)
        h[i] = ti.dtype == DType::BF16 ? float_to_bf16(v[i]).bits : float_to_half(v[i]).bits;
      ctx.upload(off, h.data(), h.size() * sizeof(uint16_t));
    } else if (ti.role == Role::BnRunning || ti.role == Role::EmaBnRunning) {
      const int64_t c = ti.fixed_shape[1];
      std::vector<float> v(static_cast<size_t>(2 * c), 0.f);
      for (int64_t i = c; i < 2 * c; ++i) v[static_cast<size_t>(i)] = 1.f;  // var row
      ctx.upload(off, v.data(), v.size() * sizeof(float));
    }
  }
  ctx.upload(plan.offset_of(m.lr_table), lr_table.data(), lr_table.size() * sizeof(float));
  TrainScalars s;
  s.lr = lr_table.front();
  s.loss_scale = init_loss_scale;
  s.schedule_len = static_cast<int32_t>(lr_table.size());
  ctx.upload(plans.scalars_offset, &s, sizeof(s));
}

std::vector<float> read_tensor(const CompiledModel& m, const MemoryPlan& plan, const DeviceContext& ctx, TensorId t) {
  const TensorInfo& ti = m.cg.tensor(t);
  const int64_t n = plan.shape_of(t).numel();
  std::vector<float> out(static_cast<size_t>(n));
  if (ti.dtype == DType::F32) {
    ctx.download(plan.offset_of(t), out.data(), out.size() * 4);
  } else if (is_half(ti.dtype)) {
    std::vector<uint16_t> h(static_cast<size_t>(n));
    ctx.download(plan.offset_of(t), h.data(), h.size() * 2);
    for (size_t i = 0; i < h.size(); ++i)
      out[i] = ti.dtype == DType::BF16 ? bf16_to_float(bf16_t{h[i]}) : half_to_float(half_t{h[i]});
  } else {
    TR_CHECK(false, "read_tensor: ", ti.name, " is not a float tensor");
  }
  return out;
}

TrainScalars read_scalars(const PlanSet& plans, const DeviceContext& ctx) {
  TrainScalars s;
  ctx.download(plans.scalars_offset, &s, sizeof(s));
  return s;
}

}  // namespace tr
