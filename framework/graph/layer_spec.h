#pragma once
// A model as a list of layers (DESIGN §4). The builder turns it into forward,
// backward, optimizer and inference nodes.
#include <vector>

#include "framework/graph/model_config.h"
#include "framework/graph/tensor_info.h"

namespace tr {

struct LayerSpec {
  enum class Kind { Conv3x3, BnRelu, MaxPool2, GlobalMaxPool, Fc, Relu };
  Kind kind = Kind::Fc;
  int out_features = 0;   // Conv3x3: K; Fc: M
  bool bias = false;      // Fc
  float scale = 1.f;      // Fc output scale
  ParamGroup group = ParamGroup::Deep;
};

// mlp: 784 -> 1024 -> 512 -> 256 -> 10 with ReLU and biases; the first fc is the
//      "first layer", the last one the Fc group.
// cnn: conv3x3(C->32w)+BN+ReLU; blocks 64w/128w/256w of
//      conv3x3 -> maxpool2 -> BN+ReLU -> conv3x3 -> BN+ReLU; global max pool;
//      fc(256w -> classes, no bias) scaled by 1/8.
std::vector<LayerSpec> model_layers(const ModelConfig& m);
int scaled_width(int base, double width);  // max(1, round(base * width))

}  // namespace tr
