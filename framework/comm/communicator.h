#pragma once
// All-reduce among the ranks of one process (docs/design.md, "Ranks and processes"): NCCL on
// CUDA, shared memory among rank threads on the CPU. One object serves all
// ranks; each rank thread calls with its own rank.
#include <cstdint>
#include <string>

#include "framework/core/dtype.h"

namespace tr {

enum class ReduceOp { Sum, Average };  // Average: the sum divided by the rank count

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int ranks() const = 0;
  // In place: data (elems of dtype) becomes the sum (or average) over ranks.
  // `stream` is the rank's cudaStream_t on CUDA, null on the CPU.
  virtual void allreduce(int rank, void* data, int64_t elems, DType dtype, ReduceOp op, void* stream) = 0;
  // A rank failed: release every rank blocked in (or entering) a collective with
  // an error instead of leaving it to hang. Best effort on NCCL.
  virtual void abort(const std::string& why) = 0;
};

}  // namespace tr
