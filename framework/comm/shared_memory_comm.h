#pragma once
// CPU all-reduce among rank threads through shared memory. Note [fixed
// summation order]: every element is summed as ((r0 + r1) + r2) + ... in rank
// order, by one thread, so every rank gets the same bits and every run the same
// result, whatever the thread timing.
#include <chrono>
#include <cstdint>
#include <vector>

#include "framework/comm/communicator.h"
#include "framework/comm/rank_barrier.h"

namespace tr {

class SharedMemoryComm final : public Communicator {
 public:
  SharedMemoryComm(int ranks, std::chrono::milliseconds watchdog);
  int ranks() const override { return barrier_.ranks(); }
  void allreduce(int rank, void* data, int64_t elems, DType dtype, ReduceOp op, void* stream) override;
  void abort(const std::string& why) override { barrier_.abort(why); }
  RankBarrier& barrier() { return barrier_; }

 private:
  RankBarrier barrier_;
  std::vector<void*> posted_;  // per rank: its buffer, element count and type
  std::vector<int64_t> posted_elems_;
  std::vector<DType> posted_dtype_;
  std::vector<unsigned char> sum_;  // the sums, elements of the posted type
  std::vector<uint64_t> calls_;     // per rank: collectives completed, for messages
};

}  // namespace tr
