#include "framework/graph/layer_spec.h"

#include <cmath>

#include "framework/core/error.h"

namespace tr {

int scaled_width(int base, double width) {
  return std::max(1, static_cast<int>(std::lround(base * width)));
}

std::vector<LayerSpec> model_layers(const ModelConfig& m) {
  using K = LayerSpec::Kind;
  TR_USER_CHECK(m.width > 0 && m.width <= 16, "--width must be in (0, 16], got ", m.width);
  TR_USER_CHECK(m.classes >= 2, "model needs at least 2 classes");
  std::vector<LayerSpec> L;
  if (m.kind == ModelKind::Mlp) {
    L.push_back({K::Fc, 1024, true, 1.f, ParamGroup::First});
    L.push_back({K::Relu, 0, false, 1.f, ParamGroup::First});
    for (int w : {512, 256}) {
      L.push_back({K::Fc, w, true, 1.f, ParamGroup::Deep});
      L.push_back({K::Relu, 0, false, 1.f, ParamGroup::Deep});
    }
    L.push_back({K::Fc, m.classes, true, 1.f, ParamGroup::Fc});
    return L;
  }
  L.push_back({K::Conv3x3, scaled_width(32, m.width), false, 1.f, ParamGroup::First});
  L.push_back({K::BnRelu, 0, false, 1.f, ParamGroup::First});
  for (int base : {64, 128, 256}) {
    const int w = scaled_width(base, m.width);
    L.push_back({K::Conv3x3, w, false, 1.f, ParamGroup::Deep});
    L.push_back({K::MaxPool2, 0, false, 1.f, ParamGroup::Deep});
    L.push_back({K::BnRelu, 0, false, 1.f, ParamGroup::Deep});
    L.push_back({K::Conv3x3, w, false, 1.f, ParamGroup::Deep});
    L.push_back({K::BnRelu, 0, false, 1.f, ParamGroup::Deep});
  }
  L.push_back({K::GlobalMaxPool, 0, false, 1.f, ParamGroup::Deep});
  L.push_back({K::Fc, m.classes, false, 1.f / 8.f, ParamGroup::Fc});
  return L;
}

}  // namespace tr
