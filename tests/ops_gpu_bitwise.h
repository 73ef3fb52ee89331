#pragma once
// For GPU ops whose kernels run the CPU reference's arithmetic in the same
// order (pooling, Add): the GPU result must equal the CPU's bit for bit (not
// only within tolerance 0, which would let -0 pass for +0), and two GPU runs
// must agree bit for bit. Each case prints what it compared:
//   [ bitwise ] MaxPoolBwd/f16 x[2,112,112,64] 3x3/s2/p1: 1605632 elements, 0 differ
#include <algorithm>
#include <cstdio>
#include <cstring>

#include "tests/ops_gpu_fixture.h"

namespace tr::gpu_test {

// Elements of a and b (same dtype and shape) whose bits differ.
inline int64_t differing_elements(const HostTensor& a, const HostTensor& b) {
  if (a.dtype() != b.dtype() || a.numel() != b.numel()) return std::max(a.numel(), b.numel());
  const size_t es = dtype_size(a.dtype());
  const auto* pa = static_cast<const unsigned char*>(a.data());
  const auto* pb = static_cast<const unsigned char*>(b.data());
  int64_t n = 0;
  for (int64_t i = 0; i < a.numel(); ++i) n += std::memcmp(pa + size_t(i) * es, pb + size_t(i) * es, es) != 0;
  return n;
}

class OpsGpuBitwise : public OpsGpu {
 protected:
  // CPU once, GPU twice: GPU == CPU and GPU run 1 == run 2, bit for bit.
  void check_bitwise(OpFn cpu, OpFn gpu, Case& k) {
    SCOPED_TRACE(k.name);
    const std::vector<HostTensor> ref = run_cpu(cpu, k);
    const std::vector<HostTensor> a = run_gpu(gpu, k);
    const std::vector<HostTensor> b = run_gpu(gpu, k);
    for (size_t i = 0; i < ref.size(); ++i) {
      const int64_t differ = differing_elements(a[i], ref[i]);
      std::printf("[ bitwise ] %s output %zu: %lld elements, %lld differ\n", k.name.c_str(), i,
                  static_cast<long long>(ref[i].numel()), static_cast<long long>(differ));
      EXPECT_EQ(differ, 0) << k.name << " output " << i << " " << ref[i].shape().str()
                           << " differs from the CPU, rel err " << rel_err(a[i], ref[i]);
      EXPECT_TRUE(bitwise_equal(a[i], b[i])) << k.name << " output " << i << " differs between two runs";
    }
  }
};

// A copy of t with every 5th element set to -0.0: the sign of zero must survive
// (a gradient that is a lone -0 stays -0; see MaxPoolBwd's first term).
inline HostTensor with_negative_zeros(HostTensor t) {
  for (int64_t i = 0; i < t.numel(); i += 5) t.set(i, -0.0);
  return t;
}

}  // namespace tr::gpu_test
