// NCCL communicator: one ncclComm_t per GPU (ncclCommInitAll in one process,
// ncclCommInitRank under MPI), used by the rank threads (one thread per GPU, so no ncclGroupStart is needed around a
// rank's own call). All-reduces are enqueued on the rank's stream and can be
// captured into CUDA graphs.
#include <nccl.h>

#include <mutex>
#include <vector>

#include "framework/comm/comm_factory.h"
#include "framework/core/gpu_check_cuda.h"
#include "framework/core/log.h"

namespace tr {
namespace {

class NcclComm final : public Communicator {
 public:
  // One process holding every rank: ncclCommInitAll.
  NcclComm(int ranks, int first_device) : comms_(static_cast<size_t>(ranks)), ranks_(ranks) {
    std::vector<int> devs(static_cast<size_t>(ranks));
    for (int r = 0; r < ranks; ++r) devs[static_cast<size_t>(r)] = first_device + r;
    trace("NCCL: ncclCommInitAll over ", ranks, " GPUs");
    TR_GPU_CHECK(ncclCommInitAll(comms_.data(), ranks, devs.data()));
    trace("NCCL: communicators ready");
  }
  // Several processes (Note [processes and ranks]): process 0 makes the unique
  // id and the World broadcasts it; each process then joins with its L ranks
  // (one ncclCommInitRank per local GPU, grouped since one thread inits them all).
  NcclComm(World& world, int local_ranks, int first_device, std::chrono::milliseconds watchdog)
      : comms_(static_cast<size_t>(local_ranks)),
        first_rank_(world.process() * local_ranks),
        ranks_(world.processes() * local_ranks) {
    ncclUniqueId id{};
    if (world.process() == 0) TR_GPU_CHECK(ncclGetUniqueId(&id));
    world.broadcast(&id, sizeof id, 0, "the NCCL unique id", watchdog);
    trace("NCCL: ncclCommInitRank for ranks ", first_rank_, "..", first_rank_ + local_ranks - 1, " of ", ranks_);
    TR_GPU_CHECK(ncclGroupStart());
    for (int l = 0; l < local_ranks; ++l) {
      TR_GPU_CHECK(cudaSetDevice(first_device + l));
      TR_GPU_CHECK(ncclCommInitRank(&comms_[static_cast<size_t>(l)], ranks_, id, first_rank_ + l));
    }
    TR_GPU_CHECK(ncclGroupEnd());
    trace("NCCL: communicators ready");
  }
  static ncclDataType_t nccl_type(DType dtype) {
    switch (dtype) {
      case DType::F32: return ncclFloat32;
      case DType::F16: return ncclFloat16;
      case DType::BF16: return ncclBfloat16;
      case DType::F64: return ncclFloat64;
      default: break;
    }
    throw Error(cat("NCCL all-reduce of ", dtype_name(dtype)));
  }
  ~NcclComm() override {
    trace("NCCL: destroying ", comms_.size(), " communicator(s)");
    for (auto c : comms_)
      if (c) TR_GPU_WARN(ncclCommDestroy(c));
  }
  int ranks() const override { return ranks_; }
  void allreduce(int rank, void* data, int64_t elems, DType dtype, ReduceOp op, void* stream) override {
    const ncclDataType_t t = nccl_type(dtype);
    const ncclRedOp_t how = op == ReduceOp::Average ? ncclAvg : ncclSum;
    TR_GPU_CHECK(ncclAllReduce(data, data, static_cast<size_t>(elems), t, how,
                               comms_.at(static_cast<size_t>(rank - first_rank_)), static_cast<cudaStream_t>(stream)));
  }
  void abort(const std::string& why) override {
    std::lock_guard<std::mutex> lock(abort_mu_);  // several failing ranks may call it at once
    trace("NCCL: abort: ", why);
    for (auto c : comms_)
      if (c) ncclCommAbort(c);
    for (auto& c : comms_) c = nullptr;
  }

 private:
  std::vector<ncclComm_t> comms_;  // per local rank
  int first_rank_ = 0;             // the global rank of comms_[0]
  int ranks_ = 1;                  // global
  std::mutex abort_mu_;
};

}  // namespace

std::unique_ptr<Communicator> make_nccl_communicator(int ranks, World* world, int first_device,
                                                     std::chrono::milliseconds watchdog) {
  if (world == nullptr) return std::make_unique<NcclComm>(ranks, first_device);
  return std::make_unique<NcclComm>(*world, ranks / world->processes(), first_device, watchdog);
}

}  // namespace tr
