// The recipe graphs (see recipe_graphs.h). Emitted after the layers' forward
// and backward and before validation, in this order.
#include "framework/graph/recipe_graphs.h"

namespace tr {
namespace {

Node range_copy_in(const RecipeTensors& ids, int slot) {
  RangeAttrs a;
  a.slot = slot;
  return range(RangeOp::CopyIn, {RangeRef::of(ids.images[slot]), RangeRef::of(ids.labels_src[slot])},
               slot == 0 ? "copy_in.A" : "copy_in.B", a);
}

// Note [optimizer tail]: SGD's, and AdamW's in a model without BatchNorm.
bool has_optimizer_tail(const TrainConfig& tc, bool has_bn) {
  return tc.fusion && (tc.optimizer == OptimizerKind::Sgd || (tc.optimizer == OptimizerKind::AdamW && !has_bn));
}

// What every part of the recipe reads.
struct Recipe {
  ComputationGraph& cg;
  const TrainConfig& tc;
  const RecipeTensors& ids;
  bool has_bn = false;
  int32_t deep_comm_slot_hi = 0;
  bool amp = false;         // 16-bit compute copies and gradients, f32 masters
  bool scaled = false;      // fp16 AMP: the loss is scaled, the gradients unscaled
  Role grads = Role::Grad;  // the gradients the step reads: the f32 masters with AMP
  bool tail = false;        // Note [optimizer tail]
  bool half_grads = false;  // Note [16-bit gradients in the optimizer]
  bool check_in_casts = false;
  // The deep gradients not yet cast and all-reduced when the backward ends.
  RangeRef deep_rest(Role r) const { return RangeRef::slots(r, kDeepGroups, 0, deep_comm_slot_hi); }
  std::vector<RangeRef> metrics() const { return {RangeRef::of(ids.train_metrics), RangeRef::of(ids.step_metrics)}; }
  // BatchNorm's running and batch statistics, and their EMA where there is one.
  std::vector<RangeRef> bn_stats() const {
    std::vector<RangeRef> s = {RangeRef::region(Role::BnRunning), RangeRef::region(Role::BnBatch)};
    if (tc.has_ema()) s.push_back(RangeRef::region(Role::EmaBnRunning));
    return s;
  }
};

// The transfers, the gradients' zeroing and, with AMP, their casts to f32.
void emit_transfers_and_casts(const Recipe& r) {
  RangeAttrs cast_attrs;
  cast_attrs.check_finite = r.check_in_casts;
  r.cg.add(GraphId::TRANSFER_A, range_copy_in(r.ids, 0));
  r.cg.add(GraphId::TRANSFER_B, range_copy_in(r.ids, 1));
  r.cg.add(GraphId::ZERO_GRAD, range(RangeOp::Clear, {RangeRef::region(Role::Grad)}, "zero_grad"));
  if (!r.amp || r.half_grads) return;
  r.cg.add(
      GraphId::CAST_DEEP_GRAD_FP16_TO_FP32,
      range(RangeOp::Cast, {r.deep_rest(Role::Grad), r.deep_rest(Role::GradMaster)}, "cast_deep_grad", cast_attrs));
  r.cg.add(GraphId::CAST_FIRST_GRAD_FP16_TO_FP32,
           range(RangeOp::Cast,
                 {RangeRef::region(Role::Grad, group_bit(ParamGroup::First)),
                  RangeRef::region(Role::GradMaster, group_bit(ParamGroup::First))},
                 "cast_first_grad", cast_attrs));
}

void emit_collectives(const Recipe& r) {
  if (!r.tc.has_collectives()) return;
  r.cg.add(GraphId::DEEP_COMM, range(RangeOp::AllReduceSum, {r.deep_rest(r.grads)}, "deep_allreduce"));
  r.cg.add(GraphId::FIRST_COMM,
           range(RangeOp::AllReduceSum, {RangeRef::region(r.grads, group_bit(ParamGroup::First))}, "first_allreduce"));
  // BnSync::Running: the shards' (mean, var) averaged before UPDATE_STATS (or the optimizer)
  // reads them. Not earlier (DEEP_COMM): FIRST_LAYER_BWD still reads its
  // layer's own shard statistics, and FIRST_COMM runs after it.
  if (r.has_bn && r.tc.bn_sync == BnSync::Running) {
    RangeAttrs avg;
    avg.average = true;
    r.cg.add(GraphId::FIRST_COMM,
             range(RangeOp::AllReduceSum, {RangeRef::region(Role::BnBatch)}, "bn_batch_stats_average", avg));
  }
}

// The metrics' sum, the NaN check and the step's scalars. Note [skipped
// steps]: the check (CheckFinite, the casts or GradNorm) sets scalars.pending_inf;
// AdvanceStep, first after it, publishes it as found_inf (Note [the check's
// flag], train_scalars.h), and every later state update of this step (loss
// scale, step, BN stats, optimizer, EMA) reads that on the device and leaves
// its state untouched. With fusion, AdvanceStep adds the step's metrics (Note
// [the step's scalars in one kernel]).
void emit_step_scalars(const Recipe& r) {
  if (!r.tc.fusion) r.cg.add(GraphId::ACCUM_METRICS, range(RangeOp::Accumulate, r.metrics(), "accum_metrics"));
  RangeAttrs ls;
  ls.dynamic_scale = r.scaled;
  ls.growth_interval = r.tc.loss_scale_growth_interval;
  ls.update_scale = r.tail;  // the optimizer reads AdvanceStep's grad_unscale, not the scale
  const GraphId nan = GraphId::NAN_CHECK_AND_GRAD_SCALING;
  // The global norm of the unscaled, all-reduced gradients, for AdamW's clip: before AdvanceStep as the step's
  // check where the casts do not check (Note [the norm is the check]), else after it.
  const bool clip = r.tc.max_grad_norm > 0, norm_checks = clip && !r.check_in_casts;
  auto grad_norm = [&](bool check) {
    RangeAttrs gn;
    gn.max_norm = r.tc.max_grad_norm;
    gn.check_finite = check;
    // Still scaled: before AdvanceStep, or with a tail (the optimizer unscales them).
    gn.unscale = r.scaled && (check || r.tail);
    r.cg.add(nan, range(RangeOp::GradNorm, {RangeRef::region(r.grads), RangeRef::of(r.ids.grad_norm_partials)},
                        "grad_norm", gn));
  };
  if (norm_checks) grad_norm(true);
  else if (!r.check_in_casts) r.cg.add(nan, range(RangeOp::CheckFinite, {RangeRef::region(r.grads)}, "check_finite"));
  std::vector<RangeRef> step_ops = {RangeRef::of(r.ids.lr_table)};
  if (r.tc.fusion) {
    const std::vector<RangeRef> m = r.metrics();
    step_ops.insert(step_ops.end(), m.begin(), m.end());
  }
  r.cg.add(nan, range(RangeOp::AdvanceStep, step_ops, "advance_step", ls));
  if (r.scaled && !r.tail) r.cg.add(nan, range(RangeOp::UnscaleGrads, {RangeRef::region(r.grads)}, "unscale_grads"));
  if (clip && !norm_checks) grad_norm(false);
  if (!r.tail) r.cg.add(nan, range(RangeOp::UpdateLossScale, {}, "update_loss_scale", ls));
  // BatchNorm's running statistics; with SGD's tail, they and their EMA move
  // inside the optimizer's kernel (Note [optimizer tail]).
  if (r.has_bn && !r.tail) {
    RangeAttrs bnm;
    bnm.t = r.tc.bn_momentum;
    bnm.skip_on_inf = true;
    const std::vector<RangeRef> bn = r.bn_stats();
    r.cg.add(GraphId::UPDATE_STATS, range(RangeOp::Lerp, {bn[0], bn[1]}, "bn_running_update", bnm));
  }
}

void emit_optimizer(const Recipe& r) {
  const TrainConfig& tc = r.tc;
  RangeAttrs oa;
  oa.momentum = tc.momentum;
  oa.weight_decay = tc.weight_decay;
  oa.beta1 = tc.beta1;
  oa.beta2 = tc.beta2;
  oa.adam_eps = tc.adam_eps;
  oa.trust_coef = tc.trust_coef;
  oa.clip = tc.max_grad_norm > 0;
  oa.ema = r.tail && tc.has_ema();  // the tails move the EMA (Note [optimizer tail])
  auto param_ops = [&](GroupMask gm) {
    std::vector<RangeRef> ops = {RangeRef::region(Role::ParamMaster, gm), RangeRef::region(r.grads, gm),
                                 RangeRef::region(Role::OptState1, gm)};
    if (tc.optimizer == OptimizerKind::AdamW) ops.push_back(RangeRef::region(Role::OptState2, gm));
    return ops;
  };
  switch (tc.optimizer) {
    case OptimizerKind::Sgd:
      if (r.tail) {
        std::vector<RangeRef> ops = param_ops(kAllGroups);
        if (oa.ema) ops.push_back(RangeRef::region(Role::EmaParam));
        if (r.amp) ops.push_back(RangeRef::region(Role::ParamCompute));
        if (r.has_bn) {
          const std::vector<RangeRef> bn = r.bn_stats();
          ops.insert(ops.end(), bn.begin(), bn.end());
        }
        oa.unscale = r.scaled;
        oa.ema_t = 1.f - tc.ema_decay;
        oa.bn_stats = r.has_bn;
        oa.t = tc.bn_momentum;
        r.cg.add(GraphId::OPTIMIZER, range(RangeOp::SgdNesterov, ops, "sgd_tail", oa));
      } else {
        r.cg.add(GraphId::OPTIMIZER, range(RangeOp::SgdNesterov, param_ops(kAllGroups), "sgd", oa));
      }
      break;
    case OptimizerKind::AdamW:
      if (r.tail) {
        std::vector<RangeRef> ops = param_ops(kAllGroups);
        if (oa.ema) ops.push_back(RangeRef::region(Role::EmaParam));
        if (r.amp) ops.push_back(RangeRef::region(Role::ParamCompute));
        oa.unscale = r.scaled;
        oa.ema_t = 1.f - tc.ema_decay;
        r.cg.add(GraphId::OPTIMIZER, range(RangeOp::AdamW, ops, "adamw_tail", oa));
      } else {
        r.cg.add(GraphId::OPTIMIZER, range(RangeOp::AdamW, param_ops(kAllGroups), "adamw", oa));
      }
      break;
    case OptimizerKind::Lars:
      r.cg.add(GraphId::LARS_FC_OPT, range(RangeOp::Lars, param_ops(group_bit(ParamGroup::Fc)), "lars_fc", oa));
      r.cg.add(GraphId::LARS_FIRST_CONV_OPT,
               range(RangeOp::Lars, param_ops(group_bit(ParamGroup::First)), "lars_first", oa));
      r.cg.add(GraphId::LARS_DEEP_CONV_OPT,
               range(RangeOp::Lars, param_ops(group_bit(ParamGroup::Deep)), "lars_deep", oa));
      break;
  }
}

// The EMA of the weights and BatchNorm statistics, the f16 copies, the metrics' clearing.
void emit_ema_and_copies(const Recipe& r) {
  RangeAttrs ema;
  ema.t = 1.f - r.tc.ema_decay;
  ema.skip_on_inf = true;
  const bool has_ema = r.tc.has_ema();
  if (has_ema && !r.tail)
    r.cg.add(GraphId::EMA_UPDATE,
             range(RangeOp::Lerp, {RangeRef::region(Role::EmaParam), RangeRef::region(Role::ParamMaster)}, "ema_params",
                   ema));
  if (has_ema && r.has_bn && !r.tail)
    r.cg.add(GraphId::EMA_UPDATE,
             range(RangeOp::Lerp, {RangeRef::region(Role::EmaBnRunning), RangeRef::region(Role::BnRunning)},
                   "ema_bn_running", ema));
  if (r.amp) {
    if (!r.tail)
      r.cg.add(GraphId::CAST_MAIN_FP32_TO_FP16,
               range(RangeOp::Cast, {RangeRef::region(Role::ParamMaster), RangeRef::region(Role::ParamCompute)},
                     "cast_main"));
    if (has_ema)
      r.cg.add(GraphId::CAST_EMA_FP32_TO_FP16,
               range(RangeOp::Cast, {RangeRef::region(Role::EmaParam), RangeRef::region(Role::EmaParamCompute)},
                     "cast_ema"));
  }
  r.cg.add(GraphId::CLEAR_METRICS, range(RangeOp::Clear, {RangeRef::of(r.ids.train_metrics)}, "clear_metrics"));
  r.cg.add(GraphId::CLEAR_VAL_METRICS,
           range(RangeOp::Clear, {RangeRef::of(r.ids.val_main_metrics), RangeRef::of(r.ids.val_ema_metrics)},
                 "clear_val_metrics"));
}

}  // namespace

void emit_recipe_graphs(ComputationGraph& cg, const TrainConfig& tc, const RecipeTensors& ids, bool has_bn,
                        int32_t deep_comm_slot_hi) {
  Recipe r{cg, tc, ids, has_bn, deep_comm_slot_hi};
  r.amp = tc.amp;
  r.scaled = tc.loss_scaling();
  r.tail = has_optimizer_tail(tc, has_bn);
  r.half_grads = optimizer_reads_half_grads(tc, has_bn);
  r.grads = tc.amp && !r.half_grads ? Role::GradMaster : Role::Grad;
  // Note [the check in the casts]: on one rank the AMP casts read every f16
  // gradient the check would read, before any all-reduce could mix ranks in.
  r.check_in_casts = tc.amp && tc.fusion && !tc.has_collectives() && !r.half_grads;
  emit_transfers_and_casts(r);
  emit_collectives(r);
  emit_step_scalars(r);
  emit_optimizer(r);
  emit_ema_and_copies(r);
}

bool optimizer_reads_half_grads(const TrainConfig& tc, bool has_bn) {
  return tc.amp && has_optimizer_tail(tc, has_bn) && !tc.has_collectives();
}

bool sets_the_check_flag(const Node& n) {
  return n.kind == Node::Kind::Range &&
         (n.range_op == RangeOp::CheckFinite ||
          ((n.range_op == RangeOp::Cast || n.range_op == RangeOp::GradNorm) && n.range_attrs.check_finite));
}

}  // namespace tr
