#include "framework/graph/graph_id.h"

namespace tr {

std::string_view graph_name(GraphId g) {
  switch (g) {
    case GraphId::TRANSFER_A: return "TRANSFER_A";
    case GraphId::TRANSFER_B: return "TRANSFER_B";
    case GraphId::ZERO_GRAD: return "ZERO_GRAD";
    case GraphId::FIRST_LAYER_FWD_A: return "FIRST_LAYER_FWD_A";
    case GraphId::FIRST_LAYER_FWD_B: return "FIRST_LAYER_FWD_B";
    case GraphId::DEEP_FWD_BWD: return "DEEP_FWD_BWD";
    case GraphId::FIRST_LAYER_BWD: return "FIRST_LAYER_BWD";
    case GraphId::CAST_DEEP_GRAD_FP16_TO_FP32: return "CAST_DEEP_GRAD_FP16_TO_FP32";
    case GraphId::DEEP_COMM: return "DEEP_COMM";
    case GraphId::CAST_FIRST_GRAD_FP16_TO_FP32: return "CAST_FIRST_GRAD_FP16_TO_FP32";
    case GraphId::FIRST_COMM: return "FIRST_COMM";
    case GraphId::ACCUM_METRICS: return "ACCUM_METRICS";
    case GraphId::NAN_CHECK_AND_GRAD_SCALING: return "NAN_CHECK_AND_GRAD_SCALING";
    case GraphId::UPDATE_STATS: return "UPDATE_STATS";
    case GraphId::OPTIMIZER: return "OPTIMIZER";
    case GraphId::LARS_FC_OPT: return "LARS_FC_OPT";
    case GraphId::LARS_FIRST_CONV_OPT: return "LARS_FIRST_CONV_OPT";
    case GraphId::LARS_DEEP_CONV_OPT: return "LARS_DEEP_CONV_OPT";
    case GraphId::EMA_UPDATE: return "EMA_UPDATE";
    case GraphId::CAST_MAIN_FP32_TO_FP16: return "CAST_MAIN_FP32_TO_FP16";
    case GraphId::CLEAR_METRICS: return "CLEAR_METRICS";
    case GraphId::CLEAR_VAL_METRICS: return "CLEAR_VAL_METRICS";
    case GraphId::UPDATE_BN_INF_PARAMS: return "UPDATE_BN_INF_PARAMS";
    case GraphId::CAST_EMA_FP32_TO_FP16: return "CAST_EMA_FP32_TO_FP16";
    case GraphId::INF_MAIN_A: return "INF_MAIN_A";
    case GraphId::INF_MAIN_B: return "INF_MAIN_B";
    case GraphId::INF_EMA: return "INF_EMA";
    case GraphId::VAL_RESULT_COMM: return "VAL_RESULT_COMM";
    case GraphId::COUNT: break;
  }
  return "?";
}

std::string_view stream_name(StreamKind s) {
  switch (s) {
    case StreamKind::TRANS: return "TRANS";
    case StreamKind::COMP_1: return "COMP_1";
    case StreamKind::COMP_2: return "COMP_2";
    case StreamKind::COMP_3: return "COMP_3";
    case StreamKind::UPDATE: return "UPDATE";
    case StreamKind::COUNT: break;
  }
  return "?";
}

bool is_shape_invariant(GraphId g) {
  switch (g) {
    case GraphId::FIRST_LAYER_FWD_A:
    case GraphId::FIRST_LAYER_FWD_B:
    case GraphId::DEEP_FWD_BWD:
    case GraphId::FIRST_LAYER_BWD:
    case GraphId::INF_MAIN_A:
    case GraphId::INF_MAIN_B:
    case GraphId::INF_EMA: return false;
    default: return true;
  }
}

bool is_fwd_bwd(GraphId g) { return !is_shape_invariant(g); }

GraphId side_streams_joined_by(GraphId g) { return g == GraphId::DEEP_FWD_BWD ? GraphId::FIRST_LAYER_BWD : g; }

StreamKind stream_for(GraphId g) {
  switch (g) {
    case GraphId::TRANSFER_A:
    case GraphId::TRANSFER_B: return StreamKind::TRANS;
    case GraphId::FIRST_LAYER_FWD_A:
    case GraphId::FIRST_LAYER_FWD_B:
    case GraphId::DEEP_FWD_BWD:
    case GraphId::FIRST_LAYER_BWD:
    case GraphId::LARS_FC_OPT:
    case GraphId::INF_MAIN_A:
    case GraphId::INF_MAIN_B:
    case GraphId::INF_EMA: return StreamKind::COMP_1;
    case GraphId::LARS_FIRST_CONV_OPT: return StreamKind::COMP_2;
    case GraphId::LARS_DEEP_CONV_OPT: return StreamKind::COMP_3;
    default: return StreamKind::UPDATE;
  }
}

}  // namespace tr

namespace tr {

bool used_in_val(GraphId g) {
  switch (g) {
    case GraphId::TRANSFER_A:
    case GraphId::TRANSFER_B:
    case GraphId::CLEAR_METRICS:
    case GraphId::CLEAR_VAL_METRICS:
    case GraphId::UPDATE_BN_INF_PARAMS:
    case GraphId::CAST_EMA_FP32_TO_FP16:
    case GraphId::INF_MAIN_A:
    case GraphId::INF_MAIN_B:
    case GraphId::INF_EMA:
    case GraphId::VAL_RESULT_COMM: return true;
    default: return false;
  }
}

bool used_in_train(GraphId g) {
  switch (g) {
    case GraphId::CLEAR_VAL_METRICS:
    case GraphId::UPDATE_BN_INF_PARAMS:
    case GraphId::CAST_EMA_FP32_TO_FP16:
    case GraphId::INF_MAIN_A:
    case GraphId::INF_MAIN_B:
    case GraphId::INF_EMA:
    case GraphId::VAL_RESULT_COMM: return false;
    default: return true;
  }
}

}  // namespace tr
