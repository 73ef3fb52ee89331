// NCCL communicator: one ncclComm_t per GPU from ncclCommInitAll, used by the
// rank threads (one thread per GPU, so no ncclGroupStart is needed around a
// rank's own call). All-reduces are enqueued on the rank's stream and can be
// captured into CUDA graphs.
#include <nccl.h>

#include <mutex>
#include <vector>

#include "framework/comm/comm_factory.h"
#include "framework/core/log.h"
#include "framework/core/gpu_check_cuda.h"

namespace tr {
namespace {

class NcclComm final : public Communicator {
 public:
  NcclComm(int ranks, int first_device) : comms_(static_cast<size_t>(ranks)) {
    std::vector<int> devs(static_cast<size_t>(ranks));
    for (int r = 0; r < ranks; ++r) devs[static_cast<size_t>(r)] = first_device + r;
    trace("NCCL: ncclCommInitAll over ", ranks, " GPUs");
    TR_GPU_CHECK(ncclCommInitAll(comms_.data(), ranks, devs.data()));
    trace("NCCL: communicators ready");
  }
  ~NcclComm() override {
    trace("NCCL: destroying ", comms_.size(), " communicator(s)");
    for (auto c : comms_)
      if (c) TR_GPU_WARN(ncclCommDestroy(c));
  }
  int ranks() const override { return static_cast<int>(comms_.size()); }
  void allreduce(int rank, void* data, int64_t elems, DType dtype, ReduceOp op, void* stream) override {
    TR_CHECK(dtype == DType::F32 || dtype == DType::F16, "NCCL all-reduce of ", dtype_name(dtype));
    const ncclDataType_t t = dtype == DType::F32 ? ncclFloat32 : ncclFloat16;
    const ncclRedOp_t how = op == ReduceOp::Average ? ncclAvg : ncclSum;
    TR_GPU_CHECK(ncclAllReduce(data, data, static_cast<size_t>(elems), t, how, comms_[static_cast<size_t>(rank)],
                               static_cast<cudaStream_t>(stream)));
  }
  void abort(const std::string& why) override {
    std::lock_guard<std::mutex> lock(abort_mu_);  // several failing ranks may call it at once
    trace("NCCL: abort: ", why);
    for (auto c : comms_)
      if (c) ncclCommAbort(c);
    for (auto& c : comms_) c = nullptr;
  }

 private:
  std::vector<ncclComm_t> comms_;
  std::mutex abort_mu_;
};

}  // namespace

std::unique_ptr<Communicator> make_nccl_communicator(int ranks, int first_device) {
  return std::make_unique<NcclComm>(ranks, first_device);
}

}  // namespace tr
