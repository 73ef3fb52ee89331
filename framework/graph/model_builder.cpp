#include "framework/graph/model_builder.h"

#include <cmath>
#include <functional>
#include <vector>

#include "framework/core/error.h"
#include "framework/graph/layer_spec.h"

namespace tr {
namespace {

using LK = LayerSpec::Kind;

// The tensors of one parameter across the parallel param-layout roles.
// In f32 mode compute == master and grad_master == grad (no copies exist).
struct Param {
  TensorId master = kNoTensor, compute = kNoTensor, grad = kNoTensor, grad_master = kNoTensor;
  TensorId ema = kNoTensor, ema_compute = kNoTensor;
};

struct BnState {
  Param gamma, beta;
  TensorId batch = kNoTensor, running = kNoTensor, ema_running = kNoTensor;
  TensorId affine = kNoTensor, ema_affine = kNoTensor;
};

// One trained layer's forward values, kept for its backward (the tape).
struct TapeEntry {
  int layer = 0;
  TensorId x = kNoTensor, y = kNoTensor;
};

enum class Pass { Train, InferMain, InferEma };

class Builder {
 public:
  Builder(const ModelConfig& m, const TrainConfig& t, int64_t max_batch)
      : layers_(model_layers(m)), mc_(m), tc_(t) {
    out_.model = m;
    out_.train = t;
    out_.max_batch = max_batch;
    T_ = t.amp ? DType::F16 : DType::F32;
    out_.compute_dtype = T_;
    TR_USER_CHECK(t.ranks >= 1, "ranks must be >= 1, got ", t.ranks);
    TR_USER_CHECK(max_batch >= 1, "batch must be >= 1");
    TR_USER_CHECK(t.schedule_len >= 1, "learning-rate schedule must have at least one entry");
  }

  CompiledModel build() {
    make_inputs_and_state();
    make_params();
    emit_training();
    emit_update_graphs();
    emit_validation();
    return std::move(out_);
  }

 private:
  ComputationGraph& cg() { return out_.cg; }

  TensorId persistent(const std::string& name, DType dt, Shape s, Role role = Role::Persistent) {
    TensorInfo ti;
    ti.name = name;
    ti.dtype = dt;
    ti.role = role;
    ti.fixed_shape = s;
    return cg().add_tensor(ti);
  }

  TensorId act(const std::string& name, DType dt) {
    TensorInfo ti;
    ti.name = name;
    ti.dtype = dt;
    ti.role = Role::Activation;
    return cg().add_tensor(ti);
  }

  TensorId layout_tensor(const std::string& name, Role role, DType dt, Shape s, ParamGroup g,
                         int slot, bool decay, Init init = Init::Zero, float std = 0.f) {
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
    return cg().add_tensor(ti);
  }

  Param make_param(const std::string& name, Shape s, ParamGroup g, bool decay, Init init, float std) {
    const int slot = param_slots_++;
    const bool amp = tc_.amp;
    Param p;
    p.master = layout_tensor(name, Role::ParamMaster, DType::F32, s, g, slot, decay, init, std);
    p.compute = amp ? layout_tensor(name + ".f16", Role::ParamCompute, T_, s, g, slot, decay) : p.master;
    p.grad = layout_tensor(name + ".grad", Role::Grad, T_, s, g, slot, decay);
    p.grad_master =
        amp ? layout_tensor(name + ".grad.f32", Role::GradMaster, DType::F32, s, g, slot, decay) : p.grad;
    layout_tensor(name + ".opt1", Role::OptState1, DType::F32, s, g, slot, decay);
    if (tc_.optimizer == OptimizerKind::AdamW)
      layout_tensor(name + ".opt2", Role::OptState2, DType::F32, s, g, slot, decay);
    p.ema = layout_tensor(name + ".ema", Role::EmaParam, DType::F32, s, g, slot, decay);
    p.ema_compute = amp ? layout_tensor(name + ".ema.f16", Role::EmaParamCompute, T_, s, g, slot, decay) : p.ema;
    return p;
  }

  void make_inputs_and_state() {
    const Shape img{out_.max_batch, mc_.in_height, mc_.in_width, mc_.in_channels};
    for (int b = 0; b < 2; ++b) {
      const char* ab = b == 0 ? "A" : "B";
      out_.images[b] = persistent(cat("images_", ab), DType::U8, img, Role::Input);
      out_.labels_src[b] = persistent(cat("labels_", ab), DType::I32, Shape{out_.max_batch}, Role::Input);
    }
    out_.lr_table = persistent("lr_table", DType::F32, Shape{tc_.schedule_len});
    out_.step_metrics = persistent("metrics.step", DType::F32, Shape{kMetricSlots});
    out_.train_metrics = persistent("metrics.train", DType::F32, Shape{kMetricSlots});
    out_.val_main_metrics = persistent("metrics.val_main", DType::F32, Shape{kMetricSlots});
    out_.val_ema_metrics = persistent("metrics.val_ema", DType::F32, Shape{kMetricSlots});
    val_step_main_ = persistent("metrics.val_step_main", DType::F32, Shape{kMetricSlots});
    val_step_ema_ = persistent("metrics.val_step_ema", DType::F32, Shape{kMetricSlots});
  }

  // Parameter shapes follow the base resolution; spatial size only matters for
  // an fc that sees a spatial input (mlp), which makes the model resolution-bound.
  void make_params() {
    int64_t h = mc_.in_height, w = mc_.in_width, c = mc_.in_channels;
    bool spatial = true;
    out_.supports_lowres = true;
    params_.resize(layers_.size());
    bns_.resize(layers_.size());
    for (size_t i = 0; i < layers_.size(); ++i) {
      const LayerSpec& L = layers_[i];
      const std::string name = cat("l", i, layer_tag(L.kind));
      switch (L.kind) {
        case LK::Conv3x3: {
          const float std = std::sqrt(2.f / float(9 * c));
          params_[i].push_back(make_param(name + ".w", Shape{L.out_features, 3, 3, c}, L.group, true,
                                          Init::Normal, std));
          c = L.out_features;
          break;
        }
        case LK::BnRelu: {
          BnState& bn = bns_[i];
          bn.gamma = make_param(name + ".gamma", Shape{c}, L.group, false, Init::One, 0.f);
          bn.beta = make_param(name + ".beta", Shape{c}, L.group, false, Init::Zero, 0.f);
          const int slot = bn_slots_++;
          bn.batch = layout_tensor(name + ".batch", Role::BnBatch, DType::F32, Shape{2, c}, L.group, slot, false);
          bn.running = layout_tensor(name + ".running", Role::BnRunning, DType::F32, Shape{2, c}, L.group, slot,
                                     false, Init::BnRunning);
          bn.ema_running = layout_tensor(name + ".ema_running", Role::EmaBnRunning, DType::F32, Shape{2, c},
                                         L.group, slot, false);
          bn.affine = persistent(name + ".affine", DType::F32, Shape{2, c});
          bn.ema_affine = persistent(name + ".ema_affine", DType::F32, Shape{2, c});
          break;
        }
        case LK::MaxPool2:
          h /= 2;
          w /= 2;
          break;
        case LK::GlobalMaxPool:
          h = w = 1;
          spatial = false;
          break;
        case LK::Fc: {
          const int64_t k = spatial ? h * w * c : c;
          if (spatial && (h > 1 || w > 1)) out_.supports_lowres = false;
          const float std = std::sqrt(2.f / float(k));
          params_[i].push_back(make_param(name + ".w", Shape{L.out_features, k}, L.group, true, Init::Normal, std));
          if (L.bias) params_[i].push_back(make_param(name + ".b", Shape{L.out_features}, L.group, false, Init::Zero, 0.f));
          c = L.out_features;
          h = w = 1;
          spatial = false;
          break;
        }
        case LK::Relu:
          break;
      }
    }
  }

  static const char* layer_tag(LK k) {
    switch (k) {
      case LK::Conv3x3: return ".conv";
      case LK::BnRelu: return ".bn";
      case LK::MaxPool2: return ".pool";
      case LK::GlobalMaxPool: return ".gpool";
      case LK::Fc: return ".fc";
      case LK::Relu: return ".relu";
    }
    return "";
  }

  bool is_first(size_t i) const { return layers_[i].group == ParamGroup::First; }

  // Adds a node to every bucket in `gs` (first-layer forward goes to A and B).
  void emit(const std::vector<GraphId>& gs, const Node& n) {
    for (GraphId g : gs) cg().add(g, n);
  }

  void allreduce(const std::vector<GraphId>& gs, TensorId t, const std::string& label) {
    if (!tc_.has_collectives()) return;
    emit(gs, range(RangeOp::AllReduceSum, {RangeRef::of(t)}, label));
  }

  // Forward of one layer; returns its output. For Pass::Train records the tape.
  TensorId layer_fwd(size_t i, TensorId x, Pass pass, const std::vector<GraphId>& gs) {
    const LayerSpec& L = layers_[i];
    const std::string base = cat("l", i, layer_tag(L.kind), pass == Pass::Train ? "" : pass == Pass::InferMain ? ".inf" : ".ema");
    auto weight = [&](const Param& p) {
      return pass == Pass::Train || pass == Pass::InferMain ? p.compute : p.ema_compute;
    };
    TensorId y = act(base + ".y", T_);
    switch (L.kind) {
      case LK::Conv3x3:
        emit(gs, compute(OpKind::ConvFwd, {x, weight(params_[i][0])}, {y}, base + ".fwd"));
        break;
      case LK::BnRelu: {
        const BnState& bn = bns_[i];
        if (pass == Pass::Train) {
          TensorId sums = act(base + ".sums", DType::F32);
          emit(gs, compute(OpKind::BnStats, {x}, {sums}, base + ".stats"));
          if (tc_.bn_sync == BnSync::Batch) allreduce(gs, sums, base + ".stats_allreduce");
          emit(gs, compute(OpKind::BnReluApply, {x, sums, bn.gamma.compute, bn.beta.compute}, {y, bn.batch},
                           base + ".apply", bn_attrs()));
        } else {
          const TensorId aff = pass == Pass::InferMain ? bn.affine : bn.ema_affine;
          emit(gs, compute(OpKind::BnReluInfer, {x, aff}, {y}, base + ".infer", bn_attrs()));
        }
        break;
      }
      case LK::MaxPool2: {
        OpAttrs a;
        a.kernel = 2;
        a.stride = 2;
        emit(gs, compute(OpKind::MaxPoolFwd, {x}, {y}, base + ".fwd", a));
        break;
      }
      case LK::GlobalMaxPool:
        emit(gs, compute(OpKind::GlobalMaxPoolFwd, {x}, {y}, base + ".fwd"));
        break;
      case LK::Fc: {
        OpAttrs a;
        a.scale = L.scale;
        a.has_bias = L.bias;
        std::vector<TensorId> in = {x, weight(params_[i][0])};
        if (L.bias) in.push_back(weight(params_[i][1]));
        emit(gs, compute(OpKind::FcFwd, in, {y}, base + ".fwd", a));
        break;
      }
      case LK::Relu:
        emit(gs, compute(OpKind::ReluFwd, {x}, {y}, base + ".fwd"));
        break;
    }
    if (pass == Pass::Train) tape_.push_back({static_cast<int>(i), x, y});
    return y;
  }

  // Note [streams inside a graph]: weight gradients depend on nothing later in
  // the backward, so they may run on COMP_2 beside the data-gradient chain on
  // COMP_1 (TrainConfig::side_streams).
  Node side(Node n) const {
    if (tc_.side_streams) n.stream = StreamKind::COMP_2;
    return n;
  }

  // Backward of one layer: writes parameter grads, returns dx (or kNoTensor when
  // x is the network input, whose gradient nobody needs).
  TensorId layer_bwd(const TapeEntry& e, TensorId dy, bool need_dx, GraphId g) {
    const size_t i = static_cast<size_t>(e.layer);
    const LayerSpec& L = layers_[i];
    const std::string base = cat("l", i, layer_tag(L.kind));
    TensorId dx = need_dx ? act(base + ".dx", T_) : kNoTensor;
    switch (L.kind) {
      case LK::Conv3x3: {
        const Param& w = params_[i][0];
        cg().add(g, side(compute(OpKind::ConvBwdFilter, {e.x, dy}, {w.grad}, base + ".bwd_filter")));
        if (need_dx) cg().add(g, compute(OpKind::ConvBwdData, {dy, w.compute, e.x}, {dx}, base + ".bwd_data"));
        break;
      }
      case LK::BnRelu: {
        const BnState& bn = bns_[i];
        TR_CHECK(need_dx, "BN cannot be the input layer");
        TensorId dsums = act(base + ".dsums", DType::F32);
        cg().add(g, compute(OpKind::BnReluBwdReduce, {dy, e.y, e.x, bn.batch}, {bn.gamma.grad, bn.beta.grad, dsums},
                            base + ".bwd_reduce", bn_attrs()));
        if (tc_.bn_sync == BnSync::Batch) allreduce({g}, dsums, base + ".dsums_allreduce");
        cg().add(g, compute(OpKind::BnReluBwdApply, {dy, e.y, e.x, bn.batch, bn.gamma.compute, dsums}, {dx},
                            base + ".bwd_apply", bn_attrs()));
        break;
      }
      case LK::MaxPool2: {
        OpAttrs a;
        a.kernel = 2;
        a.stride = 2;
        cg().add(g, compute(OpKind::MaxPoolBwd, {dy, e.x, e.y}, {dx}, base + ".bwd", a));
        break;
      }
      case LK::GlobalMaxPool:
        cg().add(g, compute(OpKind::GlobalMaxPoolBwd, {dy, e.x, e.y}, {dx}, base + ".bwd"));
        break;
      case LK::Fc: {
        OpAttrs a;
        a.scale = L.scale;
        a.has_bias = L.bias;
        std::vector<TensorId> grads = {params_[i][0].grad};
        if (L.bias) grads.push_back(params_[i][1].grad);
        cg().add(g, side(compute(OpKind::FcBwdWeight, {e.x, dy}, grads, base + ".bwd_weight", a)));
        if (need_dx) cg().add(g, compute(OpKind::FcBwdData, {dy, params_[i][0].compute}, {dx}, base + ".bwd_data", a));
        break;
      }
      case LK::Relu:
        cg().add(g, compute(OpKind::ReluBwd, {dy, e.y}, {dx}, base + ".bwd"));
        break;
    }
    return dx;
  }

  // One set of BN attributes for every phase: forward, backward and folding
  // must agree on eps, on the ReLU and on whose samples the statistics cover.
  OpAttrs bn_attrs() const {
    OpAttrs a;
    a.eps = 1e-5f;
    a.relu = true;
    a.bn_rank_local = tc_.bn_sync == BnSync::Running;
    return a;
  }

  OpAttrs prep_attrs() const {
    OpAttrs a;
    for (int c = 0; c < 4; ++c) {
      a.norm_mean[c] = mc_.norm_mean;
      a.norm_std[c] = mc_.norm_std;
    }
    return a;
  }

  void emit_training() {
    const std::vector<GraphId> fwd_ab = {GraphId::FIRST_LAYER_FWD_A, GraphId::FIRST_LAYER_FWD_B};
    x0_ = act("input.x", T_);
    labels_ = act("input.labels", DType::I32);
    cg().add(GraphId::FIRST_LAYER_FWD_A,
             compute(OpKind::InputPrep, {out_.images[0], out_.labels_src[0]}, {x0_, labels_}, "input_prep.A", prep_attrs()));
    cg().add(GraphId::FIRST_LAYER_FWD_B,
             compute(OpKind::InputPrep, {out_.images[1], out_.labels_src[1]}, {x0_, labels_}, "input_prep.B", prep_attrs()));
    TensorId x = x0_;
    for (size_t i = 0; i < layers_.size(); ++i)
      x = layer_fwd(i, x, Pass::Train, is_first(i) ? fwd_ab : std::vector<GraphId>{GraphId::DEEP_FWD_BWD});

    OpAttrs la;
    la.label_smoothing = tc_.label_smoothing;
    la.with_grad = true;
    TensorId dy = act("loss.dlogits", T_);
    cg().add(GraphId::DEEP_FWD_BWD,
             compute(OpKind::SoftmaxXent, {x, labels_}, {dy, out_.step_metrics}, "loss", la));

    for (auto it = tape_.rbegin(); it != tape_.rend(); ++it) {
      const bool first = is_first(static_cast<size_t>(it->layer));
      const bool need_dx = it->x != x0_;
      dy = layer_bwd(*it, dy, need_dx, first ? GraphId::FIRST_LAYER_BWD : GraphId::DEEP_FWD_BWD);
    }
  }

  void emit_update_graphs() {
    const bool amp = tc_.amp;
    const Role grads = amp ? Role::GradMaster : Role::Grad;
    cg().add(GraphId::TRANSFER_A, range_copy_in(0));
    cg().add(GraphId::TRANSFER_B, range_copy_in(1));
    cg().add(GraphId::ZERO_GRAD, range(RangeOp::Clear, {RangeRef::region(Role::Grad)}, "zero_grad"));
    if (amp) {
      cg().add(GraphId::CAST_DEEP_GRAD_FP16_TO_FP32,
               range(RangeOp::Cast, {RangeRef::region(Role::Grad, kDeepGroups), RangeRef::region(Role::GradMaster, kDeepGroups)},
                     "cast_deep_grad"));
      cg().add(GraphId::CAST_FIRST_GRAD_FP16_TO_FP32,
               range(RangeOp::Cast,
                     {RangeRef::region(Role::Grad, group_bit(ParamGroup::First)),
                      RangeRef::region(Role::GradMaster, group_bit(ParamGroup::First))},
                     "cast_first_grad"));
    }
    if (tc_.has_collectives()) {
      cg().add(GraphId::DEEP_COMM, range(RangeOp::AllReduceSum, {RangeRef::region(grads, kDeepGroups)}, "deep_allreduce"));
      cg().add(GraphId::FIRST_COMM,
               range(RangeOp::AllReduceSum, {RangeRef::region(grads, group_bit(ParamGroup::First))}, "first_allreduce"));
      // BnSync::Running: the shards' (mean, var) averaged before UPDATE_STATS
      // reads them. Not earlier (DEEP_COMM): FIRST_LAYER_BWD still reads its
      // layer's own shard statistics, and FIRST_COMM runs after it.
      if (bn_slots_ > 0 && tc_.bn_sync == BnSync::Running) {
        RangeAttrs avg;
        avg.average = true;
        cg().add(GraphId::FIRST_COMM,
                 range(RangeOp::AllReduceSum, {RangeRef::region(Role::BnBatch)}, "bn_batch_stats_average", avg));
      }
    }
    cg().add(GraphId::ACCUM_METRICS,
             range(RangeOp::Accumulate, {RangeRef::of(out_.train_metrics), RangeRef::of(out_.step_metrics)}, "accum_metrics"));

    // Note [skipped steps]: CheckFinite sets scalars.found_inf; every later
    // state update of this step (loss scale, step, BN stats, optimizer, EMA)
    // reads it on the device and leaves its state untouched.
    RangeAttrs ls;
    ls.dynamic_scale = amp;
    ls.growth_interval = tc_.loss_scale_growth_interval;
    const GraphId nan = GraphId::NAN_CHECK_AND_GRAD_SCALING;
    cg().add(nan, range(RangeOp::CheckFinite, {RangeRef::region(grads)}, "check_finite"));
    if (amp) cg().add(nan, range(RangeOp::UnscaleGrads, {RangeRef::region(grads)}, "unscale_grads"));
    cg().add(nan, range(RangeOp::UpdateLossScale, {}, "update_loss_scale", ls));
    cg().add(nan, range(RangeOp::AdvanceStep, {RangeRef::of(out_.lr_table)}, "advance_step"));

    if (bn_slots_ > 0) {
      RangeAttrs bnm;
      bnm.t = tc_.bn_momentum;
      bnm.skip_on_inf = true;
      cg().add(GraphId::UPDATE_STATS,
               range(RangeOp::Lerp, {RangeRef::region(Role::BnRunning), RangeRef::region(Role::BnBatch)}, "bn_running_update", bnm));
    }

    RangeAttrs oa;
    oa.momentum = tc_.momentum;
    oa.weight_decay = tc_.weight_decay;
    oa.beta1 = tc_.beta1;
    oa.beta2 = tc_.beta2;
    oa.adam_eps = tc_.adam_eps;
    oa.trust_coef = tc_.trust_coef;
    auto param_ops = [&](GroupMask gm) {
      std::vector<RangeRef> r = {RangeRef::region(Role::ParamMaster, gm), RangeRef::region(grads, gm),
                                 RangeRef::region(Role::OptState1, gm)};
      if (tc_.optimizer == OptimizerKind::AdamW) r.push_back(RangeRef::region(Role::OptState2, gm));
      return r;
    };
    switch (tc_.optimizer) {
      case OptimizerKind::Sgd:
        cg().add(GraphId::OPTIMIZER, range(RangeOp::SgdNesterov, param_ops(kAllGroups), "sgd", oa));
        break;
      case OptimizerKind::AdamW:
        cg().add(GraphId::OPTIMIZER, range(RangeOp::AdamW, param_ops(kAllGroups), "adamw", oa));
        break;
      case OptimizerKind::Lars:
        cg().add(GraphId::LARS_FC_OPT, range(RangeOp::Lars, param_ops(group_bit(ParamGroup::Fc)), "lars_fc", oa));
        cg().add(GraphId::LARS_FIRST_CONV_OPT,
                 range(RangeOp::Lars, param_ops(group_bit(ParamGroup::First)), "lars_first", oa));
        cg().add(GraphId::LARS_DEEP_CONV_OPT,
                 range(RangeOp::Lars, param_ops(group_bit(ParamGroup::Deep)), "lars_deep", oa));
        break;
    }

    RangeAttrs ema;
    ema.t = 1.f - tc_.ema_decay;
    ema.skip_on_inf = true;
    cg().add(GraphId::EMA_UPDATE,
             range(RangeOp::Lerp, {RangeRef::region(Role::EmaParam), RangeRef::region(Role::ParamMaster)}, "ema_params", ema));
    if (bn_slots_ > 0)
      cg().add(GraphId::EMA_UPDATE, range(RangeOp::Lerp, {RangeRef::region(Role::EmaBnRunning), RangeRef::region(Role::BnRunning)},
                                          "ema_bn_running", ema));
    if (amp) {
      cg().add(GraphId::CAST_MAIN_FP32_TO_FP16,
               range(RangeOp::Cast, {RangeRef::region(Role::ParamMaster), RangeRef::region(Role::ParamCompute)}, "cast_main"));
      cg().add(GraphId::CAST_EMA_FP32_TO_FP16,
               range(RangeOp::Cast, {RangeRef::region(Role::EmaParam), RangeRef::region(Role::EmaParamCompute)}, "cast_ema"));
    }
    cg().add(GraphId::CLEAR_METRICS,
             range(RangeOp::Clear,
                   {RangeRef::of(out_.train_metrics), RangeRef::of(out_.val_main_metrics), RangeRef::of(out_.val_ema_metrics)},
                   "clear_metrics"));
  }

  Node range_copy_in(int slot) {
    RangeAttrs a;
    a.slot = slot;
    return range(RangeOp::CopyIn, {RangeRef::of(out_.images[slot]), RangeRef::of(out_.labels_src[slot])},
                 slot == 0 ? "copy_in.A" : "copy_in.B", a);
  }

  void emit_validation() {
    for (size_t i = 0; i < layers_.size(); ++i) {
      if (layers_[i].kind != LK::BnRelu) continue;
      const BnState& bn = bns_[i];
      const OpAttrs a = bn_attrs();
      cg().add(GraphId::UPDATE_BN_INF_PARAMS,
               compute(OpKind::BnFold, {bn.gamma.master, bn.beta.master, bn.running}, {bn.affine}, cat("l", i, ".bn.fold"), a));
      cg().add(GraphId::UPDATE_BN_INF_PARAMS,
               compute(OpKind::BnFold, {bn.gamma.ema, bn.beta.ema, bn.ema_running}, {bn.ema_affine}, cat("l", i, ".bn.fold_ema"), a));
    }
    TensorId xv = act("val.x", T_);
    TensorId lv = act("val.labels", DType::I32);
    const GraphId inf_ab[2] = {GraphId::INF_MAIN_A, GraphId::INF_MAIN_B};
    for (int b = 0; b < 2; ++b)
      cg().add(inf_ab[b], compute(OpKind::InputPrep, {out_.images[b], out_.labels_src[b]}, {xv, lv},
                                  b == 0 ? "val.input_prep.A" : "val.input_prep.B", prep_attrs()));
    OpAttrs la;
    la.label_smoothing = tc_.label_smoothing;
    la.with_grad = false;
    TensorId x = xv;
    const std::vector<GraphId> main_gs = {GraphId::INF_MAIN_A, GraphId::INF_MAIN_B};
    for (size_t i = 0; i < layers_.size(); ++i) x = layer_fwd(i, x, Pass::InferMain, main_gs);
    emit(main_gs, compute(OpKind::SoftmaxXent, {x, lv}, {val_step_main_}, "val.loss", la));
    emit(main_gs, range(RangeOp::Accumulate, {RangeRef::of(out_.val_main_metrics), RangeRef::of(val_step_main_)}, "val.accum"));
    x = xv;
    for (size_t i = 0; i < layers_.size(); ++i) x = layer_fwd(i, x, Pass::InferEma, {GraphId::INF_EMA});
    cg().add(GraphId::INF_EMA, compute(OpKind::SoftmaxXent, {x, lv}, {val_step_ema_}, "val_ema.loss", la));
    cg().add(GraphId::INF_EMA,
             range(RangeOp::Accumulate, {RangeRef::of(out_.val_ema_metrics), RangeRef::of(val_step_ema_)}, "val_ema.accum"));
    if (tc_.has_collectives())
      cg().add(GraphId::VAL_RESULT_COMM,
               range(RangeOp::AllReduceSum, {RangeRef::of(out_.val_main_metrics), RangeRef::of(out_.val_ema_metrics)},
                     "val_allreduce"));
  }

  std::vector<LayerSpec> layers_;
  ModelConfig mc_;
  TrainConfig tc_;
  DType T_ = DType::F32;
  CompiledModel out_;
  std::vector<std::vector<Param>> params_;
  std::vector<BnState> bns_;
  std::vector<TapeEntry> tape_;
  int param_slots_ = 0, bn_slots_ = 0;
  TensorId x0_ = kNoTensor, labels_ = kNoTensor, val_step_main_ = kNoTensor, val_step_ema_ = kNoTensor;
};

}  // namespace

CompiledModel build_model(const ModelConfig& m, const TrainConfig& t, int64_t max_batch) {
  return Builder(m, t, max_batch).build();
}

}  // namespace tr
