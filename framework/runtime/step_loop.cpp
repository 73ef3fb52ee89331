#include "framework/runtime/step_loop.h"

#include "framework/runtime/nvtx.h"

namespace tr {
namespace {

GraphId first_fwd(int cur) { return cur == 0 ? GraphId::FIRST_LAYER_FWD_A : GraphId::FIRST_LAYER_FWD_B; }
GraphId transfer_id(int slot) { return slot == 0 ? GraphId::TRANSFER_A : GraphId::TRANSFER_B; }
GraphId inf_main(int cur) { return cur == 0 ? GraphId::INF_MAIN_A : GraphId::INF_MAIN_B; }

using S = StreamKind;

void launch_transfer(GraphRunner& r, Variant v, int slot) {
  r.launch(transfer_id(slot), v);
  r.ctx().record_transfer_done(slot);
}

}  // namespace

void epoch_begin(GraphRunner& r, Variant v) {
  r.launch(GraphId::ZERO_GRAD, v);  // Note [gradients are overwritten]
  r.launch(GraphId::CLEAR_METRICS, v);
}

void transfer(GraphRunner& r, Variant v, int slot) {
  // The buffer may still be read by an earlier first-layer graph on COMP_1.
  r.ctx().stream_wait(S::TRANS, S::COMP_1);
  launch_transfer(r, v, slot);
}

void train_step(GraphRunner& r, Variant v, int cur, bool transfer_next, const StepHook* hook) {
  nvtx::Range range(nvtx::Phase::TrainStep);
  DeviceContext& c = r.ctx();
  c.stream_wait(S::COMP_1, S::UPDATE);  // weights updated (the last step's optimizer)
  c.stream_wait(S::COMP_1, S::TRANS);   // this batch has arrived
  r.launch(first_fwd(cur), v);          // COMP_1
  if (transfer_next) {                  // next batch's H2D overlaps the deep compute
    c.stream_wait(S::TRANS, S::COMP_1);
    launch_transfer(r, v, 1 - cur);
  }
  r.launch(GraphId::DEEP_FWD_BWD, v);  // COMP_1
  c.stream_wait(S::UPDATE, S::COMP_1);
  r.join_open_side_stream(S::UPDATE);  // the deep weight gradients, if still running
  const bool timed = hook && hook->time_grad_allreduce;
  r.launch(GraphId::CAST_DEEP_GRAD_FP16_TO_FP32, v);  // UPDATE: deep bucket cast + all-reduce
  if (timed) c.mark_time(S::UPDATE, kDeepCommBegin);
  r.launch(GraphId::DEEP_COMM, v);  //   overlap the first layer's backward, unless
                                    //   Note [one collective at a time]
  if (timed) c.mark_time(S::UPDATE, kDeepCommEnd);
  if (r.first_bwd_waits_for_deep_comm()) c.stream_wait(S::COMP_1, S::UPDATE);
  r.launch(GraphId::FIRST_LAYER_BWD, v);  // COMP_1
  c.stream_wait(S::UPDATE, S::COMP_1);
  if (hook && hook->after_backward) hook->after_backward(c, hook->user);
  r.launch(GraphId::CAST_FIRST_GRAD_FP16_TO_FP32, v);
  if (timed) c.mark_time(S::UPDATE, kFirstCommBegin);
  r.launch(GraphId::FIRST_COMM, v);
  if (timed) c.mark_time(S::UPDATE, kFirstCommEnd);
  r.launch(GraphId::ACCUM_METRICS, v);
  r.launch(GraphId::NAN_CHECK_AND_GRAD_SCALING, v);
  r.launch(GraphId::UPDATE_STATS, v);
  r.launch(GraphId::OPTIMIZER, v);
  if (r.has(GraphId::LARS_FC_OPT, v)) {  // LARS groups in parallel on COMP_1/2/3
    for (S s : {S::COMP_1, S::COMP_2, S::COMP_3}) c.stream_wait(s, S::UPDATE);
    r.launch(GraphId::LARS_FC_OPT, v);
    r.launch(GraphId::LARS_FIRST_CONV_OPT, v);
    r.launch(GraphId::LARS_DEEP_CONV_OPT, v);
    for (S s : {S::COMP_1, S::COMP_2, S::COMP_3}) c.stream_wait(S::UPDATE, s);
  }
  r.launch(GraphId::EMA_UPDATE, v);
  r.launch(GraphId::CAST_MAIN_FP32_TO_FP16, v);
}

void val_begin(GraphRunner& r, Variant v) {
  r.ctx().stream_wait(S::UPDATE, S::COMP_1);
  r.launch(GraphId::CLEAR_VAL_METRICS, v);  // each validation sums from zero (Trainer's val_every)
  r.launch(GraphId::UPDATE_BN_INF_PARAMS, v);
  r.launch(GraphId::CAST_EMA_FP32_TO_FP16, v);
  r.ctx().stream_wait(S::COMP_1, S::UPDATE);
}

void val_step(GraphRunner& r, Variant v, int cur, bool transfer_next) {
  nvtx::Range range(nvtx::Phase::ValStep);
  DeviceContext& c = r.ctx();
  c.stream_wait(S::COMP_1, S::TRANS);
  r.launch(inf_main(cur), v);
  if (transfer_next) {
    c.stream_wait(S::TRANS, S::COMP_1);
    launch_transfer(r, v, 1 - cur);
  }
  r.launch(GraphId::INF_EMA, v);
}

void val_end(GraphRunner& r, Variant v) {
  r.ctx().stream_wait(S::UPDATE, S::COMP_1);
  r.launch(GraphId::VAL_RESULT_COMM, v);
}

}  // namespace tr
