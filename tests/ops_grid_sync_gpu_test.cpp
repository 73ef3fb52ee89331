// The per-channel sums added behind a grid barrier (Note [sums finished behind
// a grid barrier], channel_sums_cuda.h) against the same kernels followed by
// finalize_sums: the same bits, one kernel instead of two wherever the grid has
// several row blocks. Then a BatchNorm's phases in one cooperative kernel
// (Note [one kernel per BatchNorm], bn_train_cuda.h) against the ops apart,
// and against the same node without --grid-sync (its kernels apart). Each case
// prints what it compared:
//   [ grid sync ] BnStats/f16 x[256,28,28,32]: 1 kernel(s) (2 apart), 0 of 64 differ
//   [ one kernel ] BnStatsReluApply(x, gamma, beta)/f16 x[256,28,28,32] relu: 1 kernel(s) (3 apart,
//                  3 unsynced), 0 of ... differ
// Skips without a CUDA device.
#include <algorithm>

#include "framework/ops/compute/batchnorm.h"
#include "framework/ops/compute/fc.h"
#include "framework/ops/compute/pool.h"
#include "tests/ops_gpu_bitwise.h"

namespace tr {
namespace {

using namespace gpu_test;

class OpsGpuGridSync : public OpsGpu {
 protected:
  using Run = CountedRun;
  Run run_with(OpFn fn, Case& k, bool grid_sync) {
    gh_.grid_sync_sums = grid_sync;
    Run r = run_counted(fn, k);
    gh_.grid_sync_sums = GpuHandles{}.grid_sync_sums;
    return r;
  }

  // Both ways, every output the same bits; `one_kernel`: the barrier took the
  // place of finalize_sums (the grid has several row blocks and fits).
  void expect_same_bits(OpFn fn, Case& k, bool one_kernel) {
    SCOPED_TRACE(k.name);
    const Run apart = run_with(fn, k, false), fused = run_with(fn, k, true);
    int64_t differ = 0, total = 0;
    for (size_t i = 0; i < apart.out.size(); ++i) {
      differ += differing_elements(fused.out[i], apart.out[i]);
      total += apart.out[i].numel();
      EXPECT_LT(fused.out[i].first_non_finite(), 0) << "output " << i;
    }
    std::printf("[ grid sync ] %s: %lld kernel(s) (%lld apart), %lld of %lld differ\n", k.name.c_str(),
                static_cast<long long>(fused.kernels), static_cast<long long>(apart.kernels),
                static_cast<long long>(differ), static_cast<long long>(total));
    EXPECT_EQ(differ, 0);
    if (one_kernel) {
      EXPECT_EQ(fused.kernels + 1, apart.kernels);
    } else {
      EXPECT_EQ(fused.kernels, apart.kernels);
    }
  }
};

struct SumCase {
  Shape x;
  bool several_blocks;  // the grid has more than one row block
};
const SumCase kShapes[] = {{{256, 28, 28, 32}, true}, {{64, 14, 14, 64}, true}, {{256, 3, 3, 256}, true},
                           {{4, 6, 5, 16}, false},    {{3, 5, 5, 7}, false},    {{512, 7, 7, 30}, true}};

TEST_F(OpsGpuGridSync, BatchNormSumsAreFinalizeSumsBitsInOneKernel) {
  Rng rng(41);
  for (DType t : {F16, F32})
    for (bool relu : {true, false})
      for (const SumCase& s : kShapes) {
        const int64_t C = s.x[s.x.rank - 1];
        const std::string tag = cat(tname("", t), " x", s.x.str(), relu ? " relu" : "");
        Case st;
        st.name = cat("BnStats", tag);
        st.variant = {s.x[0], s.x[0], 0, 0};
        st.attrs.relu = relu;
        st.in = {rnd(t, s.x, rng, -1.5, 2.5)};
        st.out = {HostTensor(F32, {2, C})};
        expect_same_bits(bn_stats_cuda, st, s.several_blocks);

        // The backward's sums, from the forward's batch statistics and affine.
        Case ap = st;
        ap.in = {st.in[0], run_gpu(bn_stats_cuda, st)[0], rnd(t, {C}, rng, 0.5, 1.5), rnd(t, {C}, rng, -0.5, 0.5)};
        ap.out = {HostTensor(t, s.x), HostTensor(F32, {2, C}), HostTensor(F32, {2, C})};
        const std::vector<HostTensor> fwd = run_gpu(bn_relu_apply_cuda, ap);
        Case br = st;
        br.name = cat("BnReluBwdReduce", tag);
        br.in = {rnd(t, s.x, rng), fwd[2], st.in[0], fwd[1]};
        br.out = {HostTensor(t, {C}), HostTensor(t, {C}), HostTensor(F32, {2, C})};
        expect_same_bits(bn_relu_bwd_reduce_cuda, br, s.several_blocks);
      }
}

TEST_F(OpsGpuGridSync, PoolStatisticsAndBiasGradientAreFinalizeSumsBitsInOneKernel) {
  Rng rng(42);
  for (DType t : {F16, F32}) {
    const Shape x{256, 28, 28, 64};
    Case p;
    p.name = cat(tname("MaxPoolFwd+stats", t), " x", x.str());
    p.attrs.kernel = 2;
    p.attrs.stride = 2;
    p.attrs.pad = 0;
    p.in = {rnd(t, x, rng, 0.5, 2.0)};
    const Shape y{256, 14, 14, 64};
    p.out = {HostTensor(t, y), HostTensor(DType::U8, y), HostTensor(F32, {2, 64})};
    // Its statistics kernel takes 90 registers at four rows in flight: two
    // blocks per SM, so its grid (four per SM) does not fit at once, and
    // finalize_sums adds its partials either way.
    expect_same_bits(maxpool_stats_fwd_cuda, p, false);

    Case g;
    g.name = cat(tname("FcBwdWeight+bias", t), " x[4097,70] M=40");
    g.attrs.scale = 1.f;
    g.attrs.has_bias = true;
    g.in = {rnd(t, {4097, 70}, rng), rnd(t, {4097, 40}, rng)};
    g.out = {HostTensor(t, {40, 70}), HostTensor(t, {40})};
    expect_same_bits(fc_bwd_weight_cuda, g, true);
  }
}

// The merged node (grid sync on, then off) against the ops apart (grid sync
// off): every output the same bits; one kernel with the grid sync, as many as
// apart without it.
class OpsGpuOneKernel : public OpsGpuGridSync {
 protected:
  struct Apart {
    std::vector<HostTensor> out;  // in the merged node's output order
    int64_t kernels = 0;
  };
  void expect_like_apart(OpFn merged, Case& k, const Apart& apart) {
    SCOPED_TRACE(k.name);
    const Run fused = run_with(merged, k, true), unsynced = run_with(merged, k, false);
    ASSERT_EQ(fused.out.size(), apart.out.size());
    int64_t differ = 0, differ_unsynced = 0, total = 0;
    for (size_t i = 0; i < apart.out.size(); ++i) {
      differ += differing_elements(fused.out[i], apart.out[i]);
      differ_unsynced += differing_elements(unsynced.out[i], apart.out[i]);
      total += apart.out[i].numel();
      EXPECT_LT(fused.out[i].first_non_finite(), 0) << "output " << i;
    }
    std::printf("[ one kernel ] %s: %lld kernel(s) (%lld apart, %lld unsynced), %lld of %lld differ (%lld unsynced)\n",
                k.name.c_str(), static_cast<long long>(fused.kernels), static_cast<long long>(apart.kernels),
                static_cast<long long>(unsynced.kernels), static_cast<long long>(differ), static_cast<long long>(total),
                static_cast<long long>(differ_unsynced));
    EXPECT_EQ(differ, 0);
    EXPECT_EQ(differ_unsynced, 0);
    EXPECT_EQ(unsynced.kernels, apart.kernels);
    EXPECT_EQ(fused.kernels, 1);
  }
  Apart apart(const std::vector<std::pair<OpFn, Case*>>& steps) {
    Apart a;
    for (const auto& [fn, k] : steps) {
      const Run r = run_with(fn, *k, false);
      a.kernels += r.kernels;
      for (const HostTensor& h : r.out) a.out.push_back(h);
    }
    return a;
  }
};

TEST_F(OpsGpuOneKernel, BatchNormPhasesInOneKernelAreTheKernelsApart) {
  Rng rng(43);
  for (DType t : {F16, F32})
    for (bool relu : {true, false})
      for (const SumCase& s : kShapes) {
        const int64_t C = s.x[s.x.rank - 1];
        const std::string tag = cat(tname("", t), " x", s.x.str(), relu ? " relu" : "");
        Case base;
        base.variant = {s.x[0], s.x[0], 0, 0};
        base.attrs.relu = relu;
        base.attrs.eps = 1e-5f;
        const HostTensor x = rnd(t, s.x, rng, -1.5, 2.5), gamma = rnd(t, {C}, rng, 0.5, 1.5),
                         beta = rnd(t, {C}, rng, -0.5, 0.5), dy = rnd(t, s.x, rng);

        // forward: BnStats, BnReluApply -> BnReluApply(x, gamma, beta)
        Case st = base;
        st.in = {x};
        st.out = {HostTensor(F32, {2, C})};
        const HostTensor sums = run_with(bn_stats_cuda, st, false).out[0];
        Case ap = base;
        ap.in = {x, sums, gamma, beta};
        ap.out = {HostTensor(t, s.x), HostTensor(F32, {2, C}), HostTensor(F32, {2, C})};
        Apart fwd = apart({{bn_stats_cuda, &st}, {bn_relu_apply_cuda, &ap}});
        std::rotate(fwd.out.begin(), fwd.out.begin() + 1, fwd.out.end());  // (sums, y, batch, affine) -> merged order
        Case mf = base;
        mf.name = cat("BnStatsReluApply(x, gamma, beta)", tag);
        mf.in = {x, gamma, beta};
        mf.out = {HostTensor(t, s.x), HostTensor(F32, {2, C}), HostTensor(F32, {2, C}), HostTensor(F32, {2, C})};
        expect_like_apart(bn_stats_relu_apply_cuda, mf, fwd);

        // backward: BnReluBwdReduce, BnReluBwdApply -> BnReluBwdApply(dy, affine, x, batch, gamma)
        const HostTensor &batch = fwd.out[1], &affine = fwd.out[2];
        Case br = base;
        br.in = {dy, affine, x, batch};
        br.out = {HostTensor(t, {C}), HostTensor(t, {C}), HostTensor(F32, {2, C})};
        const HostTensor dsums = run_with(bn_relu_bwd_reduce_cuda, br, false).out[2];
        Case ba = base;
        ba.in = {dy, affine, x, batch, gamma, dsums};
        ba.out = {HostTensor(t, s.x)};
        Apart bwd = apart({{bn_relu_bwd_reduce_cuda, &br}, {bn_relu_bwd_apply_cuda, &ba}});
        std::rotate(bwd.out.begin(), bwd.out.begin() + 3, bwd.out.end());  // dx first
        Case mb = base;
        mb.name = cat("BnReluBwdReduceApply(dy, affine, x, batch, gamma)", tag);
        mb.in = {dy, affine, x, batch, gamma};
        mb.out = {HostTensor(t, s.x), HostTensor(t, {C}), HostTensor(t, {C}), HostTensor(F32, {2, C})};
        expect_like_apart(bn_relu_bwd_reduce_apply_cuda, mb, bwd);
      }
}

TEST_F(OpsGpuOneKernel, PoolWithItsBatchNormInOneKernelIsTheKernelsApart) {
  Rng rng(44);
  for (DType t : {F16, F32})
    for (const Shape& xs : {Shape{256, 28, 28, 64}, Shape{256, 14, 14, 128}, Shape{8, 6, 6, 24}, Shape{4, 8, 8, 7}})
      for (bool relu : {true, false}) {
        const int64_t C = xs[3];
        const Shape ps{xs[0], xs[1] / 2, xs[2] / 2, C};
        Case base;
        base.variant = {xs[0], xs[0], 0, 0};
        base.attrs.relu = relu;
        base.attrs.kernel = 2;
        base.attrs.stride = 2;
        base.attrs.pad = 0;
        const HostTensor x = rnd(t, xs, rng, 0.5, 2.0), gamma = rnd(t, {C}, rng, 0.5, 1.5),
                         beta = rnd(t, {C}, rng, -0.5, 0.5);
        Case pool = base;
        pool.in = {x};
        pool.out = {HostTensor(t, ps), HostTensor(DType::U8, ps), HostTensor(F32, {2, C})};
        const std::vector<HostTensor> pooled = run_with(maxpool_stats_fwd_cuda, pool, false).out;
        Case ap = base;
        ap.in = {pooled[0], pooled[2], gamma, beta};
        ap.out = {HostTensor(t, ps), HostTensor(F32, {2, C}), HostTensor(F32, {2, C})};
        const Apart want = apart({{maxpool_stats_fwd_cuda, &pool}, {bn_relu_apply_cuda, &ap}});
        Case m = base;
        m.name = cat(tname("PoolBnReluApply(x, gamma, beta)", t), " x", xs.str(), relu ? " relu" : "");
        m.in = {x, gamma, beta};
        m.out = {HostTensor(t, ps), HostTensor(DType::U8, ps), HostTensor(F32, {2, C}),
                 HostTensor(t, ps), HostTensor(F32, {2, C}),   HostTensor(F32, {2, C})};
        expect_like_apart(pool_bn_relu_apply_cuda, m, want);
      }
}

}  // namespace
}  // namespace tr
