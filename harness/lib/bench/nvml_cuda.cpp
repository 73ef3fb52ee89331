// The CUDA side of Note [machine state] (nvml.h): a device's PCI bus id.
#include <cuda_runtime.h>

#include "harness/lib/bench/nvml.h"

namespace tr::bench {

std::string cuda_pci_bus_id(int device) {
  char id[32] = {};
  if (cudaDeviceGetPCIBusId(id, int(sizeof id), device) != cudaSuccess) {
    (void)cudaGetLastError();
    return "";
  }
  return id;
}

}  // namespace tr::bench
