#include <cuda_runtime.h>
#include <cudnn.h>
#include <nccl.h>

#include "framework/core/error.h"
#include "harness/lib/bench/context_info.h"

namespace tr::bench {
namespace {
std::string version3(int v, int major_div, int minor_div) {
  return cat(v / major_div, ".", (v % major_div) / minor_div, ".", v % minor_div);
}
}  // namespace

void fill_cuda_context(BenchContext& c) {
  cudaDeviceProp p{};
  if (cudaGetDeviceProperties(&p, 0) == cudaSuccess) c.device_name = p.name;
  int drv = 0, rt = 0;
  cudaDriverGetVersion(&drv);
  cudaRuntimeGetVersion(&rt);
  c.driver_version = cat("cuda ", drv / 1000, ".", (drv % 1000) / 10);
  c.cuda_runtime_version = cat(rt / 1000, ".", (rt % 1000) / 10);
  const size_t dnn = cudnnGetVersion();  // e.g. 91900 = 9.19.0
  c.cudnn_version = version3(static_cast<int>(dnn), 10000, 100);
  int nccl = 0;
  if (ncclGetVersion(&nccl) == ncclSuccess) c.nccl_version = version3(nccl, 10000, 100);
}

}  // namespace tr::bench
