#pragma once
// What a layer plug-in (framework/graph/layers/) may ask of the model builder:
// new tensors (activations, parameters with all their parallel copies, BN
// state) and nodes in the graphs it is told to emit into. One emitter builds
// one ComputationGraph; plug-ins hold no state of their own.
#include <map>
#include <string>
#include <vector>

#include "framework/graph/computation_graph.h"
#include "framework/graph/model_config.h"

namespace tr {

// The tensors of one parameter across the parallel param-layout roles
// (Note [parallel regions]). In f32 mode compute == master and grad_master == grad.
struct Param {
  TensorId master = kNoTensor, compute = kNoTensor, grad = kNoTensor, grad_master = kNoTensor;
  TensorId ema = kNoTensor, ema_compute = kNoTensor;
};

// A BatchNorm layer's parameters and statistics.
struct BnState {
  Param gamma, beta;
  TensorId batch = kNoTensor, running = kNoTensor, ema_running = kNoTensor;  // f32 [2,C] (mean, var)
  TensorId affine = kNoTensor, ema_affine = kNoTensor;                       // f32 [2,C] (scale, shift)
  // f32 [2,C] (scale, shift) of this step's batch statistics: the backward
  // recomputes the ReLU's input scale * x + shift from it instead of reading y.
  TensorId train_affine = kNoTensor;
};

// What a layer owns across passes: its parameters (in creation order) and, for
// BatchNorm, its statistics.
struct LayerState {
  std::vector<Param> params;
  BnState bn;
  bool has_bn = false;
};

// Which weights a forward pass reads and whether it records for a backward.
enum class Pass { Train, InferMain, InferEma };

class LayerEmitter {
 public:
  LayerEmitter(ComputationGraph& cg, const TrainConfig& t);

  const TrainConfig& train() const { return tc_; }
  DType compute_dtype() const { return T_; }
  bool amp() const { return tc_.amp; }

  TensorId activation(const std::string& name, DType dt);
  TensorId activation(const std::string& name) { return activation(name, T_); }
  // An activation made earlier, by name (a layer's backward finding a tensor its
  // forward recorded beside its output).
  TensorId find_activation(const std::string& name) const;
  TensorId persistent(const std::string& name, DType dt, Shape s, Role role = Role::Persistent);
  // A parameter: master (f32), its compute copy (AMP), gradient, f32 gradient
  // (AMP, unless grad_masters is off), optimizer state, EMA copies, all in one
  // param-layout slot.
  Param param(const std::string& name, Shape s, ParamGroup g, bool decay, Init init, float std);
  // Whether AMP parameters get f32 gradient masters (default on). Off where the
  // optimizer reads the 16-bit gradients (Note [16-bit gradients in the
  // optimizer], recipe_graphs.h): grad_master is then the gradient itself. Set
  // before the first param().
  void set_grad_masters(bool on) { grad_masters_ = on; }
  // gamma, beta and the [2,C] statistics of a BatchNorm over c channels.
  BnState batchnorm(const std::string& name, int64_t c, ParamGroup g);
  int param_slots() const { return param_slots_; }
  int bn_slots() const { return bn_slots_; }

  // The weight tensor a pass reads.
  static TensorId weight(const Param& p, Pass pass) { return pass == Pass::InferEma ? p.ema_compute : p.compute; }

  void emit(const std::vector<GraphId>& gs, const Node& n);
  void emit(GraphId g, Node n) { cg_.add(g, std::move(n)); }
  // A sum over ranks of tensor t, where the run has collectives.
  void allreduce(const std::vector<GraphId>& gs, TensorId t, const std::string& label);
  // Note [streams inside a graph]: weight gradients depend on nothing later in
  // the backward, so they may run on COMP_2 beside the data-gradient chain on
  // COMP_1 (TrainConfig::side_streams). Not in FIRST_LAYER_BWD: its weight
  // gradient is the last node, with nothing after it on COMP_1 to overlap,
  // and on COMP_1 it may run beside DEEP_FWD_BWD's last ones on COMP_2 (Note
  // [the deep weight gradients finish beside the first layer's backward],
  // graph_runner.h).
  Node side(GraphId g, Node n) const;
  // One set of BN attributes for every phase: forward, backward and folding
  // must agree on eps, on the ReLU and on whose samples the statistics cover.
  OpAttrs bn_attrs(bool relu) const;

 private:
  TensorId layout_tensor(const std::string& name, Role role, DType dt, Shape s, ParamGroup g, int slot, bool decay,
                         Init init = Init::Zero, float std = 0.f);

  ComputationGraph& cg_;
  TrainConfig tc_;
  DType T_ = DType::F32;
  int param_slots_ = 0, bn_slots_ = 0;
  bool grad_masters_ = true;
  std::map<std::string, TensorId> activations_;
};

}  // namespace tr
