// GELU (tanh form): y = GeluFwd(x); dx = GeluBwd(dy, x).
#include "framework/graph/layers/layer_plugins.h"

namespace tr {
namespace {

FeatureShape shape(const LayerSpec&, const std::string&, const std::vector<FeatureShape>& in) { return in[0]; }

void no_params(LayerEmitter&, const LayerSpec&, const std::string&, const std::vector<FeatureShape>&, LayerState&) {}

TensorId forward(LayerEmitter& e, const LayerFwd& f) {
  const TensorId y = e.activation(f.name + ".y");
  e.emit(f.graphs, compute(OpKind::GeluFwd, {f.x[0]}, {y}, f.name + ".fwd"));
  return y;
}

std::vector<TensorId> backward(LayerEmitter& e, const LayerBwd& b) {
  if (!b.need_dx[0]) return {kNoTensor};
  const TensorId dx = e.activation(b.name + ".dx");
  e.emit(b.graph, compute(OpKind::GeluBwd, {b.dy, b.x[0]}, {dx}, b.name + ".bwd"));
  return {dx};
}

}  // namespace

const LayerPlugin kGeluLayer = {LayerKind::Gelu, ".gelu", 1, shape, no_params, forward, backward};

}  // namespace tr
