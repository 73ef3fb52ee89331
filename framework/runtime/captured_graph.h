#pragma once
// CapturedGraph (docs/design.md, "Vocabulary"): one executable per unique atlas key. On CUDA a
// cudaGraphExec_t per rank (behind NativeExec, in *_cuda files); on the CPU an
// ordered list of prepared nodes per rank, built from the same nodes.
#include <memory>
#include <vector>

#include "framework/graph/graph_atlas.h"
#include "framework/runtime/prepared_node.h"

namespace tr {

// A backend's executable graph for one rank.
class NativeExec {
 public:
  virtual ~NativeExec() = default;
  virtual void launch(DeviceContext& ctx, StreamKind stream) const = 0;
  // Adds this graph as one node of the capture in progress on `stream` (a step
  // graph being built, step_graphs.h), after the work captured there so far.
  virtual void splice(DeviceContext& ctx, StreamKind stream) const = 0;
  virtual size_t kernel_nodes() const = 0;  // kernels inside: what one launch replaces
};

class CapturedGraph {
 public:
  // One executable per rank of this process, indexed by the local rank
  // (Note [processes and ranks]).
  CapturedGraph(UniqueGraph key, int local_ranks)
      : key_(key), cpu_ops_(static_cast<size_t>(local_ranks)), native_(static_cast<size_t>(local_ranks)) {}

  const UniqueGraph& key() const { return key_; }
  void set_cpu_ops(int local_rank, std::vector<PreparedNode> ops) {
    cpu_ops_.at(static_cast<size_t>(local_rank)) = std::move(ops);
  }
  void set_native(int local_rank, std::unique_ptr<NativeExec> e) {
    native_.at(static_cast<size_t>(local_rank)) = std::move(e);
  }
  bool ready(int local_rank) const {
    return native_.at(static_cast<size_t>(local_rank)) != nullptr ||
           !cpu_ops_.at(static_cast<size_t>(local_rank)).empty();
  }

  // Runs the whole graph on ctx's rank, on the stream its GraphId belongs to.
  void launch(DeviceContext& ctx) const;
  // Adds the graph to a step graph being built for ctx's rank: on CUDA a child
  // node of the capture running on its stream; on the CPU an entry of `cpu_seq`.
  void splice(DeviceContext& ctx, std::vector<const CapturedGraph*>& cpu_seq) const;
  // Runs the CPU ops of ctx's rank (what a CPU step graph replays).
  void run_cpu(DeviceContext& ctx) const;

 private:
  UniqueGraph key_;
  std::vector<std::vector<PreparedNode>> cpu_ops_;
  std::vector<std::unique_ptr<NativeExec>> native_;
};

}  // namespace tr
