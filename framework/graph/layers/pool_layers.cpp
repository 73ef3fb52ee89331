// Pooling layers: max and average over k x k windows, and global max and
// average over the whole image ([N,H,W,C] -> [N,C]). No parameters.
//   MaxPool:       y, argmax = MaxPoolArgmaxFwd(x); dx = MaxPoolArgmaxBwd(dy, x, argmax)
//                  (inference: y = MaxPoolFwd(x))
//   AvgPool:       y = AvgPoolFwd(x);        dx = AvgPoolBwd(dy, x)
//   GlobalMaxPool: y = GlobalMaxPoolFwd(x);  dx = GlobalMaxPoolBwd(dy, x, y)
//   GlobalAvgPool: y = GlobalAvgPoolFwd(x);  dx = GlobalAvgPoolBwd(dy, x)
#include "framework/graph/layers/layer_plugins.h"
#include "framework/graph/layers/window.h"
#include "framework/ops/compute/pool.h"

namespace tr {
namespace {

FeatureShape windowed(const LayerSpec& s, const std::string& name, const std::vector<FeatureShape>& in) {
  return layers::window_shape(s, name, in[0], in[0].c);
}

FeatureShape global(const LayerSpec&, const std::string& name, const std::vector<FeatureShape>& in) {
  layers::need_spatial(name, in[0]);
  FeatureShape out;
  out.c = in[0].c;
  out.spatial = false;
  return out;
}

void no_params(LayerEmitter&, const LayerSpec&, const std::string&, const std::vector<FeatureShape>&, LayerState&) {}

// A parameter-free layer: one forward op, one backward op that reads dy, x
// and, when `reads_y`, y (max pooling finds the winner again).
template <OpKind Fwd, OpKind Bwd, bool reads_y, bool windowed_attrs>
struct Pool {
  static TensorId forward(LayerEmitter& e, const LayerFwd& f) {
    const TensorId y = e.activation(f.name + ".y");
    e.emit(f.graphs,
           compute(Fwd, {f.x[0]}, {y}, f.name + ".fwd", windowed_attrs ? layers::window_attrs(f.spec) : OpAttrs{}));
    return y;
  }
  static std::vector<TensorId> backward(LayerEmitter& e, const LayerBwd& b) {
    if (!b.need_dx[0]) return {kNoTensor};
    const TensorId dx = e.activation(b.name + ".dx");
    std::vector<TensorId> in = {b.dy, b.x[0]};
    if (reads_y) in.push_back(b.y);
    e.emit(b.graph, compute(Bwd, in, {dx}, b.name + ".bwd", windowed_attrs ? layers::window_attrs(b.spec) : OpAttrs{}));
    return {dx};
  }
};

using MaxSearch = Pool<OpKind::MaxPoolFwd, OpKind::MaxPoolBwd, true, true>;

// Max pooling that records each output's winner for its backward: one byte
// per output, read instead of x and y (and, for overlapping windows, instead of
// rescanning each window). The record is named after the layer, so the
// backward finds it again; inference passes record nothing.
struct Max {
  static std::string argmax_name(const std::string& layer) { return layer + ".argmax"; }
  static TensorId forward(LayerEmitter& e, const LayerFwd& f) {
    const OpAttrs a = layers::window_attrs(f.spec);
    if (f.pass != Pass::Train) return MaxSearch::forward(e, f);
    const TensorId y = e.activation(f.name + ".y");
    const TensorId argmax = e.activation(argmax_name(f.name), DType::U8);
    e.emit(f.graphs, compute(OpKind::MaxPoolArgmaxFwd, {f.x[0]}, {y, argmax}, f.name + ".fwd", a));
    return y;
  }
  static std::vector<TensorId> backward(LayerEmitter& e, const LayerBwd& b) {
    if (!b.need_dx[0]) return {kNoTensor};
    const TensorId dx = e.activation(b.name + ".dx");
    const TensorId argmax = e.find_activation(argmax_name(b.name));
    e.emit(b.graph, compute(OpKind::MaxPoolArgmaxBwd, {b.dy, b.x[0], argmax}, {dx}, b.name + ".bwd",
                            layers::window_attrs(b.spec)));
    return {dx};
  }
};
using Avg = Pool<OpKind::AvgPoolFwd, OpKind::AvgPoolBwd, false, true>;
using GlobalMax = Pool<OpKind::GlobalMaxPoolFwd, OpKind::GlobalMaxPoolBwd, true, false>;
using GlobalAvg = Pool<OpKind::GlobalAvgPoolFwd, OpKind::GlobalAvgPoolBwd, false, false>;

}  // namespace

const LayerPlugin kMaxPoolLayer = {LayerKind::MaxPool, ".pool", 1, windowed, no_params, Max::forward, Max::backward};
const LayerPlugin kAvgPoolLayer = {LayerKind::AvgPool, ".avgpool", 1, windowed, no_params, Avg::forward, Avg::backward};
const LayerPlugin kGlobalMaxPoolLayer = {LayerKind::GlobalMaxPool, ".gpool",           1, global, no_params,
                                         GlobalMax::forward,       GlobalMax::backward};
const LayerPlugin kGlobalAvgPoolLayer = {LayerKind::GlobalAvgPool, ".gavgpool",        1, global, no_params,
                                         GlobalAvg::forward,       GlobalAvg::backward};

}  // namespace tr
