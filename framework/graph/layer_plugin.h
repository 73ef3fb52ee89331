#pragma once
// One plug-in per layer kind (nccl-tests style: a struct of function pointers),
// registered in one table (layers/layer_table.cpp). The model builder walks a
// model's layer list and calls, per layer:
//   shape        - its per-sample output shape at the model's input resolution,
//                  refusing inputs it cannot take (one clear line);
//   make_params  - its parameters and state, once, in list order;
//   forward      - its forward nodes, once per pass (training, inference with
//                  the main and with the EMA weights);
//   backward     - its backward nodes: from the gradient of its output, the
//                  gradient of each input (kNoTensor where none is needed);
//   before_inference, fixes_resolution - see below.
// The builder sums the gradients of a tensor that feeds several layers.
#include <string>
#include <vector>

#include "framework/graph/layer_emitter.h"
#include "framework/graph/layer_spec.h"

namespace tr {

// One sample's activation shape at the model's input resolution: [H,W,C], or
// [C] once `spatial` is false (after a global pool or a fully connected layer),
// or [t, C] in a sequence model (t > 0: tokens per sample; spatial false).
struct FeatureShape {
  int64_t h = 1, w = 1, c = 1;
  bool spatial = true;
  int64_t t = 0;
};

struct LayerFwd {
  const LayerSpec& spec;
  const std::string& name;  // prefix of its tensors and node labels
  const LayerState& state;
  const std::vector<FeatureShape>& in;  // its inputs' shapes, as its shape() saw them
  std::vector<TensorId> x;              // its inputs, in spec.inputs order
  Pass pass;
  std::vector<GraphId> graphs;  // emit every node into each of these
};

struct LayerBwd {
  const LayerSpec& spec;
  const std::string& name;
  const LayerState& state;
  const std::vector<FeatureShape>& in;
  std::vector<TensorId> x;    // the forward's inputs
  TensorId y;                 // the forward's output
  TensorId dy;                // gradient of y
  std::vector<bool> need_dx;  // per input: false for the network input
  GraphId graph;
};

struct LayerPlugin {
  LayerKind kind = LayerKind::Count;
  const char* tag = "";  // default name suffix, e.g. ".conv"
  int inputs = 1;        // how many inputs it reads
  FeatureShape (*shape)(const LayerSpec&, const std::string& name, const std::vector<FeatureShape>& in) = nullptr;
  void (*make_params)(LayerEmitter&, const LayerSpec&, const std::string& name, const std::vector<FeatureShape>& in,
                      LayerState& out) = nullptr;
  TensorId (*forward)(LayerEmitter&, const LayerFwd&) = nullptr;
  std::vector<TensorId> (*backward)(LayerEmitter&, const LayerBwd&) = nullptr;
  // Optional: nodes before validation (BatchNorm folds its statistics into
  // inference affines in UPDATE_BN_INF_PARAMS).
  void (*before_inference)(LayerEmitter&, const std::string& name, const LayerState&) = nullptr;
  // Optional: true when the layer's parameters depend on the input resolution
  // (a fully connected layer over an image), so the model cannot train at a
  // lower one.
  bool (*fixes_resolution)(const std::vector<FeatureShape>& in) = nullptr;
};

const LayerPlugin& layer_plugin(LayerKind k);

}  // namespace tr
