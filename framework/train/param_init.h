#pragma once
// Fills a rank's arena before the first step: master weights (He-normal for
// conv/fc weights, ones/zeros for BN and biases), EMA = master, BN running
// statistics (mean 0, var 1), the learning-rate table and the scalars. Every
// rank gets identical bytes from the same seed. AMP compute copies are made on
// the device afterwards by the cast graphs.
#include <cstdint>
#include <vector>

#include "framework/graph/memory_plan.h"
#include "framework/runtime/device_context.h"

namespace tr {

void init_arena_state(const CompiledModel& m, const PlanSet& plans, DeviceContext& ctx,
                      const std::vector<float>& lr_table, float init_loss_scale, uint64_t seed);

// Reads a tensor's values as floats (f32/f16), for tests and reports.
std::vector<float> read_tensor(const CompiledModel& m, const MemoryPlan& plan, const DeviceContext& ctx, TensorId t);
TrainScalars read_scalars(const PlanSet& plans, const DeviceContext& ctx);

}  // namespace tr
