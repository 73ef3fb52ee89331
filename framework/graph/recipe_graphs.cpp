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

}  // namespace

void emit_recipe_graphs(ComputationGraph& cg, const TrainConfig& tc, const RecipeTensors& ids, bool has_bn,
                        int32_t deep_comm_slot_hi) {
  // The deep gradients not yet cast and all-reduced when the backward ends.
  auto deep_rest = [&](Role r) { return RangeRef::slots(r, kDeepGroups, 0, deep_comm_slot_hi); };
  const bool amp = tc.amp;
  const Role grads = amp ? Role::GradMaster : Role::Grad;
  const bool tail = tc.fusion && tc.optimizer == OptimizerKind::Sgd;  // Note [optimizer tail]
  // Note [the check in the casts]: on one rank the AMP casts read every f16
  // gradient the check would read, before any all-reduce could mix ranks in.
  const bool check_in_casts = amp && tc.fusion && !tc.has_collectives();
  RangeAttrs cast_attrs;
  cast_attrs.check_finite = check_in_casts;
  cg.add(GraphId::TRANSFER_A, range_copy_in(ids, 0));
  cg.add(GraphId::TRANSFER_B, range_copy_in(ids, 1));
  cg.add(GraphId::ZERO_GRAD, range(RangeOp::Clear, {RangeRef::region(Role::Grad)}, "zero_grad"));
  if (amp) {
    cg.add(GraphId::CAST_DEEP_GRAD_FP16_TO_FP32,
             range(RangeOp::Cast, {deep_rest(Role::Grad), deep_rest(Role::GradMaster)},
                   "cast_deep_grad", cast_attrs));
    cg.add(GraphId::CAST_FIRST_GRAD_FP16_TO_FP32,
             range(RangeOp::Cast,
                   {RangeRef::region(Role::Grad, group_bit(ParamGroup::First)),
                    RangeRef::region(Role::GradMaster, group_bit(ParamGroup::First))},
                   "cast_first_grad", cast_attrs));
  }
  if (tc.has_collectives()) {
    cg.add(GraphId::DEEP_COMM, range(RangeOp::AllReduceSum, {deep_rest(grads)}, "deep_allreduce"));
    cg.add(GraphId::FIRST_COMM,
             range(RangeOp::AllReduceSum, {RangeRef::region(grads, group_bit(ParamGroup::First))}, "first_allreduce"));
    // BnSync::Running: the shards' (mean, var) averaged before UPDATE_STATS (or the optimizer)
    // reads them. Not earlier (DEEP_COMM): FIRST_LAYER_BWD still reads its
    // layer's own shard statistics, and FIRST_COMM runs after it.
    if (has_bn && tc.bn_sync == BnSync::Running) {
      RangeAttrs avg;
      avg.average = true;
      cg.add(GraphId::FIRST_COMM,
               range(RangeOp::AllReduceSum, {RangeRef::region(Role::BnBatch)}, "bn_batch_stats_average", avg));
    }
  }
  // With fusion, AdvanceStep adds the step's metrics (Note [the step's scalars in one kernel]).
  const std::vector<RangeRef> metrics = {RangeRef::of(ids.train_metrics), RangeRef::of(ids.step_metrics)};
  if (!tc.fusion) cg.add(GraphId::ACCUM_METRICS, range(RangeOp::Accumulate, metrics, "accum_metrics"));

  // Note [skipped steps]: the check (CheckFinite, or the casts above) sets
  // scalars.pending_inf; AdvanceStep, first after it, publishes it as
  // found_inf (Note [the check's flag], train_scalars.h), and every later state
  // update of this step (loss scale, step, BN stats, optimizer, EMA) reads that
  // on the device and leaves its state untouched.
  RangeAttrs ls;
  ls.dynamic_scale = amp;
  ls.growth_interval = tc.loss_scale_growth_interval;
  ls.update_scale = tail;  // the optimizer reads AdvanceStep's grad_unscale, not the scale
  const GraphId nan = GraphId::NAN_CHECK_AND_GRAD_SCALING;
  if (!check_in_casts) cg.add(nan, range(RangeOp::CheckFinite, {RangeRef::region(grads)}, "check_finite"));
  std::vector<RangeRef> step_ops = {RangeRef::of(ids.lr_table)};
  if (tc.fusion) step_ops.insert(step_ops.end(), metrics.begin(), metrics.end());
  cg.add(nan, range(RangeOp::AdvanceStep, step_ops, "advance_step", ls));
  if (amp && !tail) cg.add(nan, range(RangeOp::UnscaleGrads, {RangeRef::region(grads)}, "unscale_grads"));
  if (!tail) cg.add(nan, range(RangeOp::UpdateLossScale, {}, "update_loss_scale", ls));

  const float ema_t = 1.f - tc.ema_decay;
  // BatchNorm's running statistics; with SGD's tail, they and their EMA move
  // inside the optimizer's kernel (Note [optimizer tail]).
  const std::vector<RangeRef> bn_stats = {RangeRef::region(Role::BnRunning), RangeRef::region(Role::BnBatch),
                                          RangeRef::region(Role::EmaBnRunning)};
  if (has_bn && !tail) {
    RangeAttrs bnm;
    bnm.t = tc.bn_momentum;
    bnm.skip_on_inf = true;
    cg.add(GraphId::UPDATE_STATS, range(RangeOp::Lerp, {bn_stats[0], bn_stats[1]}, "bn_running_update", bnm));
  }

  RangeAttrs oa;
  oa.momentum = tc.momentum;
  oa.weight_decay = tc.weight_decay;
  oa.beta1 = tc.beta1;
  oa.beta2 = tc.beta2;
  oa.adam_eps = tc.adam_eps;
  oa.trust_coef = tc.trust_coef;
  auto param_ops = [&](GroupMask gm) {
    std::vector<RangeRef> r = {RangeRef::region(Role::ParamMaster, gm), RangeRef::region(grads, gm),
                               RangeRef::region(Role::OptState1, gm)};
    if (tc.optimizer == OptimizerKind::AdamW) r.push_back(RangeRef::region(Role::OptState2, gm));
    return r;
  };
  RangeAttrs ema;
  ema.t = ema_t;
  ema.skip_on_inf = true;
  switch (tc.optimizer) {
    case OptimizerKind::Sgd:
      if (tail) {
        std::vector<RangeRef> r = param_ops(kAllGroups);
        r.push_back(RangeRef::region(Role::EmaParam));
        if (amp) r.push_back(RangeRef::region(Role::ParamCompute));
        if (has_bn) r.insert(r.end(), bn_stats.begin(), bn_stats.end());
        oa.unscale = amp;
        oa.ema_t = ema.t;
        oa.bn_stats = has_bn;
        oa.t = tc.bn_momentum;
        cg.add(GraphId::OPTIMIZER, range(RangeOp::SgdNesterov, r, "sgd_tail", oa));
      } else {
        cg.add(GraphId::OPTIMIZER, range(RangeOp::SgdNesterov, param_ops(kAllGroups), "sgd", oa));
      }
      break;
    case OptimizerKind::AdamW:
      cg.add(GraphId::OPTIMIZER, range(RangeOp::AdamW, param_ops(kAllGroups), "adamw", oa));
      break;
    case OptimizerKind::Lars:
      cg.add(GraphId::LARS_FC_OPT, range(RangeOp::Lars, param_ops(group_bit(ParamGroup::Fc)), "lars_fc", oa));
      cg.add(GraphId::LARS_FIRST_CONV_OPT,
               range(RangeOp::Lars, param_ops(group_bit(ParamGroup::First)), "lars_first", oa));
      cg.add(GraphId::LARS_DEEP_CONV_OPT,
               range(RangeOp::Lars, param_ops(group_bit(ParamGroup::Deep)), "lars_deep", oa));
      break;
  }

  if (!tail)
    cg.add(GraphId::EMA_UPDATE,
           range(RangeOp::Lerp, {RangeRef::region(Role::EmaParam), RangeRef::region(Role::ParamMaster)}, "ema_params", ema));
  if (has_bn && !tail)
    cg.add(GraphId::EMA_UPDATE, range(RangeOp::Lerp, {RangeRef::region(Role::EmaBnRunning), RangeRef::region(Role::BnRunning)},
                                        "ema_bn_running", ema));
  if (amp) {
    if (!tail)
      cg.add(GraphId::CAST_MAIN_FP32_TO_FP16,
             range(RangeOp::Cast, {RangeRef::region(Role::ParamMaster), RangeRef::region(Role::ParamCompute)}, "cast_main"));
    cg.add(GraphId::CAST_EMA_FP32_TO_FP16,
             range(RangeOp::Cast, {RangeRef::region(Role::EmaParam), RangeRef::region(Role::EmaParamCompute)}, "cast_ema"));
  }
  cg.add(GraphId::CLEAR_METRICS,
           range(RangeOp::Clear,
                 {RangeRef::of(ids.train_metrics), RangeRef::of(ids.val_main_metrics), RangeRef::of(ids.val_ema_metrics)},
                 "clear_metrics"));
}

bool sets_the_check_flag(const Node& n) {
  return n.kind == Node::Kind::Range &&
         (n.range_op == RangeOp::CheckFinite || (n.range_op == RangeOp::Cast && n.range_attrs.check_finite));
}

}  // namespace tr
