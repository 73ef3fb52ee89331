// BatchNorm layer (optionally with ReLU), split in phases so that its sums can
// be all-reduced between them (synchronised BN, TrainConfig::bn_sync).
//   training:  sums = BnStats(x) [-> all-reduce];
//              y, batch stats, train affine = BnReluApply(x, sums, gamma, beta)
//   backward:  dgamma, dbeta, dsums = BnReluBwdReduce [-> all-reduce dsums]; dx = BnReluBwdApply
//              (both take the ReLU's mask from the train affine and x, not from y:
//              one activation read fewer each)
//   inference: y = BnReluInfer(x, affine), the affine folded from the running
//              statistics before validation (UPDATE_BN_INF_PARAMS)
// sums and dsums are TrainConfig::bn_sums (Note [BatchNorm sums in double],
// framework/ops/compute/batchnorm.h).
#include "framework/graph/layers/layer_plugins.h"
#include "framework/graph/layers/window.h"

namespace tr {
namespace {

FeatureShape shape(const LayerSpec&, const std::string& name, const std::vector<FeatureShape>& in) {
  layers::need_spatial(name, in[0]);
  return in[0];
}

void make_params(LayerEmitter& e, const LayerSpec& s, const std::string& name, const std::vector<FeatureShape>& in,
                 LayerState& out) {
  out.bn = e.batchnorm(name, in[0].c, s.group);
  out.has_bn = true;
}

TensorId forward(LayerEmitter& e, const LayerFwd& f) {
  const BnState& bn = f.state.bn;
  const OpAttrs a = e.bn_attrs(f.spec.relu);
  const TensorId y = e.activation(f.name + ".y");
  if (f.pass == Pass::Train) {
    const TensorId sums = e.activation(f.name + ".sums", e.train().bn_sums);
    e.emit(f.graphs, compute(OpKind::BnStats, {f.x[0]}, {sums}, f.name + ".stats"));
    if (e.train().bn_sync == BnSync::Batch) e.allreduce(f.graphs, sums, f.name + ".stats_allreduce");
    e.emit(f.graphs, compute(OpKind::BnReluApply, {f.x[0], sums, bn.gamma.compute, bn.beta.compute},
                             {y, bn.batch, bn.train_affine}, f.name + ".apply", a));
  } else {
    const TensorId affine = f.pass == Pass::InferMain ? bn.affine : bn.ema_affine;
    e.emit(f.graphs, compute(OpKind::BnReluInfer, {f.x[0], affine}, {y}, f.name + ".infer", a));
  }
  return y;
}

std::vector<TensorId> backward(LayerEmitter& e, const LayerBwd& b) {
  const BnState& bn = b.state.bn;
  const OpAttrs a = e.bn_attrs(b.spec.relu);
  TR_USER_CHECK(b.need_dx[0], "layer ", b.name, ": a BatchNorm cannot read the network input directly");
  const TensorId dx = e.activation(b.name + ".dx");
  const TensorId dsums = e.activation(b.name + ".dsums", e.train().bn_sums);
  const TensorId x = b.x[0];
  e.emit(b.graph, compute(OpKind::BnReluBwdReduce, {b.dy, bn.train_affine, x, bn.batch},
                          {bn.gamma.grad, bn.beta.grad, dsums}, b.name + ".bwd_reduce", a));
  if (e.train().bn_sync == BnSync::Batch) e.allreduce({b.graph}, dsums, b.name + ".dsums_allreduce");
  e.emit(b.graph, compute(OpKind::BnReluBwdApply, {b.dy, bn.train_affine, x, bn.batch, bn.gamma.compute, dsums}, {dx},
                          b.name + ".bwd_apply", a));
  return {dx};
}

// Both affines from the f32 masters: main weights with the running statistics,
// EMA weights (where there is an EMA) with the EMA of the running statistics.
void before_inference(LayerEmitter& e, const std::string& name, const LayerState& s) {
  const BnState& bn = s.bn;
  const OpAttrs a = e.bn_attrs(true);  // folding reads eps only
  e.emit(GraphId::UPDATE_BN_INF_PARAMS,
         compute(OpKind::BnFold, {bn.gamma.master, bn.beta.master, bn.running}, {bn.affine}, name + ".fold", a));
  if (e.train().has_ema())
    e.emit(GraphId::UPDATE_BN_INF_PARAMS, compute(OpKind::BnFold, {bn.gamma.ema, bn.beta.ema, bn.ema_running},
                                                  {bn.ema_affine}, name + ".fold_ema", a));
}

}  // namespace

const LayerPlugin kBatchNormLayer = {LayerKind::BatchNorm, ".bn",   1,        shape,
                                     make_params,          forward, backward, before_inference};

}  // namespace tr
