#include <atomic>
#include <chrono>
#include <functional>
#include <thread>

#include "framework/comm/communicator.h"
#include "framework/core/error.h"
#include "framework/core/log.h"
#include "framework/graph/recipe_graphs.h"
#include "framework/runtime/capture_guard_cuda.h"
#include "framework/runtime/cuda_context_cuda.h"
#include "framework/runtime/graph_nodes_cuda.h"
#include "framework/runtime/memset_nodes_cuda.h"
#include "framework/runtime/pre_capture.h"
#include "framework/runtime/stream_schedule.h"

namespace tr {
namespace {

// Note [warm-up leaves training state alone]: B2/B4 run graphs before training
// starts. Only graphs whose writes are all overwritten or cleared before they are
// read again may run: never the optimizer, loss-scale, BN-statistics or EMA
// updates, and never collectives (the other ranks would not take part). Nor
// a graph with a NaN/Inf check (CheckFinite, or a Cast or GradNorm with it): the
// flag it may set is cleared only by AdvanceStep (Note [the check's flag]),
// which the warm-up does not run, so the first step would be skipped.
bool warmup_safe(const UniqueGraph& u, const ComputationGraph& cg) {
  if (u.collective) return false;
  for (const Node& n : cg.nodes(u.gid))
    if (sets_the_check_flag(n)) return false;
  switch (u.gid) {
    case GraphId::NAN_CHECK_AND_GRAD_SCALING:
    case GraphId::UPDATE_STATS:
    case GraphId::OPTIMIZER:
    case GraphId::LARS_FC_OPT:
    case GraphId::LARS_FIRST_CONV_OPT:
    case GraphId::LARS_DEEP_CONV_OPT:
    case GraphId::EMA_UPDATE: return false;
    default: return true;
  }
}

std::vector<PreparedNode> prepare_graph(const UniqueGraph& u, const ComputationGraph& cg, const PlanSet& plans,
                                        DeviceContext& ctx) {
  std::vector<PreparedNode> ops;
  for (const Node& n : cg.nodes(u.gid))
    ops.push_back(prepare_node(n, cg, plans, plans.plan(u.variant), ctx, node_stream(n, u.gid)));
  return ops;
}

}  // namespace

size_t count_kernel_nodes(cudaGraph_t g) { return count_graph_nodes(g, cudaGraphNodeTypeKernel); }

CudaGraphExec::CudaGraphExec(cudaGraph_t graph, bool memset_kernels, bool programmatic_edges) : graph_(graph) {
  try {
    if (memset_kernels) replace_memset_nodes(graph_, programmatic_edges);
    kernels_ = count_kernel_nodes(graph_);
  } catch (...) {
    TR_GPU_WARN(cudaGraphDestroy(graph_));
    throw;
  }
  // Kernels run with the priority of the stream they were captured from
  // (Note [stream priorities], cuda_context_cuda.cpp).
  const cudaError_t st = cudaGraphInstantiate(&exec_, graph_, cudaGraphInstantiateFlagUseNodePriority);
  if (st != cudaSuccess) {
    TR_GPU_WARN(cudaGraphDestroy(graph_));
    TR_GPU_CHECK(st);
  }
}

CudaGraphExec::~CudaGraphExec() {
  if (exec_) TR_GPU_WARN(cudaGraphExecDestroy(exec_));
  if (graph_) TR_GPU_WARN(cudaGraphDestroy(graph_));
}

void CudaGraphExec::launch(DeviceContext& ctx, StreamKind stream) const {
  auto& c = static_cast<CudaContext&>(ctx);
  TR_GPU_CHECK(cudaGraphLaunch(exec_, c.stream(stream)));
}

void CudaGraphExec::splice(DeviceContext& ctx, StreamKind stream) const {
  cudaStream_t s = static_cast<CudaContext&>(ctx).stream(stream);
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  cudaGraph_t into = nullptr;
  const cudaGraphNode_t* deps = nullptr;
  size_t n = 0;
  TR_GPU_CHECK(cudaStreamGetCaptureInfo(s, &status, nullptr, &into, &deps, nullptr, &n));
  TR_CHECK(status == cudaStreamCaptureStatusActive, "splice: stream ", stream_name(stream), " is not capturing");
  // The child node follows what the stream captured so far; the stream's next
  // node follows the child.
  cudaGraphNode_t node = nullptr;
  TR_GPU_CHECK(cudaGraphAddChildGraphNode(&node, into, deps, n, graph_));
  TR_GPU_CHECK(cudaStreamUpdateCaptureDependencies(s, &node, nullptr, 1, cudaStreamSetCaptureDependencies));
}

std::unique_ptr<CudaGraphExec> capture_nodes(const std::vector<PreparedNode>& nodes, CudaContext& ctx, GraphId gid,
                                             bool inject_failure) {
  cudaGraph_t graph = nullptr;
  {
    CaptureGuard guard(ctx.stream(stream_for(gid)));
    StreamSchedule sched(ctx, stream_for(gid));  // forks and joins side streams inside the capture
    for (const PreparedNode& p : nodes) {
      sched.before(p, p.stream());
      p.run();
      sched.after(p, p.stream());
      if (inject_failure) throw Error("injected capture failure");
    }
    sched.join();
    graph = guard.end();
  }
  return std::make_unique<CudaGraphExec>(graph, ctx.memset_kernels(), ctx.programmatic_launch());
}

namespace {

// B2: warm-up. cuDNN plans were chosen in prepare_workspace; one eager run of
// every safe graph loads modules and settles cuBLAS before any capture.
void warm_up_eagerly(const PreCaptureResult& r, const ComputationGraph& cg, const PlanSet& plans,
                     const std::vector<DeviceContext*>& ranks) {
  for (DeviceContext* d : ranks) {
    auto& ctx = static_cast<CudaContext&>(*d);
    ctx.make_current();
    for (const UniqueGraph& u : r.dedup.graphs) {
      if (!warmup_safe(u, cg)) continue;
      StreamSchedule sched(ctx, stream_for(u.gid));
      for (const PreparedNode& p : prepare_graph(u, cg, plans, ctx)) {
        sched.before(p, p.stream());
        p.run();
        sched.after(p, p.stream());
      }
      sched.join();
    }
    ctx.synchronize();
  }
}

// One rank's captures of the graphs with (or without) collectives.
void capture_rank(PreCaptureResult& r, const ComputationGraph& cg, const PlanSet& plans, DeviceContext* d,
                  bool collective, const CaptureFault* fault) {
  auto& ctx = static_cast<CudaContext&>(*d);
  ctx.make_current();
  for (auto& g : r.graphs) {
    if (!g || g->key().collective != collective) continue;
    if (collective) trace("rank ", ctx.rank(), ": B3.5 capture ", graph_name(g->key().gid));
    try {
      const bool inject = fault && fault->matches(g->key(), ctx.rank());
      g->set_native(ctx.local_rank(),
                    capture_nodes(prepare_graph(g->key(), cg, plans, ctx), ctx, g->key().gid, inject));
    } catch (...) {
      rethrow_with_context(capture_where(g->key(), ctx.rank()));
    }
  }
}

// fn(i) for ranks[first..] on a thread each; rethrows the first rank that
// failed (the root cause, not a rank the abort released).
void on_all_ranks(const std::vector<DeviceContext*>& ranks, size_t first, const std::function<void(size_t)>& fn) {
  std::vector<std::thread> threads;
  std::vector<std::exception_ptr> errors(ranks.size());
  std::atomic<int> first_failed{-1};
  for (size_t i = first; i < ranks.size(); ++i)
    threads.emplace_back([&, i] {
      try {
        fn(i);
      } catch (...) {
        errors[i] = std::current_exception();
        int none = -1;
        if (first_failed.compare_exchange_strong(none, static_cast<int>(i))) {
          // The other ranks may be blocked in NCCL waiting for this one (its
          // set-up during capture involves every rank): release them.
          if (Communicator* c = ranks[i]->env(StreamKind::UPDATE).comm)
            c->abort(cat("rank ", ranks[i]->rank(), " failed in pre-capture"));
        }
      }
    });
  for (auto& t : threads) t.join();
  if (first_failed >= 0) std::rethrow_exception(errors[static_cast<size_t>(first_failed.load())]);
}

// Connect the communicators eagerly (a tiny all-reduce of scratch on every
// rank), so no connection set-up has to happen under capture.
void connect_communicators(const std::vector<DeviceContext*>& ranks) {
  on_all_ranks(ranks, 0, [&](size_t i) {
    auto& ctx = static_cast<CudaContext&>(*ranks[i]);
    ctx.make_current();
    trace("rank ", ctx.rank(), ": B3.5 connecting the communicator");
    const ExecEnv& e = ctx.env(StreamKind::UPDATE);
    const auto* gh = static_cast<const GpuHandles*>(e.gpu);
    TR_CHECK(e.comm && gh && gh->workspace_bytes >= 256, "rank ", i, " has no communicator or scratch");
    e.comm->allreduce(ctx.rank(), gh->workspace, 64, DType::F32, ReduceOp::Sum, e.stream);
    ctx.synchronize();
  });
}

}  // namespace

void capture_cuda(PreCaptureResult& r, const ComputationGraph& cg, const PlanSet& plans,
                  const std::vector<DeviceContext*>& ranks, const CaptureFault* fault, World* world) {
  trace("B2: warm-up on ", ranks.size(), " rank(s)");
  warm_up_eagerly(r, cg, plans, ranks);
  // B3: ordinary graphs; rank 0 serially, the other ranks in parallel threads.
  trace("B3: capture");
  capture_rank(r, cg, plans, ranks.front(), false, fault);
  if (ranks.size() > 1) on_all_ranks(ranks, 1, [&](size_t i) { capture_rank(r, cg, plans, ranks[i], false, fault); });
  // B3.5: graphs holding collectives. NCCL pairs the k-th collective of every
  // rank, and its first use of a communicator connects the ranks, so every rank
  // must capture the same graph at the same time: one thread per rank, all
  // capturing graph k together. (Not ncclGroupStart/End around all ranks' nodes:
  // inside a group NCCL defers its kernels to ncclGroupEnd, which would reorder
  // them after the compute nodes that follow an all-reduce, e.g. synchronised BN
  // inside DEEP_FWD_BWD.) Capture mode is thread-local, so captures on the rank
  // threads do not disturb each other.
  // Across processes the same holds: they meet at a barrier (a stalled one is
  // a watchdog error here, not a hang inside NCCL) and connect together.
  if (ranks.front()->ranks() == 1) {
    capture_rank(r, cg, plans, ranks.front(), true, fault);
  } else if (r.collective > 0) {
    if (world)
      world->barrier("the capture of the collective graphs",
                     std::chrono::milliseconds(ranks.front()->spec().watchdog_ms));
    connect_communicators(ranks);
    on_all_ranks(ranks, 0, [&](size_t i) { capture_rank(r, cg, plans, ranks[i], true, fault); });
  }
  trace("B4: warm-up launches on rank 0");
  // B4: one warm-up launch of the safe, non-collective graphs on rank 0.
  auto& ctx0 = static_cast<CudaContext&>(*ranks.front());
  ctx0.make_current();
  for (auto& g : r.graphs)
    if (g && warmup_safe(g->key(), cg)) g->launch(ctx0);
  ctx0.synchronize();
}

}  // namespace tr
