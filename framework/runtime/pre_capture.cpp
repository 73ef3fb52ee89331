#include "framework/runtime/pre_capture.h"

#include <chrono>

#include "framework/runtime/collective_check.h"

namespace tr {

std::string capture_where(const UniqueGraph& u, int rank) {
  return cat("capturing ", graph_name(u.gid), " (variant ", variant_name(u.variant), ", rank ", rank, ")");
}

PreCaptureResult pre_capture(GraphAtlas& atlas, const ComputationGraph& cg, const PlanSet& plans,
                             const std::vector<DeviceContext*>& ranks, ExecMode mode, const CaptureFault* fault,
                             World* world) {
  TR_CHECK(!ranks.empty(), "no ranks");
  PreCaptureResult r;
  r.dedup = dedup(atlas);  // B1
  // B2.5: the graphs holding collectives are flagged in dedup; check that every
  // rank would issue the same collective sequence (Note [collective sequences must match]).
  std::vector<std::vector<CollectiveSig>> seqs(ranks.size());
  r.collectives.resize(r.dedup.graphs.size());
  for (size_t i = 0; i < ranks.size(); ++i) {
    for (size_t g = 0; g < r.dedup.graphs.size(); ++g) {
      const UniqueGraph& u = r.dedup.graphs[g];
      if (!u.collective) continue;
      for (const Node& n : cg.nodes(u.gid)) {
        if (!n.collective) continue;
        const PreparedNode p = prepare_node(n, cg, plans, plans.plan(u.variant), *ranks[i], stream_for(u.gid));
        for (const RangeOperand& op : p.operands()) {
          seqs[i].push_back({u.gid, n.range_op, op.elems, op.dtype});
          if (i == 0) r.collectives[g].push_back(seqs[i].back());
        }
      }
    }
  }
  verify_collective_sequences(seqs);
  if (world)
    verify_collective_sequences(seqs.front(), *world, static_cast<int>(ranks.size()),
                                std::chrono::milliseconds(ranks.front()->spec().watchdog_ms));
  r.collective_hash = hash_sequence(seqs.front());
  const auto t0 = std::chrono::steady_clock::now();
  r.graphs.resize(r.dedup.graphs.size());
  for (size_t i = 0; i < r.dedup.graphs.size(); ++i) {
    const UniqueGraph& u = r.dedup.graphs[i];
    if (!is_captured(mode, is_fwd_bwd(u.gid))) continue;
    r.graphs[i] = std::make_unique<CapturedGraph>(u, static_cast<int>(ranks.size()));  // local ranks
    ++r.captured;
    if (u.collective) ++r.collective;
  }
  if (ranks.front()->backend() == Backend::Cuda) {
    capture_cuda(r, cg, plans, ranks, fault, world);
  } else {
    // CPU "capture": resolve every node once into a prepared list per rank.
    for (auto& g : r.graphs) {
      if (!g) continue;
      const UniqueGraph& u = g->key();
      const MemoryPlan& plan = plans.plan(u.variant);
      for (DeviceContext* ctx : ranks) {
        try {
          std::vector<PreparedNode> ops;
          for (const Node& n : cg.nodes(u.gid)) {
            ops.push_back(prepare_node(n, cg, plans, plan, *ctx, node_stream(n, u.gid)));
            if (fault && fault->matches(u, ctx->rank())) throw Error("injected capture failure");
          }
          g->set_cpu_ops(ctx->local_rank(), std::move(ops));
        } catch (...) {
          rethrow_with_context(capture_where(u, ctx->rank()));
        }
      }
    }
  }
  r.capture_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace tr

#ifndef TR_HAVE_CUDA
namespace tr {
void capture_cuda(PreCaptureResult&, const ComputationGraph&, const PlanSet&, const std::vector<DeviceContext*>&,
                  const CaptureFault*, World*) {
  throw Error("this build of tr has no CUDA backend (configure with -DTR_CUDA=ON)");
}
}  // namespace tr
#endif
