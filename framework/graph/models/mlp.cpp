// mlp: the seed project's own benchmark. Flatten 784 -> 1024 -> 512 -> 256 ->
// classes, ReLU between, biases everywhere. The first fc and its ReLU are the
// "first layer"; the last fc is the Fc group. --width scales the hidden layers.
#include "framework/graph/models/model_lists.h"

namespace tr {

std::vector<LayerSpec> mlp_layers(double width, int classes) {
  using namespace layer;
  std::vector<LayerSpec> L;
  L.push_back(fc("", scaled_width(1024, width), true));
  L.push_back(relu(""));
  set_group(L, 0, ParamGroup::First);
  for (int w : {512, 256}) {
    L.push_back(fc("", scaled_width(w, width), true));
    L.push_back(relu(""));
  }
  L.push_back(fc("", classes, true));
  L.back().group = ParamGroup::Fc;
  return L;
}

}  // namespace tr
