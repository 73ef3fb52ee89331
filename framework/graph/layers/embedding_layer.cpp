// A sequence model's first layer: token and position embedding of the ids
// TokenPrep made (token_prep.h), [N,T] -> [N,T,C].
//   wte [vocab, C], wpe [context, C], both normal with std 0.02 (GPT-2's) and
//   weight decay (matrices, as the linear layers' weights)
//   forward:  y[n,t] = wte[ids[n,t]] + wpe[t]                         (EmbeddingFwd)
//   backward: dwte, dwpe = EmbeddingBwd(dy, ids, order), with TokenPrep's
//             order ("input.order"): the deterministic scatter-add. The ids
//             need no gradient.
#include "framework/graph/layers/layer_plugins.h"

namespace tr {
namespace {

constexpr float kInitStd = 0.02f;

FeatureShape shape(const LayerSpec& s, const std::string& name, const std::vector<FeatureShape>& in) {
  TR_USER_CHECK(in[0].t > 0, "layer ", name, ": an embedding reads a sequence model's token ids");
  TR_USER_CHECK(s.channels >= 1 && s.vocab >= 1, "layer ", name, ": an embedding needs channels and a vocabulary, got ",
                s.channels, " and ", s.vocab);
  TR_USER_CHECK(s.context >= in[0].t, "layer ", name, ": its ", s.context, " positions do not cover sequences of ",
                in[0].t, " tokens");
  FeatureShape out;
  out.c = s.channels;
  out.spatial = false;
  out.t = in[0].t;
  return out;
}

void make_params(LayerEmitter& e, const LayerSpec& s, const std::string& name, const std::vector<FeatureShape>&,
                 LayerState& out) {
  out.params.push_back(e.param(name + ".wte", Shape{s.vocab, s.channels}, s.group, true, Init::Normal, kInitStd));
  out.params.push_back(e.param(name + ".wpe", Shape{s.context, s.channels}, s.group, true, Init::Normal, kInitStd));
}

TensorId forward(LayerEmitter& e, const LayerFwd& f) {
  const TensorId y = e.activation(f.name + ".y");
  e.emit(f.graphs, compute(OpKind::EmbeddingFwd,
                           {f.x[0], LayerEmitter::weight(f.state.params[0], f.pass),
                            LayerEmitter::weight(f.state.params[1], f.pass)},
                           {y}, f.name + ".fwd"));
  return y;
}

std::vector<TensorId> backward(LayerEmitter& e, const LayerBwd& b) {
  const TensorId order = e.find_activation("input.order");
  e.emit(b.graph,
         compute(OpKind::EmbeddingBwd, {b.dy, b.x[0], order, b.state.params[0].compute, b.state.params[1].compute},
                 {b.state.params[0].grad, b.state.params[1].grad}, b.name + ".bwd"));
  return {kNoTensor};
}

}  // namespace

const LayerPlugin kEmbeddingLayer = {LayerKind::Embedding, ".embedding", 1, shape, make_params, forward, backward};

}  // namespace tr
