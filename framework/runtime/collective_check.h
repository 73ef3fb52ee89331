#pragma once
// Note [collective sequences must match]: NCCL (and the CPU all-reduce) pair the
// k-th collective of every rank; if two ranks disagree on order, size or type,
// the run hangs or corrupts data. Before the first replay, pre_capture hashes
// each rank's sequence of collectives (graph, op, element count, dtype) and
// refuses to run on a mismatch, naming the first differing rank and position.
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "framework/comm/world.h"
#include "framework/core/dtype.h"
#include "framework/graph/graph_id.h"
#include "framework/ops/op_kind.h"

namespace tr {

struct CollectiveSig {
  GraphId gid = GraphId::COUNT;
  RangeOp op = RangeOp::AllReduceSum;
  int64_t elems = 0;
  DType dtype = DType::F32;
  bool operator==(const CollectiveSig&) const = default;
  std::string str() const;
};

uint64_t hash_sequence(const std::vector<CollectiveSig>& seq);
// seqs[rank]; throws Error naming the first rank that differs from rank 0 and
// the first differing position.
void verify_collective_sequences(const std::vector<std::vector<CollectiveSig>>& seqs);
// Across processes (Note [processes and ranks]): every process sends its
// (locally verified) sequence to all (allgather), and every process runs the
// check above over the global ranks, so a mismatch names the same rank and
// position on every process.
void verify_collective_sequences(const std::vector<CollectiveSig>& mine, World& world, int local_ranks,
                                 std::chrono::milliseconds timeout);

}  // namespace tr
