// Benchmark inputs filled on the GPU. tr_bench_ops fills every input again
// each time Google Benchmark calls a case (to estimate its iterations, then to
// time them); a host loop and a copy took seconds per call for resnet50's
// 400 MB activations, and the whole catalogue did not finish in the GPU
// check's time. A kernel fills them in microseconds. Each element's draw is
// Philox4x32-10 (framework/core/philox.h) of its index under the seed.
#include "tests/bench/device_fill.h"

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "framework/core/philox.h"

namespace tr::bench {
namespace {

enum class Kind : int { F32, F16, U8, I32 };

__global__ void fill_kernel(void* p, Kind kind, int64_t n, float lo, float hi, uint32_t k0, uint32_t k1) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const Philox4 r = philox4x32_10(Philox4{{uint32_t(i), uint32_t(uint64_t(i) >> 32), 0u, 0u}}, k0, k1);
    const float u = float(r.v[0] >> 8) * 0x1.0p-24f;  // [0, 1)
    switch (kind) {
      case Kind::F32: static_cast<float*>(p)[i] = lo + (hi - lo) * u; break;
      case Kind::F16: static_cast<__half*>(p)[i] = __float2half_rn(lo + (hi - lo) * u); break;
      case Kind::U8: static_cast<uint8_t*>(p)[i] = uint8_t(r.v[1] & 0xffu); break;
      case Kind::I32: static_cast<int32_t*>(p)[i] = int32_t(r.v[1] % uint32_t(hi)); break;
    }
  }
}

}  // namespace

bool device_fill(void* dev, DType dt, int64_t n, double lo, double hi, uint64_t seed) {
  if (n <= 0) return true;
  Kind kind;
  switch (dt) {
    case DType::F32: kind = Kind::F32; break;
    case DType::F16: kind = Kind::F16; break;
    case DType::U8: kind = Kind::U8; break;
    case DType::I32:
      if (hi < 1) return false;  // labels in [0, hi)
      kind = Kind::I32;
      break;
    default: return cudaMemset(dev, 0, size_t(n) * dtype_size(dt)) == cudaSuccess;
  }
  fill_kernel<<<1024, 256>>>(dev, kind, n, float(lo), float(hi), uint32_t(seed), uint32_t(seed >> 32));
  return cudaDeviceSynchronize() == cudaSuccess;
}

}  // namespace tr::bench
