#include "framework/runtime/context_factory.h"

#include "framework/runtime/cpu_context.h"

namespace tr {

std::unique_ptr<DeviceContext> make_context(Backend b, int rank, int ranks, int device, AlgoChoice algos,
                                            Communicator* comm) {
  if (b == Backend::Cpu) return std::make_unique<CpuContext>(rank, ranks, comm);
  return make_cuda_context(rank, ranks, device, algos, comm);
}

#ifndef TR_HAVE_CUDA
std::unique_ptr<DeviceContext> make_cuda_context(int, int, int, AlgoChoice, Communicator*) {
  throw UserError("this build of tr has no CUDA backend (configure with -DTR_CUDA=ON)");
}
int cuda_device_count() { return 0; }
#endif

}  // namespace tr
