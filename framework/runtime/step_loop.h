#pragma once
// The step loop (docs/design.md, "The step loop and the step graph"): the only place where host decisions meet graph
// launches. Each function launches a fixed sequence of graphs; cross-stream order
// is expressed with stream_wait (events, no host blocking), so the host runs
// ahead of the GPU until it needs a staging buffer back.
//
// Note [A/B double buffering]: batch i computes from input buffer `cur` while
// batch i+1 is copied into the other one. Before calling a step with
// transfer_next, the caller fills staging[1 - cur] (after wait_transfer_done).
#include "framework/graph/computation_graph.h"
#include "framework/runtime/graph_runner.h"

namespace tr {

// Note [gradients are overwritten]: the backward writes every element of every
// gradient (f16 and, under AMP, the f32 masters the casts fill) in every step;
// no op accumulates into one. So the gradient region is cleared once an
// epoch, not once a step: what the clear still keeps at zero is the alignment
// padding between gradients, which the casts, the all-reduces and the NaN check
// walk as part of the region and nothing writes. A per-step clear was the first
// kernel of every step graph, and the step graph's first kernels are followed
// by the graph's own start-up time (about 10 us on the H200 at any batch), so
// it cost the step more than its 1.4 us. GradientsOverwritten.* (CPU and GPU)
// poison every gradient between steps and check that no bit of training changes.
//
// Start of an epoch: clear the gradient region and the metric accumulators.
void epoch_begin(GraphRunner& r, Variant v);
// Copies staging[slot] into input buffer `slot` (the first batch of a loop).
void transfer(GraphRunner& r, Variant v, int slot);
// Called between the backward graphs and the gradient checks (tests inject
// faults here); null in normal runs.
using AfterBackwardHook = void (*)(DeviceContext& ctx, void* user);
struct StepHook {
  AfterBackwardHook after_backward = nullptr;
  void* user = nullptr;
  // Stamps the TimeMark slots around DEEP_COMM and FIRST_COMM on UPDATE: the
  // gradient all-reduce inside the step (DeviceContext::mark_time).
  bool time_grad_allreduce = false;
};

// The DeviceContext time slots train_step stamps when StepHook::time_grad_allreduce
// is set; the benchmark driver reads them after synchronising.
enum TimeMark : int { kDeepCommBegin = 0, kDeepCommEnd = 1, kFirstCommBegin = 2, kFirstCommEnd = 3 };
static_assert(kFirstCommEnd < DeviceContext::kTimeSlots, "every TimeMark needs a slot");

// Note [one collective at a time]: the NCCL collectives of a communicator must
// run one after another, in the same order on every rank; two of them running
// at once on one GPU can wait on each other's peers forever. Within a captured
// graph NCCL orders its own kernels, but nothing orders two graphs that run
// side by side. In a step the only such pair is DEEP_COMM on UPDATE and
// FIRST_LAYER_BWD on COMP_1, when the first layer's synchronised BatchNorm
// all-reduces its backward sums. Then FIRST_LAYER_BWD waits for DEEP_COMM, which
// gives up overlapping the deep all-reduce with the first layer's backward
// (first_layer_bwd_waits_for_deep_comm, graph_runner.h).

// One training step on buffer `cur`; optionally launches the transfer of the next batch.
void train_step(GraphRunner& r, Variant v, int cur, bool transfer_next, const StepHook* hook = nullptr);
// Before validation: the validation metrics cleared, BN inference affines, AMP
// cast of the EMA weights.
void val_begin(GraphRunner& r, Variant v);
// One validation batch (main and EMA weights) on buffer `cur`.
void val_step(GraphRunner& r, Variant v, int cur, bool transfer_next);
// After validation: all-reduce of the validation metrics.
void val_end(GraphRunner& r, Variant v);

}  // namespace tr
