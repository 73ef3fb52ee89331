#include "framework/comm/comm_factory.h"

#include "framework/comm/process_comm.h"
#include "framework/comm/shared_memory_comm.h"
#include "framework/core/error.h"

namespace tr {

std::unique_ptr<Communicator> make_communicator(Backend b, int ranks, World* world, int first_device,
                                                std::chrono::milliseconds watchdog) {
  if (world) TR_CHECK(ranks % world->processes() == 0, ranks, " ranks over ", world->processes(), " processes");
  if (b == Backend::Cpu) {
    if (world) return std::make_unique<ProcessComm>(*world, ranks / world->processes(), watchdog);
    return std::make_unique<SharedMemoryComm>(ranks, watchdog);
  }
  return make_nccl_communicator(ranks, world, first_device, watchdog);
}

#ifndef TR_HAVE_CUDA
std::unique_ptr<Communicator> make_nccl_communicator(int, World*, int, std::chrono::milliseconds) {
  throw UserError("this build of tr has no CUDA backend (configure with -DTR_CUDA=ON)");
}
#endif

}  // namespace tr
