// LayerNorm over the channels of each token (or each sample), eps 1e-5 as GPT-2.
//   gamma [C] ones, beta [C] zeros, neither decayed
//   forward:  y, stats = LayerNormFwd(x, gamma, beta)     (stats f32 [rows, 2], kept for the backward)
//   backward: dx, dgamma, dbeta = LayerNormBwd(dy, x, gamma, stats)
#include "framework/graph/layers/layer_plugins.h"

namespace tr {
namespace {

FeatureShape shape(const LayerSpec&, const std::string& name, const std::vector<FeatureShape>& in) {
  TR_USER_CHECK(!in[0].spatial, "layer ", name, ": a LayerNorm reads tokens or features, not an image");
  return in[0];
}

void make_params(LayerEmitter& e, const LayerSpec& s, const std::string& name, const std::vector<FeatureShape>& in,
                 LayerState& out) {
  out.params.push_back(e.param(name + ".gamma", Shape{in[0].c}, s.group, false, Init::One, 0.f));
  out.params.push_back(e.param(name + ".beta", Shape{in[0].c}, s.group, false, Init::Zero, 0.f));
}

TensorId forward(LayerEmitter& e, const LayerFwd& f) {
  const TensorId y = e.activation(f.name + ".y");
  const TensorId stats = e.activation(f.name + ".stats", DType::F32);
  e.emit(f.graphs, compute(OpKind::LayerNormFwd,
                           {f.x[0], LayerEmitter::weight(f.state.params[0], f.pass),
                            LayerEmitter::weight(f.state.params[1], f.pass)},
                           {y, stats}, f.name + ".fwd"));
  return y;
}

std::vector<TensorId> backward(LayerEmitter& e, const LayerBwd& b) {
  const TensorId dx = e.activation(b.name + ".dx");  // written whether or not the input needs it
  e.emit(b.graph,
         compute(OpKind::LayerNormBwd, {b.dy, b.x[0], b.state.params[0].compute, e.find_activation(b.name + ".stats")},
                 {dx, b.state.params[0].grad, b.state.params[1].grad}, b.name + ".bwd"));
  return {b.need_dx[0] ? dx : kNoTensor};
}

}  // namespace

const LayerPlugin kLayerNormLayer = {LayerKind::LayerNorm, ".ln", 1, shape, make_params, forward, backward};

}  // namespace tr
