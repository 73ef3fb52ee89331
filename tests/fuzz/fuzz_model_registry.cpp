// Fuzzes the model registry and the engine behind it: model_config(name,
// width, image size, channels, classes, sequence length) from the bytes, then what a training
// session does with it short of memory (framework/train/session.cpp):
// build_model with a fuzzed recipe, and plan_memory, which runs every
// variant's shape inference. Sizes are capped (width <= 2, side <= 40,
// batch <= 4) so one input runs in milliseconds. Bad configurations must end
// in a tr::UserError; anything else is a finding.
#include <fuzzer/FuzzedDataProvider.h>

#include <array>
#include <cstddef>
#include <cstdint>

#include "framework/core/error.h"
#include "framework/graph/memory_plan.h"
#include "framework/graph/model_builder.h"
#include "framework/graph/model_registry.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tr;
  FuzzedDataProvider in(data, size);
  const auto& registry = model_registry();
  // One past the end names no model: the registry must say so.
  const size_t pick = in.ConsumeIntegralInRange<size_t>(0, registry.size());
  const std::string name = pick < registry.size() ? std::string(registry[pick].name) : in.ConsumeRandomLengthString(16);
  const double width = in.ConsumeIntegralInRange<int>(0, 128) / 64.0;
  const int side = in.ConsumeIntegralInRange<int>(-1, 40);
  const int channels = in.ConsumeIntegralInRange<int>(-1, 5);
  const int classes = in.ConsumeIntegralInRange<int>(-1, 12);
  const int64_t seq = in.ConsumeIntegralInRange<int64_t>(-1, 64);

  TrainConfig tc;
  tc.optimizer = in.PickValueInArray({OptimizerKind::Sgd, OptimizerKind::Lars, OptimizerKind::AdamW});
  tc.amp = in.ConsumeBool();
  tc.ranks = in.ConsumeIntegralInRange<int>(1, 2);
  tc.bn_sync = in.ConsumeBool() ? BnSync::Batch : BnSync::Running;
  tc.bucket_bytes = in.ConsumeIntegralInRange<int64_t>(0, 1 << 16);
  tc.side_streams = in.ConsumeBool();
  tc.tta_flip = in.ConsumeBool();
  tc.augment.flip = in.ConsumeBool();
  tc.augment.translate = in.ConsumeIntegralInRange<int>(0, 4);
  tc.augment.cutout = in.ConsumeIntegralInRange<int>(0, 8);
  const int64_t batch = in.ConsumeIntegralInRange<int64_t>(1, 4);
  const int64_t last = in.ConsumeIntegralInRange<int64_t>(0, batch);
  const int lowres = in.ConsumeIntegralInRange<int>(0, 40);

  try {
    const ModelConfig m = model_config(name, width, side, channels, classes, seq);
    const CompiledModel cm = build_model(m, tc, batch);
    // The variants a session would run: base, a last batch, low resolution
    // where the model allows it, validation.
    std::array<VariantDims, kVariantCount> dims{};
    const int64_t H = m.is_sequence() ? m.seq_len : m.in_height;  // as the session sets it
    auto set = [&](Variant v, int64_t b, int64_t hw) { dims[size_t(vidx(v))] = VariantDims{b, b * tc.ranks, hw, hw}; };
    set(Variant::TrainBase, batch, H);
    if (last > 0) set(Variant::TrainLast, last, H);
    if (cm.supports_lowres && lowres >= 4 && lowres < H) set(Variant::TrainLowres, batch, lowres);
    set(Variant::ValBase, batch, H);
    (void)plan_memory(cm, dims, 0);
  } catch (const UserError&) {}
  return 0;
}
