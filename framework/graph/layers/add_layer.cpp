// Residual join: y = a + b, optionally followed by ReLU. Both inputs receive
// the same gradient: dy itself, or ReluBwd(dy, y) with the ReLU; the builder
// adds it to whatever else flows back into each input.
#include "framework/graph/layers/layer_plugins.h"

namespace tr {
namespace {

FeatureShape shape(const LayerSpec&, const std::string& name, const std::vector<FeatureShape>& in) {
  const FeatureShape &a = in[0], &b = in[1];
  TR_USER_CHECK(a.spatial == b.spatial && a.h == b.h && a.w == b.w && a.c == b.c && a.t == b.t, "layer ", name,
                ": its inputs differ in shape (", a.h, "x", a.w, "x", a.c, " and ", b.h, "x", b.w, "x", b.c, ")");
  return a;
}

void no_params(LayerEmitter&, const LayerSpec&, const std::string&, const std::vector<FeatureShape>&, LayerState&) {}

OpAttrs add_attrs(const LayerSpec& s) {
  OpAttrs a;
  a.relu = s.relu;
  return a;
}

TensorId forward(LayerEmitter& e, const LayerFwd& f) {
  const TensorId y = e.activation(f.name + ".y");
  e.emit(f.graphs, compute(OpKind::Add, {f.x[0], f.x[1]}, {y}, f.name + ".fwd", add_attrs(f.spec)));
  return y;
}

std::vector<TensorId> backward(LayerEmitter& e, const LayerBwd& b) {
  TensorId g = b.dy;
  if (b.spec.relu && (b.need_dx[0] || b.need_dx[1])) {
    g = e.activation(b.name + ".dx");
    e.emit(b.graph, compute(OpKind::ReluBwd, {b.dy, b.y}, {g}, b.name + ".bwd"));
  }
  return {b.need_dx[0] ? g : kNoTensor, b.need_dx[1] ? g : kNoTensor};
}

}  // namespace

const LayerPlugin kAddLayer = {LayerKind::Add, ".add", 2, shape, no_params, forward, backward};

}  // namespace tr
