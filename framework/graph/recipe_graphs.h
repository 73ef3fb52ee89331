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
};

// Note [optimizer tail]
// After the optimizer, a step walks the parameters twice more: the EMA
// (ema += t*(p - ema)) and, with AMP, the f16 compute copy (Cast). Before it,
// AMP unscales the gradients in place (UnscaleGrads). With fusion on
// (TrainConfig::fusion) and SGD, the SgdNesterov node does all three on the
// values it already holds: it unscales g as it loads it, then updates the EMA
// and writes the compute copy from the updated p. The separate EMA-of-params,
// UnscaleGrads and per-step CAST_MAIN nodes go; UpdateLossScale moves behind the
// optimizer, which must still read this step's scale. Bits: each fused value is
// computed with the rounding of the op it replaces (range_util.h), so the state
// is the same as unfused (Fusion.ChangesNoBitOfATrainingRunInF32, the AMP
// variant and FusionGpu). The compute copies start as host casts of the masters
// (param_init.cpp), since no CAST_MAIN graph is left to make them.
// resnet18 at batch 128 on the H200: 11.2M parameters, about 180 MB a step
// less traffic and three kernels fewer.
// The BatchNorm running statistics' EMA likewise rides on their update in
// UPDATE_STATS (Lerp with a follower, region_ops.h) instead of a second Lerp
// in EMA_UPDATE after the optimizer: it reads only the statistics and the
// step's found_inf, which nothing between the two changes, so moving it ahead
// of the optimizer changes no bit, and EMA_UPDATE is left empty (one kernel
// fewer at the end of every step of a model with BatchNorm).
//
// deep_comm_slot_hi: DEEP_COMM (and its AMP cast) cover the deep slots below it;
// the buckets above were issued during the backward (Note [gradient buckets]).
void emit_recipe_graphs(ComputationGraph& cg, const TrainConfig& t, const RecipeTensors& ids, bool has_bn,
                        int32_t deep_comm_slot_hi = INT32_MAX);

}  // namespace tr
