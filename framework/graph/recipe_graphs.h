#pragma once
// The training recipe's graphs, the same for every model: input transfers,
// gradient clearing, AMP casts, gradient all-reduces, metric accumulation, the
// NaN check with loss scaling, BN running statistics, the optimizer (SGD, AdamW
// or LARS in three groups), EMA. They act on whole regions of the arena (RANGE
// nodes), so they do not depend on the layers.
#include <array>
#include <climits>

#include "framework/graph/computation_graph.h"
#include "framework/graph/model_config.h"

namespace tr {

// The model's persistent tensors the recipe graphs name.
struct RecipeTensors {
  std::array<TensorId, 2> images, labels_src;  // input buffers A and B
  TensorId lr_table, step_metrics, train_metrics, val_main_metrics, val_ema_metrics;
  TensorId grad_norm_partials = kNoTensor;  // GradNorm's scratch, with TrainConfig::max_grad_norm > 0
};

// Note [optimizer tail]
// After the optimizer, a step walks the parameters twice more: the EMA
// (ema += t*(p - ema)) and, with AMP, the f16 compute copy (Cast). Before it,
// AMP unscales the gradients in place (UnscaleGrads). With fusion on
// (TrainConfig::fusion) and SGD, the SgdNesterov node does all three on the
// values it already holds: it unscales g as it loads it, then updates the EMA
// and writes the compute copy from the updated p. The separate EMA-of-params,
// UnscaleGrads and per-step CAST_MAIN nodes go, and UpdateLossScale rides in
// AdvanceStep (attrs.update_scale), which first records this step's 1/scale
// for the optimizer (TrainScalars::grad_unscale). Bits: each fused value is
// computed with the rounding of the op it replaces (range_util.h), so the state
// is the same as unfused (Fusion.ChangesNoBitOfATrainingRunInF32, the AMP
// variant and FusionGpu). The compute copies start as host casts of the masters
// (param_init.cpp), since no CAST_MAIN graph is left to make them.
// resnet18 at batch 128 on the H200: 11.2M parameters, about 180 MB a step
// less traffic and three kernels fewer. AdamW does the same in a model without
// BatchNorm (a GPT): its node takes the EMA and compute copy and unscales as it
// loads g, and GradNorm, which runs before it on the still-scaled gradients,
// multiplies each by grad_unscale in f32 as UnscaleGrads would (attrs.unscale),
// so the norm, the clip and the update keep their bits (GptTraining.
// TheOptimizerTailChangesNoBit). GPT-2 at batch 1 on the H100: 124M parameters,
// an UnscaleGrads, a Lerp and a Cast fewer, about 2.5 GB a step less traffic.
// The BatchNorm running statistics and their EMA likewise move in the same
// kernel (SgdNesterov with attrs.bn_stats: the two Lerps' arithmetic, on
// blocks of their own) instead of a Lerp in UPDATE_STATS and a second one
// in EMA_UPDATE: they read only the statistics and the step's found_inf,
// which nothing between the three changes, so no bit changes, and
// UPDATE_STATS and EMA_UPDATE are left empty (two kernels fewer at the end of
// every step of a model with BatchNorm).
//
// Note [the check in the casts]
// With AMP on one rank (no collectives) and fusion on, the two casts of the
// f16 gradients into their f32 masters (CAST_DEEP, CAST_FIRST) do the NaN/Inf
// check as they go (Cast with attrs.check_finite), and no CheckFinite node
// walks the masters again. Together the casts read every f16 gradient, and a
// master is its f16 value exactly, so they find what CheckFinite would. With
// collectives the check stays after the all-reduces: a NaN on one rank must
// make every rank skip the step. One kernel fewer at the end of every step.
//
// Note [16-bit gradients in the optimizer]
// With AMP, fusion on, an optimizer tail (SgdNesterov, or AdamW without
// BatchNorm) and one rank, nothing needs the f32 gradient masters: the casts
// existed for the all-reduce, which sums in f32, and for the unfused ops. So
// there are none: CheckFinite, GradNorm and the optimizer read the f16 or bf16
// gradients in place and widen each exactly as it loads it. The values are the
// masters' to the bit, and GradNorm adds them in the order of the f32 regions
// (the regions share one layout, Note [parallel regions]), so the state is the
// same bits as through the casts (GptTraining.TheOptimizerTailChangesNoBit,
// FusionGpu). GPT-2 on one H100 in bf16: 124M gradients, about 0.75 GB a step
// less traffic (the cast wrote 4 bytes and read 2; the norm and the optimizer
// read 2 where they read 4) and a kernel fewer; the check reads 2 bytes a
// gradient again. The masters are not made either (LayerEmitter::
// set_grad_masters, from the layer list): 0.5 GB less device memory. With
// collectives the casts and the masters stay.
//
// Note [the norm is the check]
// With clipping (TrainConfig::max_grad_norm > 0), GradNorm reads every
// gradient the NaN/Inf check would, and its sum of squares is not finite
// exactly when some gradient is not (grad_norm.h). So where the casts do not
// check, GradNorm with attrs.check_finite runs first in
// NAN_CHECK_AND_GRAD_SCALING and is the check: no CheckFinite node. Before
// AdvanceStep it unscales by the factor AdvanceStep then records, so the norm,
// the clip and the update keep their bits (GptTraining.
// TheOptimizerTailChangesNoBit; a NaN step is still skipped: GptTraining.
// TheClippedStepsNormSkipsANanStep). GPT-2 in bf16: one pass over the 124M
// 16-bit gradients a step fewer.
//
// Note [the step's scalars in one kernel]
// With fusion on, AdvanceStep is the step's one single-thread kernel. Besides
// publishing the check and moving the step and the learning rate, it adds the
// step's metrics into the epoch's (Accumulate's rounding; ACCUM_METRICS is
// left empty) and, with SGD's tail, updates the loss scale. Each of those was
// a kernel of its own that did a few additions, and each cost a launch and a
// wait on its predecessor at the end of the step (1-5 us in the cnn's kernel
// trace at batch 256). Nothing else reads the epoch's metrics or the scale
// in between, so the bits stay those of the separate nodes.
//
// deep_comm_slot_hi: DEEP_COMM (and its AMP cast) cover the deep slots below it;
// the buckets above were issued during the backward (Note [gradient buckets]).
void emit_recipe_graphs(ComputationGraph& cg, const TrainConfig& t, const RecipeTensors& ids, bool has_bn,
                        int32_t deep_comm_slot_hi = INT32_MAX);

// Whether the step's CheckFinite, GradNorm and optimizer read the 16-bit
// gradients themselves (Note [16-bit gradients in the optimizer]).
bool optimizer_reads_half_grads(const TrainConfig& t, bool has_bn);

// Whether a node may set scalars.pending_inf (CheckFinite, or a Cast or
// GradNorm with the check): a graph holding one must not run outside a step (the warm-up before
// capture), since only the step's AdvanceStep clears the flag (Note [the
// check's flag]).
bool sets_the_check_flag(const Node& n);

}  // namespace tr
