#pragma once
// The semantic sub-graphs of a training run, each captured independently
// (docs/design.md, "Vocabulary"). The split between shape-invariant ids (captured once for all
// variants) and shape-dependent ids (one capture per distinct shape) drives
// GraphAtlas dedup.
#include <cstdint>
#include <string_view>

namespace tr {

enum class GraphId : uint8_t {
  TRANSFER_A,
  TRANSFER_B,  // H2D of the next batch (A/B double buffering)
  ZERO_GRAD,   // clear gradients
  FIRST_LAYER_FWD_A,
  FIRST_LAYER_FWD_B,  // input prep + first layer forward, from buffer A or B
  DEEP_FWD_BWD,       // deep forward, loss, deep backward
  FIRST_LAYER_BWD,    // first layer backward
  CAST_DEEP_GRAD_FP16_TO_FP32,
  DEEP_COMM,  // AMP grad cast, all-reduce (deep bucket)
  CAST_FIRST_GRAD_FP16_TO_FP32,
  FIRST_COMM,
  ACCUM_METRICS,               // step metrics into epoch accumulators
  NAN_CHECK_AND_GRAD_SCALING,  // finite check, unscale, loss scale, step/lr advance
  UPDATE_STATS,                // BN running statistics
  OPTIMIZER,                   // SGD / AdamW
  LARS_FC_OPT,
  LARS_FIRST_CONV_OPT,
  LARS_DEEP_CONV_OPT,  // LARS groups, on COMP_1/2/3 in parallel
  EMA_UPDATE,
  CAST_MAIN_FP32_TO_FP16,  // AMP: master weights -> compute copies
  CLEAR_METRICS,           // the training metrics, at an epoch's start
  CLEAR_VAL_METRICS,       // the validation metrics, at each validation's start
  UPDATE_BN_INF_PARAMS,    // fold BN running stats into inference affines (main, EMA)
  CAST_EMA_FP32_TO_FP16,
  INF_MAIN_A,
  INF_MAIN_B,       // validation forward with main weights, buffer A or B
  INF_EMA,          // validation forward with EMA weights (reuses INF_MAIN's input)
  VAL_RESULT_COMM,  // all-reduce of validation metrics
  COUNT
};

constexpr int kGraphIdCount = static_cast<int>(GraphId::COUNT);

enum class StreamKind : uint8_t { TRANS, COMP_1, COMP_2, COMP_3, UPDATE, COUNT };
constexpr int kStreamKindCount = static_cast<int>(StreamKind::COUNT);

std::string_view graph_name(GraphId g);
std::string_view stream_name(StreamKind s);
bool is_shape_invariant(GraphId g);
StreamKind stream_for(GraphId g);
// Graphs whose nodes are forward/backward compute: what partial capture captures.
bool is_fwd_bwd(GraphId g);
// The graph by whose end the side streams of g's nodes have joined its stream
// at the latest: g itself, except DEEP_FWD_BWD, whose weight gradients may
// finish beside FIRST_LAYER_BWD in a step graph (Note [the deep weight
// gradients finish beside the first layer's backward], graph_runner.h).
GraphId side_streams_joined_by(GraphId g);

}  // namespace tr

namespace tr {
// Which graphs a training / validation variant holds (if the model emitted them).
bool used_in_train(GraphId g);
bool used_in_val(GraphId g);
}  // namespace tr
