// Causal self-attention over a sequence's packed projections (attention.h):
// it reads [q | k | v] per token (3C channels, an fc before it makes them)
// and gives C channels; `heads` heads of C / heads.
//   forward:  y, lse = AttentionFwd(qkv)                    (lse f32 [N, heads, T], kept for the backward)
//   backward: dqkv, delta = AttentionBwd(dy, qkv, y, lse)   (delta f32 [N, heads, T], scratch)
#include "framework/graph/layers/layer_plugins.h"

namespace tr {
namespace {

OpAttrs attention_attrs(const LayerSpec& s) {
  OpAttrs a;
  a.heads = s.heads;
  return a;
}

FeatureShape shape(const LayerSpec& s, const std::string& name, const std::vector<FeatureShape>& in) {
  TR_USER_CHECK(in[0].t > 0, "layer ", name, ": attention reads a sequence");
  TR_USER_CHECK(in[0].c % 3 == 0, "layer ", name, ": attention reads [q | k | v], 3C channels, got ", in[0].c);
  const int64_t C = in[0].c / 3;
  TR_USER_CHECK(s.heads >= 1 && C % s.heads == 0, "layer ", name, ": ", s.heads, " heads do not divide the width ", C);
  FeatureShape out = in[0];
  out.c = C;
  return out;
}

void no_params(LayerEmitter&, const LayerSpec&, const std::string&, const std::vector<FeatureShape>&, LayerState&) {}

TensorId forward(LayerEmitter& e, const LayerFwd& f) {
  const TensorId y = e.activation(f.name + ".y");
  const TensorId lse = e.activation(f.name + ".lse", DType::F32);
  e.emit(f.graphs, compute(OpKind::AttentionFwd, {f.x[0]}, {y, lse}, f.name + ".fwd", attention_attrs(f.spec)));
  return y;
}

std::vector<TensorId> backward(LayerEmitter& e, const LayerBwd& b) {
  const TensorId dqkv = e.activation(b.name + ".dx");
  const TensorId delta = e.activation(b.name + ".delta", DType::F32);
  e.emit(b.graph, compute(OpKind::AttentionBwd, {b.dy, b.x[0], b.y, e.find_activation(b.name + ".lse")}, {dqkv, delta},
                          b.name + ".bwd", attention_attrs(b.spec)));
  return {b.need_dx[0] ? dqkv : kNoTensor};
}

}  // namespace

const LayerPlugin kAttentionLayer = {LayerKind::Attention, ".attn", 1, shape, no_params, forward, backward};

}  // namespace tr
