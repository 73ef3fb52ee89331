#include "framework/graph/models/model_lists.h"

namespace tr::layer {

LayerSpec conv(std::string name, int channels, int kernel, int stride, int pad, std::vector<std::string> inputs) {
  LayerSpec s;
  s.kind = LayerKind::Conv;
  s.name = std::move(name);
  s.inputs = std::move(inputs);
  s.channels = channels;
  s.kernel = kernel;
  s.stride = stride;
  s.pad = pad;
  return s;
}

LayerSpec bn(std::string name, bool relu) {
  LayerSpec s;
  s.kind = LayerKind::BatchNorm;
  s.name = std::move(name);
  s.relu = relu;
  return s;
}

LayerSpec max_pool(std::string name, int kernel, int stride, int pad) {
  LayerSpec s;
  s.kind = LayerKind::MaxPool;
  s.name = std::move(name);
  s.kernel = kernel;
  s.stride = stride;
  s.pad = pad;
  return s;
}

LayerSpec embedding(std::string name, int vocab, int context, int channels) {
  LayerSpec s;
  s.kind = LayerKind::Embedding;
  s.name = std::move(name);
  s.vocab = vocab;
  s.context = context;
  s.channels = channels;
  return s;
}

LayerSpec layernorm(std::string name, std::vector<std::string> inputs) {
  LayerSpec s;
  s.kind = LayerKind::LayerNorm;
  s.name = std::move(name);
  s.inputs = std::move(inputs);
  return s;
}

LayerSpec gelu(std::string name) {
  LayerSpec s;
  s.kind = LayerKind::Gelu;
  s.name = std::move(name);
  return s;
}

LayerSpec attention(std::string name, int heads) {
  LayerSpec s;
  s.kind = LayerKind::Attention;
  s.name = std::move(name);
  s.heads = heads;
  return s;
}

LayerSpec global_avg_pool(std::string name) {
  LayerSpec s;
  s.kind = LayerKind::GlobalAvgPool;
  s.name = std::move(name);
  return s;
}

LayerSpec global_max_pool(std::string name) {
  LayerSpec s;
  s.kind = LayerKind::GlobalMaxPool;
  s.name = std::move(name);
  return s;
}

LayerSpec fc(std::string name, int outputs, bool bias, float scale) {
  LayerSpec s;
  s.kind = LayerKind::Fc;
  s.name = std::move(name);
  s.channels = outputs;
  s.bias = bias;
  s.scale = scale;
  return s;
}

LayerSpec relu(std::string name) {
  LayerSpec s;
  s.kind = LayerKind::Relu;
  s.name = std::move(name);
  return s;
}

LayerSpec add(std::string name, std::string a, std::string b, bool relu) {
  LayerSpec s;
  s.kind = LayerKind::Add;
  s.name = std::move(name);
  s.inputs = {std::move(a), std::move(b)};
  s.relu = relu;
  return s;
}

void set_group(std::vector<LayerSpec>& list, size_t from, ParamGroup g) {
  for (size_t i = from; i < list.size(); ++i) list[i].group = g;
}

}  // namespace tr::layer
