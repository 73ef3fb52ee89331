// cnn: an airbench-style net for small images (28x28x1, 32x32x3).
//   conv3x3(C -> 32w) + BN + ReLU                                  (first layer)
//   3 blocks of widths 64w/128w/256w:
//     conv3x3 -> maxpool2 -> BN + ReLU -> conv3x3 -> BN + ReLU
//   global max pool; fc(256w -> classes, no bias) scaled by 1/8       (Fc group)
#include "framework/graph/models/model_lists.h"

namespace tr {

std::vector<LayerSpec> cnn_layers(double width, int classes) {
  using namespace layer;
  std::vector<LayerSpec> L;
  L.push_back(conv("", scaled_width(32, width), 3, 1, 1));
  L.push_back(bn("", true));
  set_group(L, 0, ParamGroup::First);
  for (int base : {64, 128, 256}) {
    const int w = scaled_width(base, width);
    L.push_back(conv("", w, 3, 1, 1));
    L.push_back(max_pool("", 2, 2));
    L.push_back(bn("", true));
    L.push_back(conv("", w, 3, 1, 1));
    L.push_back(bn("", true));
  }
  L.push_back(global_max_pool(""));
  L.push_back(fc("", classes, false, 1.f / 8.f));
  L.back().group = ParamGroup::Fc;
  return L;
}

}  // namespace tr
