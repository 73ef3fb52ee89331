#include "framework/comm/comm_factory.h"

#include "framework/comm/shared_memory_comm.h"
#include "framework/core/error.h"

namespace tr {

std::unique_ptr<Communicator> make_communicator(Backend b, int ranks, int first_device,
                                                std::chrono::milliseconds watchdog) {
  if (b == Backend::Cpu) return std::make_unique<SharedMemoryComm>(ranks, watchdog);
  return make_nccl_communicator(ranks, first_device);
}

#ifndef TR_HAVE_CUDA
std::unique_ptr<Communicator> make_nccl_communicator(int, int) {
  throw UserError("this build of tr has no CUDA backend (configure with -DTR_CUDA=ON)");
}
#endif

}  // namespace tr
