#include "harness/lib/bench/model_flops.h"

#include <array>
#include <string_view>

#include "framework/core/error.h"
#include "framework/graph/model_registry.h"

namespace tr::bench {

SequenceFlops sequence_flops(const CompiledModel& m) {
  TR_CHECK(m.model.is_sequence(), "model ", m.model.name, " is not a sequence model");
  SequenceFlops f;
  f.seq = m.model.seq_len;
  for (const LayerSpec& s : model_layers(m.model)) {
    if (s.kind == LayerKind::Attention) ++f.layers;
    if (s.kind == LayerKind::Embedding) f.channels = s.channels;
  }
  for (TensorId t = 0; t < m.cg.num_tensors(); ++t) {
    const TensorInfo& ti = m.cg.tensor(t);
    if (ti.role != Role::ParamMaster) continue;
    const std::string_view name = ti.name;
    const bool positions = name.size() >= 4 && name.substr(name.size() - 4) == ".wpe";
    if (!positions) f.params += ti.fixed_shape.numel();
  }
  return f;
}

double tensor_peak_flops(const std::string& device_name) {
  struct Peak {
    std::string_view name;  // a substring of the device name; the first match wins
    double flops;
  };
  static constexpr std::array<Peak, 5> kPeaks = {
      {{"H100 PCIe", 756e12}, {"H100 NVL", 835e12}, {"H100", 989e12}, {"H200", 989e12}, {"A100", 312e12}}};
  for (const Peak& p : kPeaks)
    if (device_name.find(p.name) != std::string::npos) return p.flops;
  return 0;
}

}  // namespace tr::bench
