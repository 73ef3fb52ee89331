// Convolution layer: k x k, stride, zero padding, no bias (a BatchNorm follows).
//   w [K,k,k,C], He-normal (std = sqrt(2 / (k*k*C)))
//   forward:  y = ConvFwd(x, w)
//   backward: dw = ConvBwdFilter(x, dy) (a side stream may take it), dx = ConvBwdData(dy, w)
#include <cmath>

#include "framework/graph/layers/layer_plugins.h"
#include "framework/graph/layers/window.h"

namespace tr {
namespace {

FeatureShape shape(const LayerSpec& s, const std::string& name, const std::vector<FeatureShape>& in) {
  TR_USER_CHECK(s.channels >= 1, "layer ", name, ": a convolution needs at least 1 output channel, got ", s.channels);
  return layers::window_shape(s, name, in[0], s.channels);
}

void make_params(LayerEmitter& e, const LayerSpec& s, const std::string& name, const std::vector<FeatureShape>& in,
                 LayerState& out) {
  const int64_t c = in[0].c, k = s.kernel;
  const float std = std::sqrt(2.f / float(k * k * c));
  out.params.push_back(e.param(name + ".w", Shape{s.channels, k, k, c}, s.group, true, Init::Normal, std));
}

TensorId forward(LayerEmitter& e, const LayerFwd& f) {
  const TensorId y = e.activation(f.name + ".y");
  e.emit(f.graphs, compute(OpKind::ConvFwd, {f.x[0], LayerEmitter::weight(f.state.params[0], f.pass)}, {y},
                           f.name + ".fwd", layers::window_attrs(f.spec)));
  return y;
}

std::vector<TensorId> backward(LayerEmitter& e, const LayerBwd& b) {
  const Param& w = b.state.params[0];
  const OpAttrs a = layers::window_attrs(b.spec);
  const TensorId dx = b.need_dx[0] ? e.activation(b.name + ".dx") : kNoTensor;
  e.emit(b.graph, e.side(b.graph, compute(OpKind::ConvBwdFilter, {b.x[0], b.dy}, {w.grad}, b.name + ".bwd_filter", a)));
  if (b.need_dx[0])
    e.emit(b.graph, compute(OpKind::ConvBwdData, {b.dy, w.compute, b.x[0]}, {dx}, b.name + ".bwd_data", a));
  return {dx};
}

}  // namespace

const LayerPlugin kConvLayer = {LayerKind::Conv, ".conv", 1, shape, make_params, forward, backward};

}  // namespace tr
