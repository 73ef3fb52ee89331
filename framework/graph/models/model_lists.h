#pragma once
// The layer lists of the registered models, one file per family.
#include <vector>

#include "framework/graph/layer_spec.h"

namespace tr {

std::vector<LayerSpec> mlp_layers(double width, int classes);
std::vector<LayerSpec> cnn_layers(double width, int classes);
std::vector<LayerSpec> resnet18_layers(double width, int classes);
std::vector<LayerSpec> resnet50_layers(double width, int classes);
std::vector<LayerSpec> vgg16bn_layers(double width, int classes);

// A GPT-2 shape (gpt.cpp): `depth` blocks of `heads` heads of `head_dim`
// channels each (C = heads x head_dim), positions for `context` tokens.
struct GptShape {
  int depth = 12, heads = 12, head_dim = 64, context = 1024;
};
// Its layers over a vocabulary of `vocab`; --width scales head_dim.
std::vector<LayerSpec> gpt_layers(const GptShape& g, double width, int vocab);

// Constructors that keep the lists short: conv(k, K, stride, pad), bn(relu), ...
namespace layer {
LayerSpec conv(std::string name, int channels, int kernel, int stride, int pad, std::vector<std::string> inputs = {});
LayerSpec bn(std::string name, bool relu);
LayerSpec max_pool(std::string name, int kernel, int stride, int pad = 0);
LayerSpec global_avg_pool(std::string name);
LayerSpec global_max_pool(std::string name);
LayerSpec fc(std::string name, int outputs, bool bias, float scale = 1.f);
LayerSpec relu(std::string name);
LayerSpec add(std::string name, std::string a, std::string b, bool relu);
// A sequence model's token + position embedding: vocab x channels and context x channels.
LayerSpec embedding(std::string name, int vocab, int context, int channels);
LayerSpec layernorm(std::string name, std::vector<std::string> inputs = {});
LayerSpec gelu(std::string name);
LayerSpec attention(std::string name, int heads);
// Marks every layer of `list` from index `from` on as belonging to `g`.
void set_group(std::vector<LayerSpec>& list, size_t from, ParamGroup g);
}  // namespace layer

}  // namespace tr
