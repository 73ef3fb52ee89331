// vgg16bn: VGG-16 with BatchNorm (the seed's multi-GPU benchmark).
//   13 x (conv3x3 + BN + ReLU) in 5 groups of 64w/128w/256w/512w/512w channels
//   (2, 2, 3, 3, 3 convolutions), each group ending in maxpool2;
//   classifier fc(4096w) + ReLU, fc(4096w) + ReLU, fc(classes), with biases,
//   over the flattened last feature map (7x7 at 224x224, 1x1 at 32x32).
//   No dropout: a benchmark of the step, not of regularisation.
// The first conv + BN is the first layer; the last fc is the Fc group.
#include "framework/graph/models/model_lists.h"

#include "framework/core/error.h"

namespace tr {

std::vector<LayerSpec> vgg16bn_layers(double width, int classes) {
  using namespace layer;
  std::vector<LayerSpec> L;
  const int groups[5][2] = {{64, 2}, {128, 2}, {256, 3}, {512, 3}, {512, 3}};
  for (int g = 0; g < 5; ++g) {
    for (int i = 0; i < groups[g][1]; ++i) {
      const std::string n = cat("g", g + 1, ".", i);
      L.push_back(conv(n + ".conv", scaled_width(groups[g][0], width), 3, 1, 1));
      L.push_back(bn(n + ".bn", true));
      if (g == 0 && i == 0) set_group(L, 0, ParamGroup::First);
    }
    L.push_back(max_pool(cat("g", g + 1, ".pool"), 2, 2));
  }
  for (int i = 1; i <= 2; ++i) {
    L.push_back(fc(cat("fc", i), scaled_width(4096, width), true));
    L.push_back(relu(cat("fc", i, ".relu")));
  }
  L.push_back(fc("fc3", classes, true));
  L.back().group = ParamGroup::Fc;
  return L;
}

}  // namespace tr
