#include "framework/graph/layer_emitter.h"

namespace tr {

LayerEmitter::LayerEmitter(ComputationGraph& cg, const TrainConfig& t)
    : cg_(cg), tc_(t), T_(t.amp ? t.amp_dtype : DType::F32) {}

TensorId LayerEmitter::activation(const std::string& name, DType dt) {
  TensorInfo ti;
  ti.name = name;
  ti.dtype = dt;
  ti.role = Role::Activation;
  const TensorId id = cg_.add_tensor(ti);
  const auto [it, fresh] = activations_.emplace(name, id);
  if (!fresh) it->second = kNoTensor;  // named twice: find_activation refuses it
  return id;
}

TensorId LayerEmitter::find_activation(const std::string& name) const {
  const auto it = activations_.find(name);
  TR_CHECK(it != activations_.end(), "no activation named ", name);
  TR_CHECK(it->second != kNoTensor, "two activations are named ", name);
  return it->second;
}

TensorId LayerEmitter::persistent(const std::string& name, DType dt, Shape s, Role role) {
  TensorInfo ti;
  ti.name = name;
  ti.dtype = dt;
  ti.role = role;
  ti.fixed_shape = s;
  return cg_.add_tensor(ti);
}

TensorId LayerEmitter::layout_tensor(const std::string& name, Role role, DType dt, Shape s, ParamGroup g, int slot,
                                     bool decay, Init init, float std) {
  TensorInfo ti;
  ti.name = name;
  ti.dtype = dt;
  ti.role = role;
  ti.group = g;
  ti.slot = slot;
  ti.decay = decay;
  ti.fixed_shape = s;
  ti.init = init;
  ti.init_std = std;
  return cg_.add_tensor(ti);
}

Param LayerEmitter::param(const std::string& name, Shape s, ParamGroup g, bool decay, Init init, float std) {
  const int slot = param_slots_++;
  const bool amp = tc_.amp;
  Param p;
  p.master = layout_tensor(name, Role::ParamMaster, DType::F32, s, g, slot, decay, init, std);
  const std::string half = cat(".", dtype_name(T_));  // ".f16" or ".bf16"
  p.compute = amp ? layout_tensor(name + half, Role::ParamCompute, T_, s, g, slot, decay) : p.master;
  p.grad = layout_tensor(name + ".grad", Role::Grad, T_, s, g, slot, decay);
  p.grad_master = amp && grad_masters_
                      ? layout_tensor(name + ".grad.f32", Role::GradMaster, DType::F32, s, g, slot, decay)
                      : p.grad;
  layout_tensor(name + ".opt1", Role::OptState1, DType::F32, s, g, slot, decay);
  if (tc_.optimizer == OptimizerKind::AdamW)
    layout_tensor(name + ".opt2", Role::OptState2, DType::F32, s, g, slot, decay);
  if (!tc_.has_ema()) {  // no EMA: "the EMA weights" are the weights (nothing reads them)
    p.ema = p.master;
    p.ema_compute = p.compute;
    return p;
  }
  p.ema = layout_tensor(name + ".ema", Role::EmaParam, DType::F32, s, g, slot, decay);
  p.ema_compute = amp ? layout_tensor(name + ".ema" + half, Role::EmaParamCompute, T_, s, g, slot, decay) : p.ema;
  return p;
}

BnState LayerEmitter::batchnorm(const std::string& name, int64_t c, ParamGroup g) {
  BnState bn;
  bn.gamma = param(name + ".gamma", Shape{c}, g, false, Init::One, 0.f);
  bn.beta = param(name + ".beta", Shape{c}, g, false, Init::Zero, 0.f);
  const int slot = bn_slots_++;
  bn.batch = layout_tensor(name + ".batch", Role::BnBatch, DType::F32, Shape{2, c}, g, slot, false);
  bn.running =
      layout_tensor(name + ".running", Role::BnRunning, DType::F32, Shape{2, c}, g, slot, false, Init::BnRunning);
  bn.affine = persistent(name + ".affine", DType::F32, Shape{2, c});
  bn.train_affine = persistent(name + ".train_affine", DType::F32, Shape{2, c});
  if (!tc_.has_ema()) {
    bn.ema_running = bn.running;
    bn.ema_affine = bn.affine;
    return bn;
  }
  bn.ema_running = layout_tensor(name + ".ema_running", Role::EmaBnRunning, DType::F32, Shape{2, c}, g, slot, false);
  bn.ema_affine = persistent(name + ".ema_affine", DType::F32, Shape{2, c});
  return bn;
}

void LayerEmitter::emit(const std::vector<GraphId>& gs, const Node& n) {
  for (GraphId g : gs) cg_.add(g, n);
}

void LayerEmitter::allreduce(const std::vector<GraphId>& gs, TensorId t, const std::string& label) {
  if (!tc_.has_collectives()) return;
  emit(gs, range(RangeOp::AllReduceSum, {RangeRef::of(t)}, label));
}

Node LayerEmitter::side(GraphId g, Node n) const {
  if (tc_.side_streams && g != GraphId::FIRST_LAYER_BWD) n.stream = StreamKind::COMP_2;
  return n;
}

OpAttrs LayerEmitter::bn_attrs(bool relu) const {
  OpAttrs a;
  a.eps = 1e-5f;
  a.relu = relu;
  a.bn_rank_local = tc_.bn_sync == BnSync::Running;
  return a;
}

}  // namespace tr
