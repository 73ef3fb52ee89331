#pragma once
// A model is data (docs/design.md, "From a model to a graph"): a list of layers forming a small DAG. Each layer
// names its input layers and carries typed attributes; one plug-in per layer
// kind (framework/graph/layers/) turns it into parameters, forward nodes and
// backward nodes. The lists themselves live in framework/graph/models/.
#include <string>
#include <vector>

#include "framework/graph/tensor_info.h"

namespace tr {

enum class LayerKind : uint8_t {
  Conv,           // channels = K, kernel, stride, pad; no bias
  BatchNorm,      // relu: ReLU after the affine
  MaxPool,        // kernel, stride, pad
  AvgPool,        // kernel, stride
  GlobalMaxPool,  // [N,H,W,C] -> [N,C]
  GlobalAvgPool,  // [N,H,W,C] -> [N,C]
  Fc,             // channels = outputs; bias; scale; flattens a spatial input
  Relu,
  Add,        // two inputs of one shape; relu: ReLU after the sum
  Embedding,  // a sequence model's first layer: token (vocab x channels) + position (context x channels)
  LayerNorm,  // over the channels, with gamma and beta
  Gelu,       // tanh form
  Attention,  // causal self-attention of `heads` heads over [q | k | v] (channels 3C in, C out)
  Count
};

// The network input's name, for layers that read it besides the first.
inline constexpr const char* kInputLayer = "input";

struct LayerSpec {
  LayerKind kind = LayerKind::Fc;
  // Unique within the model; names the layer's tensors ("<name>.w"). Empty:
  // "l<index><tag>", e.g. "l3.conv".
  std::string name;
  // Layers whose outputs this one reads, earlier in the list. Empty: the layer
  // just before it (the network input for the first layer).
  std::vector<std::string> inputs;
  int channels = 0;      // Conv: output channels; Fc: outputs
  int kernel = 0;        // Conv, MaxPool, AvgPool: window side
  int stride = 1;        // Conv, MaxPool, AvgPool
  int pad = 0;           // Conv: zero padding; MaxPool: padding that never wins
  bool relu = false;     // BatchNorm, Add
  bool bias = false;     // Fc
  float scale = 1.f;     // Fc: y = scale * x W^T (+ b)
  float init_std = 0.f;  // Fc: > 0: w normal with this std (GPT-2's 0.02); 0: He-normal, sqrt(2 / fan-in)
  int vocab = 0;         // Embedding: token table rows
  int context = 0;       // Embedding: position table rows (the longest sequence)
  int heads = 0;         // Attention
  // Fc: reads this earlier Embedding layer's token table [vocab, C] as its w
  // (GPT-2's tied head) and has no w of its own; the builder sums the two
  // layers' gradients of the table (Note [shared parameters], model_builder.cpp).
  std::string tie;
  // Which gradients travel together (FIRST_COMM / DEEP_COMM) and which LARS
  // group a parameter joins; First layers also run in the first-layer graphs.
  ParamGroup group = ParamGroup::Deep;
};

std::string_view layer_kind_name(LayerKind k);

// max(1, round(base * width)): channel counts under --width.
int scaled_width(int base, double width);

}  // namespace tr
