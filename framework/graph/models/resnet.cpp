// ResNets. Blocks end in Add(main path, shortcut) + ReLU; the shortcut is the
// block input, or a 1x1 convolution + BN with the block's stride where the
// shape changes. Stems are the first layer; the classifier is the Fc group.
//   resnet18 (CIFAR): conv3x3(C -> 64w) + BN + ReLU; 4 stages of 2 basic blocks
//     (widths 64w/128w/256w/512w, strides 1/2/2/2; conv3x3 -> BN+ReLU ->
//     conv3x3 -> BN); global average pool; fc(512w -> classes, bias). 32x32x3.
//   resnet50 (v1.5, as torchvision and MLPerf): conv7x7/2(C -> 64w) + BN + ReLU,
//     maxpool3x3/2 (pad 1); 4 stages of 3/4/6/3 bottlenecks (widths
//     64w/128w/256w/512w, out 4x; conv1x1 -> BN+ReLU -> conv3x3 with the
//     stage's stride -> BN+ReLU -> conv1x1 -> BN); global average pool;
//     fc(2048w -> classes, bias). 224x224x3, 1000 classes.
#include "framework/graph/models/model_lists.h"

#include "framework/core/error.h"

namespace tr {
namespace {

// Appends conv + BN (ReLU optional) reading `input` (empty: the layer before).
void conv_bn(std::vector<LayerSpec>& L, const std::string& name, int channels, int kernel, int stride, bool relu,
             const std::string& input = "") {
  L.push_back(layer::conv(name + ".conv", channels, kernel, stride, kernel / 2,
                          input.empty() ? std::vector<std::string>{} : std::vector<std::string>{input}));
  L.push_back(layer::bn(name + ".bn", relu));
}

// The shortcut of a block: its input, or a projection when the shape changes.
// Returns the name of the layer that holds it.
std::string shortcut(std::vector<LayerSpec>& L, const std::string& block, const std::string& in, int in_c, int out_c,
                     int stride) {
  if (stride == 1 && in_c == out_c) return in;
  conv_bn(L, block + ".down", out_c, 1, stride, false, in);
  return block + ".down.bn";
}

// Returns the block's output layer name.
std::string basic_block(std::vector<LayerSpec>& L, const std::string& block, const std::string& in, int in_c, int w,
                        int stride) {
  conv_bn(L, block + ".a", w, 3, stride, true, in);
  conv_bn(L, block + ".b", w, 3, 1, false);
  const std::string main = block + ".b.bn";
  const std::string sc = shortcut(L, block, in, in_c, w, stride);
  L.push_back(layer::add(block + ".add", main, sc, true));
  return block + ".add";
}

std::string bottleneck(std::vector<LayerSpec>& L, const std::string& block, const std::string& in, int in_c, int w,
                       int stride) {
  conv_bn(L, block + ".a", w, 1, 1, true, in);
  conv_bn(L, block + ".b", w, 3, stride, true);  // v1.5: the stride sits on the 3x3
  conv_bn(L, block + ".c", 4 * w, 1, 1, false);
  const std::string main = block + ".c.bn";
  const std::string sc = shortcut(L, block, in, in_c, 4 * w, stride);
  L.push_back(layer::add(block + ".add", main, sc, true));
  return block + ".add";
}

using BlockFn = std::string (*)(std::vector<LayerSpec>&, const std::string&, const std::string&, int, int, int);

// Stages of `blocks[s]` blocks; returns the last block's name.
std::string stages(std::vector<LayerSpec>& L, std::string in, int in_c, double width, const int (&blocks)[4],
                   int expansion, BlockFn block) {
  const int widths[4] = {64, 128, 256, 512}, strides[4] = {1, 2, 2, 2};
  for (int s = 0; s < 4; ++s) {
    const int w = scaled_width(widths[s], width);
    for (int b = 0; b < blocks[s]; ++b) {
      in = block(L, cat("s", s + 1, ".b", b), in, in_c, w, b == 0 ? strides[s] : 1);
      in_c = expansion * w;
    }
  }
  return in;
}

void head(std::vector<LayerSpec>& L, const std::string& in, int classes) {
  LayerSpec gap = layer::global_avg_pool("pool");
  gap.inputs = {in};
  L.push_back(gap);
  L.push_back(layer::fc("fc", classes, true));
  L.back().group = ParamGroup::Fc;
}

}  // namespace

std::vector<LayerSpec> resnet18_layers(double width, int classes) {
  std::vector<LayerSpec> L;
  const int stem = scaled_width(64, width);
  conv_bn(L, "stem", stem, 3, 1, true);
  layer::set_group(L, 0, ParamGroup::First);
  const std::string last = stages(L, "stem.bn", stem, width, {2, 2, 2, 2}, 1, basic_block);
  head(L, last, classes);
  return L;
}

std::vector<LayerSpec> resnet50_layers(double width, int classes) {
  std::vector<LayerSpec> L;
  const int stem = scaled_width(64, width);
  conv_bn(L, "stem", stem, 7, 2, true);
  L.push_back(layer::max_pool("stem.pool", 3, 2, 1));
  layer::set_group(L, 0, ParamGroup::First);
  const std::string last = stages(L, "stem.pool", stem, width, {3, 4, 6, 3}, 4, bottleneck);
  head(L, last, classes);
  return L;
}

}  // namespace tr
