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

// deep_comm_slot_hi: DEEP_COMM (and its AMP cast) cover the deep slots below it;
// the buckets above were issued during the backward (Note [gradient buckets]).
void emit_recipe_graphs(ComputationGraph& cg, const TrainConfig& t, const RecipeTensors& ids, bool has_bn,
                        int32_t deep_comm_slot_hi = INT32_MAX);

}  // namespace tr
