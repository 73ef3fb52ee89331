// GPU Add against the CPU reference, bit for bit (both add in f32 and round
// once, framework/ops/compute/add.h), with and without the ReLU, in f32 and f16, on
// sizes with and without a tail past the last 16-byte vector; two GPU runs
// bitwise equal. Skips without a CUDA device.
#include "framework/ops/compute/add.h"
#include "tests/ops_gpu_bitwise.h"

namespace tr {
namespace {

using namespace gpu_test;

using OpsGpuAdd = OpsGpuBitwise;

// A residual join at a ResNet-50 shape (batch 4), an odd element count (the
// tail after the vectors), a flat tensor, and a single element.
const Shape kAddShapes[] = {{4, 14, 14, 256}, {3, 5, 7, 9}, {1001}, {1}};

TEST_F(OpsGpuAdd, AddMatchesCpu) {
  Rng rng(16);
  for (DType t : {F32, F16})
    for (bool relu : {false, true})
      for (const Shape& s : kAddShapes) {
        Case k;
        k.name = cat(tname("Add", t), relu ? "+relu" : "", " ", s.str());
        k.attrs.relu = relu;
        // Signed zeros on both sides: -0 + -0 = -0 stays -0 without the ReLU
        // and becomes +0 with it.
        k.in = {with_negative_zeros(rnd(t, s, rng, -2, 2)), with_negative_zeros(rnd(t, s, rng, -2, 2))};
        k.out = {HostTensor(t, s)};
        check_bitwise(add_cpu, add_cuda, k);
      }
}

}  // namespace
}  // namespace tr
