#pragma once
// CPU all-reduce across processes (Note [processes and ranks]): each process
// holds L rank threads; the World carries the bytes between processes.
//
// Note [fixed summation order] holds across processes too: the processes
// first compare what they posted (count and element type; a mismatch is named
// on every process), then process p owns a
// contiguous chunk of the elements; every process sends each owner its ranks'
// values of that chunk (alltoall), the owner sums every element as
// ((r0 + r1) + r2) + ... in global rank order, exactly as SharedMemoryComm
// does, and the sums go back to everyone (allgather). So P processes x L
// threads give the same bits as P*L rank threads of one process.
#include <chrono>
#include <cstddef>
#include <vector>

#include "framework/comm/communicator.h"
#include "framework/comm/rank_barrier.h"
#include "framework/comm/world.h"

namespace tr {

class ProcessComm final : public Communicator {
 public:
  // `world` outlives this; this process holds global ranks first_rank .. + local_ranks-1.
  ProcessComm(World& world, int local_ranks, std::chrono::milliseconds watchdog);
  int ranks() const override { return world_.processes() * barrier_.ranks(); }
  void allreduce(int rank, void* data, int64_t elems, DType dtype, ReduceOp op, void* stream) override;
  void abort(const std::string& why) override { barrier_.abort(why); }

 private:
  void reduce_across_processes(int64_t elems, DType dtype, ReduceOp op, const std::string& what);

  World& world_;
  RankBarrier barrier_;
  std::chrono::milliseconds watchdog_;
  int first_rank_ = 0;
  std::vector<void*> posted_;  // per local rank: its buffer, element count and type
  std::vector<int64_t> posted_elems_;
  std::vector<DType> posted_dtype_;
  std::vector<unsigned char> send_, recv_, mine_, all_;  // values, one block per process
  std::vector<uint64_t> calls_;                          // per local rank: collectives completed, for messages
};

}  // namespace tr
