#include "framework/ops/op_registry.h"

#include "framework/core/error.h"
#include "framework/ops/compute/add.h"
#include "framework/ops/compute/attention.h"
#include "framework/ops/compute/avgpool.h"
#include "framework/ops/compute/batchnorm.h"
#include "framework/ops/compute/bn_relu_pool.h"
#include "framework/ops/compute/classifier_head.h"
#include "framework/ops/compute/conv.h"
#include "framework/ops/compute/embedding.h"
#include "framework/ops/compute/fc.h"
#include "framework/ops/compute/fc_gelu.h"
#include "framework/ops/compute/fc_residual.h"
#include "framework/ops/compute/gelu.h"
#include "framework/ops/compute/input_prep.h"
#include "framework/ops/compute/layernorm.h"
#include "framework/ops/compute/pool.h"
#include "framework/ops/compute/relu.h"
#include "framework/ops/compute/softmax_xent.h"
#include "framework/ops/compute/token_prep.h"
#include "framework/ops/compute/tta_mean.h"
#include "framework/ops/range/allreduce_op.h"
#include "framework/ops/range/amp_ops.h"
#include "framework/ops/range/grad_norm.h"
#include "framework/ops/range/optimizers.h"
#include "framework/ops/range/region_ops.h"

namespace tr {
namespace {

#define TR_OP(kind, name, fn, inputs, outputs) \
  { OpKind::kind, name, inputs, outputs, fn##_shapes, fn##_cpu, TR_CUDA_FN(fn##_cuda) }
// Indexed by OpKind: each entry names its kind, and the table is checked to be
// in enum order, so a reordered or missing line fails the build. The two
// strings are the kind's inputs and outputs by name (Note [operands by name]).
constexpr OpDef kOps[] = {
    TR_OP(InputPrep, "input_prep", input_prep, "images labels_src", "x labels"),
    TR_OP(ConvFwd, "conv_fwd", conv_fwd, "x w", "y"),
    TR_OP(ConvBwdData, "conv_bwd_data", conv_bwd_data, "dy w x", "dx"),
    TR_OP(ConvBwdFilter, "conv_bwd_filter", conv_bwd_filter, "x dy", "dw"),
    TR_OP(BnStats, "bn_stats", bn_stats, "x", "sums"),
    TR_OP(BnReluApply, "bn_relu_apply", bn_relu_apply, "x sums gamma beta", "y batch affine"),
    TR_OP(BnStatsReluApply, "bn_stats_relu_apply", bn_stats_relu_apply, "x gamma beta", "y batch affine sums"),
    TR_OP(BnAddReluApply, "bn_add_relu_apply", bn_add_relu_apply, "x sums gamma beta residual", "y batch affine"),
    TR_OP(BnReluBwdReduce, "bn_relu_bwd_reduce", bn_relu_bwd_reduce, "dy affine x batch", "dgamma dbeta dsums"),
    TR_OP(ReluBwdBnReduce, "relu_bwd_bn_reduce", relu_bwd_bn_reduce, "a affine x batch y", "dgamma dbeta dsums g"),
    TR_OP(ReluBwdAddBnReduce, "relu_bwd_add_bn_reduce", relu_bwd_add_bn_reduce, "a affine x batch y b",
          "dgamma dbeta dsums g"),
    TR_OP(BnReluBwdApply, "bn_relu_bwd_apply", bn_relu_bwd_apply, "dy affine x batch gamma dsums", "dx"),
    TR_OP(BnReluBwdReduceApply, "bn_relu_bwd_reduce_apply", bn_relu_bwd_reduce_apply, "dy affine x batch gamma",
          "dx dgamma dbeta dsums"),
    TR_OP(BnReluInfer, "bn_relu_infer", bn_relu_infer, "x affine", "y"),
    TR_OP(BnFold, "bn_fold", bn_fold, "gamma beta running", "affine"),
    TR_OP(MaxPoolFwd, "maxpool_fwd", maxpool_fwd, "x", "y"),
    TR_OP(MaxPoolArgmaxFwd, "maxpool_argmax_fwd", maxpool_argmax_fwd, "x", "y argmax"),
    TR_OP(MaxPoolStatsFwd, "maxpool_stats_fwd", maxpool_stats_fwd, "x", "y argmax sums"),
    TR_OP(PoolBnReluApply, "pool_bn_relu_apply", pool_bn_relu_apply, "x gamma beta", "p argmax sums y batch affine"),
    TR_OP(MaxPoolBwd, "maxpool_bwd", maxpool_bwd, "dy x y", "dx"),
    TR_OP(MaxPoolArgmaxBwd, "maxpool_argmax_bwd", maxpool_argmax_bwd, "dy x argmax", "dx"),
    TR_OP(AvgPoolFwd, "avgpool_fwd", avgpool_fwd, "x", "y"),
    TR_OP(AvgPoolBwd, "avgpool_bwd", avgpool_bwd, "dy x", "dx"),
    TR_OP(GlobalMaxPoolFwd, "global_maxpool_fwd", global_maxpool_fwd, "x", "y"),
    TR_OP(GlobalMaxPoolBwd, "global_maxpool_bwd", global_maxpool_bwd, "dy x y", "dx"),
    TR_OP(GlobalAvgPoolFwd, "global_avgpool_fwd", global_avgpool_fwd, "x", "y"),
    TR_OP(GlobalAvgPoolBwd, "global_avgpool_bwd", global_avgpool_bwd, "dy x", "dx"),
    TR_OP(Add, "add", add, "a b", "y"),
    TR_OP(FcFwd, "fc_fwd", fc_fwd, "x w b?has_bias", "y"),
    TR_OP(FcBwdData, "fc_bwd_data", fc_bwd_data, "dy w x", "dx"),
    TR_OP(FcBwdWeight, "fc_bwd_weight", fc_bwd_weight, "x dy", "dw db?has_bias"),
    TR_OP(ReluFwd, "relu_fwd", relu_fwd, "x", "y"),
    TR_OP(ReluBwd, "relu_bwd", relu_bwd, "dy y", "dx"),
    TR_OP(ReluBwdAdd, "relu_bwd_add", relu_bwd_add, "dy y dy2", "dx"),
    TR_OP(SoftmaxXent, "softmax_xent", softmax_xent, "logits labels", "dlogits?with_grad metrics"),
    TR_OP(TtaMean, "tta_mean", tta_mean, "x", "y"),
    TR_OP(BnReluPool, "bn_relu_pool", bn_relu_pool, "x sums gamma beta", "p argmax batch affine"),
    TR_OP(ClassifierHead, "classifier_head", classifier_head, "x w labels", "p dlogits metrics dx"),
    TR_OP(BnReluClassifierHead, "bn_relu_classifier_head", bn_relu_classifier_head, "x w labels sums gamma beta",
          "p dlogits metrics dx batch affine"),
    TR_OP(GeluFwd, "gelu_fwd", gelu_fwd, "x", "y"),
    TR_OP(GeluBwd, "gelu_bwd", gelu_bwd, "dy x", "dx"),
    TR_OP(LayerNormFwd, "layernorm_fwd", layernorm_fwd, "x gamma beta", "y stats"),
    TR_OP(LayerNormBwd, "layernorm_bwd", layernorm_bwd, "dy x gamma stats", "dx dgamma dbeta"),
    TR_OP(EmbeddingFwd, "embedding_fwd", embedding_fwd, "ids wte wpe", "y"),
    TR_OP(EmbeddingBwd, "embedding_bwd", embedding_bwd, "dy ids order wte wpe", "dwte dwpe"),
    TR_OP(AttentionFwd, "attention_fwd", attention_fwd, "qkv", "y lse"),
    TR_OP(AttentionBwd, "attention_bwd", attention_bwd, "dy qkv y lse", "dqkv delta"),
    TR_OP(TokenPrep, "token_prep", token_prep, "tokens", "ids labels order"),
    TR_OP(FcGeluFwd, "fc_gelu_fwd", fc_gelu_fwd, "x w b?has_bias", "pre y"),
    TR_OP(FcBwdDataGelu, "fc_bwd_data_gelu", fc_bwd_data_gelu, "dy w pre", "dx"),
    TR_OP(FcResidualFwd, "fc_residual_fwd", fc_residual_fwd, "x w r b?has_bias", "y"),
    TR_OP(LayerNormBwdAdd, "layernorm_bwd_add", layernorm_bwd_add, "dy x gamma stats r", "dx dgamma dbeta"),
};
#undef TR_OP

#define TR_RANGE(kind, name, fn) \
  { RangeOp::kind, name, fn##_cpu, TR_CUDA_FN(fn##_cuda) }
constexpr RangeDef kRanges[] = {
    TR_RANGE(CopyIn, "copy_in", copy_in),
    TR_RANGE(Clear, "clear", clear),
    TR_RANGE(Cast, "cast", cast),
    TR_RANGE(CheckFinite, "check_finite", check_finite),
    TR_RANGE(UnscaleGrads, "unscale_grads", unscale_grads),
    TR_RANGE(GradNorm, "grad_norm", grad_norm),
    TR_RANGE(UpdateLossScale, "update_loss_scale", update_loss_scale),
    TR_RANGE(AdvanceStep, "advance_step", advance_step),
    TR_RANGE(Lerp, "lerp", lerp),
    TR_RANGE(Accumulate, "accumulate", accumulate),
    {RangeOp::AllReduceSum, "allreduce_sum", allreduce_sum_op,
     allreduce_sum_op},  // one function: the communicator picks
    TR_RANGE(SgdNesterov, "sgd_nesterov", sgd_nesterov),
    TR_RANGE(AdamW, "adamw", adamw),
    TR_RANGE(Lars, "lars", lars),
};
#undef TR_RANGE

template <typename Def, size_t N, typename Kind>
constexpr bool in_enum_order(const Def (&table)[N], Kind count) {
  if (N != static_cast<size_t>(count)) return false;
  for (size_t i = 0; i < N; ++i)
    if (static_cast<size_t>(table[i].kind) != i) return false;
  return true;
}
static_assert(in_enum_order(kOps, OpKind::Count), "kOps: one entry per OpKind, in enum order");
static_assert(in_enum_order(kRanges, RangeOp::Count), "kRanges: one entry per RangeOp, in enum order");

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
