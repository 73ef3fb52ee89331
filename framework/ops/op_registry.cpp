#include "framework/ops/op_registry.h"

#include "framework/ops/allreduce_op.h"
#include "framework/core/error.h"
#include "framework/ops/amp_ops.h"
#include "framework/ops/batchnorm.h"
#include "framework/ops/conv3x3.h"
#include "framework/ops/fc.h"
#include "framework/ops/input_prep.h"
#include "framework/ops/optimizers.h"
#include "framework/ops/pool.h"
#include "framework/ops/region_ops.h"
#include "framework/ops/relu.h"
#include "framework/ops/softmax_xent.h"

namespace tr {
namespace {

#define TR_OP(kind, name, fn) {name, fn##_shapes, fn##_cpu, TR_CUDA_FN(fn##_cuda)}
// Indexed by OpKind: keep in enum order (checked below).
const OpDef kOps[] = {
    TR_OP(InputPrep, "input_prep", input_prep),
    TR_OP(Conv3x3Fwd, "conv3x3_fwd", conv3x3_fwd),
    TR_OP(Conv3x3BwdData, "conv3x3_bwd_data", conv3x3_bwd_data),
    TR_OP(Conv3x3BwdFilter, "conv3x3_bwd_filter", conv3x3_bwd_filter),
    TR_OP(BnStats, "bn_stats", bn_stats),
    TR_OP(BnReluApply, "bn_relu_apply", bn_relu_apply),
    TR_OP(BnReluBwdReduce, "bn_relu_bwd_reduce", bn_relu_bwd_reduce),
    TR_OP(BnReluBwdApply, "bn_relu_bwd_apply", bn_relu_bwd_apply),
    TR_OP(BnReluInfer, "bn_relu_infer", bn_relu_infer),
    TR_OP(BnFold, "bn_fold", bn_fold),
    TR_OP(MaxPool2Fwd, "maxpool2_fwd", maxpool2_fwd),
    TR_OP(MaxPool2Bwd, "maxpool2_bwd", maxpool2_bwd),
    TR_OP(GlobalMaxPoolFwd, "global_maxpool_fwd", global_maxpool_fwd),
    TR_OP(GlobalMaxPoolBwd, "global_maxpool_bwd", global_maxpool_bwd),
    TR_OP(FcFwd, "fc_fwd", fc_fwd),
    TR_OP(FcBwdData, "fc_bwd_data", fc_bwd_data),
    TR_OP(FcBwdWeight, "fc_bwd_weight", fc_bwd_weight),
    TR_OP(ReluFwd, "relu_fwd", relu_fwd),
    TR_OP(ReluBwd, "relu_bwd", relu_bwd),
    TR_OP(SoftmaxXent, "softmax_xent", softmax_xent),
};
#undef TR_OP
static_assert(sizeof(kOps) / sizeof(kOps[0]) == static_cast<size_t>(OpKind::Count), "one OpDef per OpKind");

#define TR_RANGE(name, fn) {name, fn##_cpu, TR_CUDA_FN(fn##_cuda)}
// Indexed by RangeOp.
const RangeDef kRanges[] = {
    TR_RANGE("copy_in", copy_in),
    TR_RANGE("clear", clear),
    TR_RANGE("cast", cast),
    TR_RANGE("check_finite", check_finite),
    TR_RANGE("unscale_grads", unscale_grads),
    TR_RANGE("update_loss_scale", update_loss_scale),
    TR_RANGE("advance_step", advance_step),
    TR_RANGE("lerp", lerp),
    TR_RANGE("accumulate", accumulate),
    {"allreduce_sum", allreduce_sum_op, allreduce_sum_op},
    TR_RANGE("sgd_nesterov", sgd_nesterov),
    TR_RANGE("adamw", adamw),
    TR_RANGE("lars", lars),
};
#undef TR_RANGE
static_assert(sizeof(kRanges) / sizeof(kRanges[0]) == static_cast<size_t>(RangeOp::Count), "one RangeDef per RangeOp");

}  // namespace

const OpDef& op_def(OpKind k) {
  TR_CHECK(k < OpKind::Count, "bad OpKind");
  return kOps[static_cast<size_t>(k)];
}

const RangeDef& range_def(RangeOp k) {
  TR_CHECK(k < RangeOp::Count, "bad RangeOp");
  return kRanges[static_cast<size_t>(k)];
}

std::string_view op_name(OpKind k) { return op_def(k).name; }
std::string_view range_op_name(RangeOp k) { return range_def(k).name; }

}  // namespace tr
