// Fully connected layer over the flattened input ([N,H,W,C] is read as [N,H*W*C]),
// or over each token of a sequence ([N,T,C] -> [N,T,M], fc_last_dim).
//   w [M,K] He-normal (std = sqrt(2/K)) or normal with spec.init_std, optional bias b [M] (zeros), output scale
//   forward:  y = scale * x w^T (+ b)
//   backward: dw (, db) = FcBwdWeight(x, dy) (a side stream may take it), dx = FcBwdData(dy, w, x)
#include <cmath>

#include "framework/graph/layers/layer_plugins.h"

namespace tr {
namespace {

// per_token: the layer reads a sequence (FeatureShape::t > 0).
OpAttrs fc_attrs(const LayerSpec& s, bool per_token) {
  OpAttrs a;
  a.scale = s.scale;
  a.has_bias = s.bias;
  a.fc_last_dim = per_token;
  return a;
}

int64_t fan_in(const FeatureShape& in) { return in.spatial ? in.h * in.w * in.c : in.c; }

FeatureShape shape(const LayerSpec& s, const std::string& name, const std::vector<FeatureShape>& in) {
  TR_USER_CHECK(s.channels >= 1, "layer ", name, ": a fully connected layer needs at least 1 output, got ", s.channels);
  FeatureShape out;
  out.c = s.channels;
  out.spatial = false;
  out.t = in[0].t;
  return out;
}

void make_params(LayerEmitter& e, const LayerSpec& s, const std::string& name, const std::vector<FeatureShape>& in,
                 LayerState& out) {
  const int64_t k = fan_in(in[0]);
  const float std = s.init_std > 0.f ? s.init_std : std::sqrt(2.f / float(k));
  // Tied (spec.tie): the builder puts the embedding's table first in params.
  if (s.tie.empty()) out.params.push_back(e.param(name + ".w", Shape{s.channels, k}, s.group, true, Init::Normal, std));
  if (s.bias) out.params.push_back(e.param(name + ".b", Shape{s.channels}, s.group, false, Init::Zero, 0.f));
}

TensorId forward(LayerEmitter& e, const LayerFwd& f) {
  const TensorId y = e.activation(f.name + ".y");
  std::vector<TensorId> in = {f.x[0], LayerEmitter::weight(f.state.params[0], f.pass)};
  if (f.spec.bias) in.push_back(LayerEmitter::weight(f.state.params[1], f.pass));
  e.emit(f.graphs, compute(OpKind::FcFwd, in, {y}, f.name + ".fwd", fc_attrs(f.spec, f.in[0].t > 0)));
  return y;
}

std::vector<TensorId> backward(LayerEmitter& e, const LayerBwd& b) {
  const OpAttrs a = fc_attrs(b.spec, b.in[0].t > 0);
  const TensorId dx = b.need_dx[0] ? e.activation(b.name + ".dx") : kNoTensor;
  std::vector<TensorId> grads = {b.state.params[0].grad};
  if (b.spec.bias) grads.push_back(b.state.params[1].grad);
  e.emit(b.graph, e.side(b.graph, compute(OpKind::FcBwdWeight, {b.x[0], b.dy}, grads, b.name + ".bwd_weight", a)));
  // x goes along for its shape: dx has the shape of what the layer flattened.
  if (b.need_dx[0])
    e.emit(b.graph,
           compute(OpKind::FcBwdData, {b.dy, b.state.params[0].compute, b.x[0]}, {dx}, b.name + ".bwd_data", a));
  return {dx};
}

bool fixes_resolution(const std::vector<FeatureShape>& in) { return in[0].spatial && (in[0].h > 1 || in[0].w > 1); }

}  // namespace

const LayerPlugin kFcLayer = {LayerKind::Fc, ".fc",    1,       shape,           make_params,
                              forward,       backward, nullptr, fixes_resolution};

}  // namespace tr
