// BnReluBwdReduce with the ReLU's gradient in front (Note [the ReLU's gradient
// in the reduce], framework/ops/compute/batchnorm.h) against ReluBwd then
// BnReluBwdReduce on the GPU: the same bits in all four outputs, one kernel
// fewer, with and without grid sync, and g equal to the CPU's ReluBwd bit for
// bit; where y does not allow the reduce's vector width, the two ops apart.
// Each case prints what it compared:
//   [ relu grad ] ReluBwdAddBnReduce/f16 x[64,14,14,256] relu: 2 kernel(s) (3 apart), 0 of ... differ
// Skips without a CUDA device.
#include "framework/core/launch_tally.h"
#include "framework/ops/compute/batchnorm.h"
#include "framework/ops/compute/relu.h"
#include "tests/ops_gpu_bitwise.h"

namespace tr {
namespace {

using namespace gpu_test;

class OpsGpuReluGrad : public OpsGpu {};

TEST_F(OpsGpuReluGrad, ReluGradientInTheReduceIsReluBwdThenReduce) {
  Rng rng(45);
  // Residual blocks' shapes (resnet50 at 56x56 and 7x7, resnet18), several
  // row blocks and one; odd C takes the one-element path.
  const Shape shapes[] = {{64, 14, 14, 256}, {32, 28, 28, 64}, {16, 7, 7, 2048}, {4, 6, 5, 16}, {3, 5, 5, 7}};
  for (DType t : {F16, F32})
    for (const Shape& xs : shapes)
      for (bool relu : {false, true})
        for (bool two : {true, false}) {
          const int64_t C = xs[3];
          Case base;
          base.variant = {xs[0], xs[0], 0, 0};
          base.attrs.relu = relu;
          base.attrs.eps = 1e-5f;
          const HostTensor x = rnd(t, xs, rng, -1.5, 2.5), gamma = rnd(t, {C}, rng, 0.5, 1.5),
                           beta = rnd(t, {C}, rng, -0.5, 0.5);
          const HostTensor a = rnd(t, xs, rng), b = rnd(t, xs, rng), y = rnd(t, xs, rng, -1, 1);
          // The forward's batch statistics and affine.
          Case st = base;
          st.in = {x};
          st.out = {HostTensor(F32, {2, C})};
          Case ap = base;
          ap.in = {x, run_gpu(bn_stats_cuda, st)[0], gamma, beta};
          ap.out = {HostTensor(t, xs), HostTensor(F32, {2, C}), HostTensor(F32, {2, C})};
          const std::vector<HostTensor> fwd = run_gpu(bn_relu_apply_cuda, ap);
          const HostTensor &batch = fwd[1], &affine = fwd[2];

          Case rb = base;
          rb.in = two ? std::vector<HostTensor>{a, y, b} : std::vector<HostTensor>{a, y};
          rb.out = {HostTensor(t, xs)};
          Case fused = base;
          fused.name =
              cat(tname(two ? "ReluBwdAddBnReduce" : "ReluBwdBnReduce", t), " x", xs.str(), relu ? " relu" : "");
          const OpFn fused_fn = two ? relu_bwd_add_bn_reduce_cuda : relu_bwd_bn_reduce_cuda;
          const OpFn relu_fn = two ? relu_bwd_add_cuda : relu_bwd_cuda;
          fused.in = {a, affine, x, batch, y};
          if (two) fused.in.push_back(b);
          fused.out = {HostTensor(t, {C}), HostTensor(t, {C}), HostTensor(F32, {2, C}), HostTensor(t, xs)};
          SCOPED_TRACE(fused.name);

          for (bool grid_sync : {false, true}) {
            gh_.grid_sync_sums = grid_sync;
            const CountedRun relu_run = run_counted(relu_fn, rb);
            const HostTensor& g = relu_run.out[0];
            Case br = base;
            br.in = {g, affine, x, batch};
            br.out = {HostTensor(t, {C}), HostTensor(t, {C}), HostTensor(F32, {2, C})};
            const CountedRun reduce_run = run_counted(bn_relu_bwd_reduce_cuda, br);
            const CountedRun got = run_counted(fused_fn, fused);
            gh_.grid_sync_sums = GpuHandles{}.grid_sync_sums;

            std::vector<HostTensor> want = reduce_run.out;
            want.push_back(g);
            int64_t differ = 0, total = 0;
            for (size_t i = 0; i < want.size(); ++i) {
              const int64_t d = differing_elements(got.out[i], want[i]);
              EXPECT_EQ(d, 0) << "output " << i;
              EXPECT_LT(got.out[i].first_non_finite(), 0) << "output " << i;
              differ += d;
              total += want[i].numel();
            }
            const int64_t apart = relu_run.kernels + reduce_run.kernels;
            std::printf("[ relu grad ] %s%s: %lld kernel(s) (%lld apart), %lld of %lld differ\n", fused.name.c_str(),
                        grid_sync ? " grid sync" : "", static_cast<long long>(got.kernels),
                        static_cast<long long>(apart), static_cast<long long>(differ), static_cast<long long>(total));
            EXPECT_EQ(got.kernels + 1, apart);
          }
          // g is ReluBwd's: the CPU's bits.
          EXPECT_EQ(
              differing_elements(run_gpu(fused_fn, fused)[3], run_cpu(two ? relu_bwd_add_cpu : relu_bwd_cpu, rb)[0]),
              0);
        }
}

// A y the reduce's vector width does not allow (2 bytes past a 16-byte
// boundary): the node runs ReluBwd, then the reduce of g, with the bits and the
// kernels of the two ops apart.
TEST_F(OpsGpuReluGrad, MisalignedReluOutputRunsTheOpsApart) {
  Rng rng(47);
  const Shape xs{8, 6, 5, 16};
  const int64_t C = 16, n = xs.numel();
  Case base;
  base.variant = {8, 8, 0, 0};
  base.attrs.relu = false;
  const HostTensor x = rnd(F16, xs, rng, -1.5, 2.5), a = rnd(F16, xs, rng), y = rnd(F16, xs, rng);
  Case st = base;
  st.in = {x};
  st.out = {HostTensor(F32, {2, C})};
  Case ap = base;
  ap.in = {x, run_gpu(bn_stats_cuda, st)[0], rnd(F16, {C}, rng, 0.5, 1.5), rnd(F16, {C}, rng, -0.5, 0.5)};
  ap.out = {HostTensor(F16, xs), HostTensor(F32, {2, C}), HostTensor(F32, {2, C})};
  const std::vector<HostTensor> fwd = run_gpu(bn_relu_apply_cuda, ap);
  HostTensor y_shifted(F16, {n + 8});
  for (int64_t i = 0; i < n; ++i) y_shifted.set(i + 1, y.get(i));
  const DevTensor da(a), dx(x), dbatch(fwd[1]), daffine(fwd[2]), dy_shifted(y_shifted);
  const TensorRef y_ref{static_cast<char*>(dy_shifted.ref().data) + sizeof(uint16_t), F16, xs};
  auto outputs = [&] {
    std::vector<std::unique_ptr<DevTensor>> o;
    for (const HostTensor& h :
         {HostTensor(F16, {C}), HostTensor(F16, {C}), HostTensor(F32, {2, C}), HostTensor(F16, xs)}) {
      o.push_back(std::make_unique<DevTensor>(h));
      o.back()->poison();
    }
    return o;
  };
  const auto fused = outputs(), apart = outputs();
  const int64_t k0 = launch_tally().kernels;
  call(relu_bwd_bn_reduce_cuda, {da.ref(), daffine.ref(), dx.ref(), dbatch.ref(), y_ref},
       {fused[0]->ref(), fused[1]->ref(), fused[2]->ref(), fused[3]->ref()}, base.attrs, base.variant);
  const int64_t k1 = launch_tally().kernels;
  call(relu_bwd_cuda, {da.ref(), y_ref}, {apart[3]->ref()}, base.attrs, base.variant);
  call(bn_relu_bwd_reduce_cuda, {apart[3]->ref(), daffine.ref(), dx.ref(), dbatch.ref()},
       {apart[0]->ref(), apart[1]->ref(), apart[2]->ref()}, base.attrs, base.variant);
  const int64_t k2 = launch_tally().kernels;
  ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
  int64_t differ = 0;
  for (size_t i = 0; i < 4; ++i) differ += differing_elements(fused[i]->download(), apart[i]->download());
  std::printf("[ relu grad ] misaligned y x%s: %lld kernel(s) (%lld apart), %lld differ\n", xs.str().c_str(),
              static_cast<long long>(k1 - k0), static_cast<long long>(k2 - k1), static_cast<long long>(differ));
  EXPECT_EQ(differ, 0);
  EXPECT_EQ(k1 - k0, k2 - k1);
  EXPECT_LT(fused[3]->download().first_non_finite(), 0);
  Case rb = base;  // g is ReluBwd's: the CPU's bits
  rb.in = {a, y};
  rb.out = {HostTensor(F16, xs)};
  EXPECT_EQ(differing_elements(fused[3]->download(), run_cpu(relu_bwd_cpu, rb)[0]), 0);
}

// Bad operands get a clear error: a y of another shape, a g of another dtype.
TEST_F(OpsGpuReluGrad, RefusesOperandsThatDoNotMatch) {
  Rng rng(46);
  const Shape xs{4, 6, 5, 16};
  const int64_t C = 16;
  Case k;
  k.variant = {4, 4, 0, 0};
  k.in = {rnd(F16, xs, rng), HostTensor(F32, {2, C}), rnd(F16, xs, rng), HostTensor(F32, {2, C}),
          rnd(F16, {4, 6, 5, 8}, rng)};
  k.out = {HostTensor(F16, {C}), HostTensor(F16, {C}), HostTensor(F32, {2, C}), HostTensor(F16, xs)};
  EXPECT_THROW(run_gpu(relu_bwd_bn_reduce_cuda, k), Error);
  k.in[4] = rnd(F16, xs, rng);
  k.out[3] = HostTensor(F32, xs);
  EXPECT_THROW(run_gpu(relu_bwd_bn_reduce_cuda, k), Error);
}

}  // namespace
}  // namespace tr
