// GPU max, average and global pooling against the CPU reference, bit for bit:
// the kernels visit windows and sum overlaps in the CPU's order (Note [pool
// window order] in framework/ops/kernels/pool_window.h). Also two GPU runs bitwise
// equal, and a captured pool chain replayed bitwise like eager launches.
// Skips without a CUDA device.
#include "framework/ops/compute/add.h"
#include "framework/ops/compute/avgpool.h"
#include "framework/ops/compute/batchnorm.h"
#include "framework/ops/compute/bn_relu_pool.h"
#include "tests/ops_gpu_bitwise.h"

namespace tr {
namespace {

using namespace gpu_test;

struct Win {
  int k, s, p;
};

OpAttrs win_attrs(Win w) {
  OpAttrs a;
  a.kernel = w.k;
  a.stride = w.s;
  a.pad = w.p;
  return a;
}

Shape pooled(const Shape& x, Win w) {
  auto len = [&](int64_t n) { return (n + 2 * w.p - w.k) / w.s + 1; };
  return {x[0], len(x[1]), len(x[2]), x[3]};
}

std::string wname(Win w) { return cat(w.k, "x", w.k, "/s", w.s, "/p", w.p); }

struct PoolCase {
  Win w;
  Shape x;
};

class OpsGpuPool : public OpsGpuBitwise {
 protected:
  // Forward on x, then backward with a random dy (every 5th entry -0) and the
  // CPU forward's y: both bitwise against the CPU.
  void max_fwd_bwd(const PoolCase& pc, const HostTensor& x, Rng& rng, const char* data) {
    const DType dt = x.dtype();
    const Shape ys = pooled(pc.x, pc.w);
    Case f;
    f.name = cat(tname("MaxPoolFwd", dt), " x", pc.x.str(), " ", wname(pc.w), " ", data);
    f.attrs = win_attrs(pc.w);
    f.in = {x};
    f.out = {HostTensor(dt, ys)};
    check_bitwise(maxpool_fwd_cpu, maxpool_fwd_cuda, f);
    const HostTensor y = run_cpu(maxpool_fwd_cpu, f)[0];
    Case b;
    b.name = cat(tname("MaxPoolBwd", dt), " x", pc.x.str(), " ", wname(pc.w), " ", data);
    b.attrs = f.attrs;
    b.in = {with_negative_zeros(rnd(dt, ys, rng)), x, y};
    b.out = {HostTensor(dt, pc.x)};
    check_bitwise(maxpool_bwd_cpu, maxpool_bwd_cuda, b);
    // With the winners recorded (what the max-pool layer runs).
    Case fa = f;
    fa.name += " +argmax";
    fa.out.push_back(HostTensor(DType::U8, ys));
    check_bitwise(maxpool_argmax_fwd_cpu, maxpool_argmax_fwd_cuda, fa);
    Case ba = b;
    ba.name += " from argmax";
    ba.in[2] = run_cpu(maxpool_argmax_fwd_cpu, fa)[1];
    check_bitwise(maxpool_argmax_bwd_cpu, maxpool_argmax_bwd_cuda, ba);
  }
};

// ================================================================ max pooling

// The cnn's 2x2/s2 window: the CUDA fast paths (from y and from the recorded
// winners), against the CPU's general gather.
const Shape kPool2Shapes[] = {{3, 8, 8, 16}, {2, 7, 9, 16}, {2, 5, 6, 5}, {4, 28, 28, 64}, {2, 3, 3, 256}};

TEST_F(OpsGpuPool, MaxPool2MatchesCpu) {
  Rng rng(9);
  for (DType t : {F32, F16})
    for (const Shape& s : kPool2Shapes) max_fwd_bwd({{2, 2, 0}, s}, ties(t, s, rng), rng, "ties");
}

// The fused MaxPoolFwd (y, argmax, sums; Note [fusion]): y and the winners
// bit for bit like the CPU; the statistics the same bits as the GPU's BnStats
// on its own y, within f32 rounding of the CPU's f64 sums, and the same bits
// on a second run. Random values, so the sums do not cancel; the largest
// shape has several row blocks (finalize_sums).
TEST_F(OpsGpuPool, MaxPool2WithStatsIsPoolThenBnStats) {
  Rng rng(10);
  for (DType t : {F32, F16})
    for (const Shape& s : kPool2Shapes) {
      const Shape ys = pooled(s, {2, 2, 0});
      Case f;
      f.name = cat(tname("MaxPoolFwd+stats", t), " x", s.str());
      SCOPED_TRACE(f.name);
      f.attrs = win_attrs({2, 2, 0});
      f.in = {rnd(t, s, rng, 0.5, 2.0)};
      f.out = {HostTensor(t, ys), HostTensor(DType::U8, ys), HostTensor(DType::F32, Shape{2, s[3]})};
      const std::vector<HostTensor> cpu = run_cpu(maxpool_stats_fwd_cpu, f);
      const std::vector<HostTensor> a = run_gpu(maxpool_stats_fwd_cuda, f), b = run_gpu(maxpool_stats_fwd_cuda, f);
      Case st;
      st.in = {a[0]};
      st.out = {HostTensor(DType::F32, Shape{2, s[3]})};
      const HostTensor unfused = run_gpu(bn_stats_cuda, st)[0];
      const double err = rel_err(a[2], cpu[2]);
      std::printf(
          "[ pool stats ] %s: y %lld differ, argmax %lld differ, sums %lld differ from BnStats, %.2e from the CPU\n",
          f.name.c_str(), static_cast<long long>(differing_elements(a[0], cpu[0])),
          static_cast<long long>(differing_elements(a[1], cpu[1])),
          static_cast<long long>(differing_elements(a[2], unfused)), err);
      EXPECT_EQ(differing_elements(a[0], cpu[0]), 0);
      EXPECT_EQ(differing_elements(a[1], cpu[1]), 0);
      EXPECT_EQ(differing_elements(a[2], unfused), 0);
      // The GPU's f32 sums of up to 784 pooled values in [0.5, 2] against the CPU's double ones rounded to
      // f32: measured at most 5.9e-8 (H200); 1e-5 leaves 170x, and one value left out is 1/784 = 1.3e-3.
      EXPECT_LT(err, 1e-5);
      for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(bitwise_equal(a[i], b[i])) << "output " << i;
    }
  // Any other window has no fused form.
  Case bad;
  bad.attrs = win_attrs({3, 2, 1});
  bad.in = {rnd(F32, Shape{2, 8, 8, 16}, rng)};
  const Shape ys = pooled(bad.in[0].shape(), {3, 2, 1});
  bad.out = {HostTensor(F32, ys), HostTensor(DType::U8, ys), HostTensor(DType::F32, Shape{2, 16})};
  EXPECT_THROW(run_gpu(maxpool_stats_fwd_cuda, bad), Error);
}

// BnReluPool (BatchNorm + ReLU + 2x2 max pool, y never stored): the bits of
// BnReluApply then MaxPoolFwd on the GPU, all four outputs, with and without
// the ReLU; within tolerance of the CPU's pair; the same bits on a second run.
// Odd H and W (a row and a column in no window) and C = 5 (one channel per
// thread) included.
TEST_F(OpsGpuPool, BnReluPoolIsApplyThenPool) {
  Rng rng(13);
  const Shape shapes[] = {{4, 28, 28, 64}, {2, 7, 9, 16}, {2, 5, 6, 5}, {2, 56, 56, 128}};
  for (DType t : {F32, F16})
    for (const Shape& s : shapes)
      for (bool relu : {true, false}) {
        const int64_t C = s[3];
        const Shape ps = pooled(s, {2, 2, 0});
        Case f;
        f.name = cat(tname("BnReluPool", t), " x", s.str(), relu ? " relu" : "");
        SCOPED_TRACE(f.name);
        f.attrs = win_attrs({2, 2, 0});
        f.attrs.relu = relu;
        f.attrs.eps = 1e-3f;
        f.variant = VariantDims{s[0], s[0], 0, 0};
        const HostTensor x = rnd(t, s, rng, -1, 2);
        Case st;  // the statistics the BatchNorm reads, from the GPU's BnStats
        st.in = {x};
        st.out = {HostTensor(DType::F32, Shape{2, C})};
        const HostTensor sums = run_gpu(bn_stats_cuda, st)[0];
        f.in = {x, sums, rnd(t, Shape{C}, rng, 0.5, 1.5), rnd(t, Shape{C}, rng, -0.5, 0.5)};
        f.out = {HostTensor(t, ps), HostTensor(DType::U8, ps), HostTensor(DType::F32, Shape{2, C}),
                 HostTensor(DType::F32, Shape{2, C})};
        const std::vector<HostTensor> a = run_gpu(bn_relu_pool_cuda, f), b = run_gpu(bn_relu_pool_cuda, f);
        Case ap = f;  // the unfused pair on the GPU
        ap.out = {HostTensor(t, s), f.out[2], f.out[3]};
        const std::vector<HostTensor> y = run_gpu(bn_relu_apply_cuda, ap);
        Case pl = f;
        pl.in = {y[0]};
        pl.out = {f.out[0], f.out[1]};
        const std::vector<HostTensor> pool = run_gpu(maxpool_argmax_fwd_cuda, pl);
        const std::vector<HostTensor> want = {pool[0], pool[1], y[1], y[2]};
        const std::vector<HostTensor> cpu = run_cpu(bn_relu_pool_cpu, f);
        int64_t differ = 0;
        for (size_t i = 0; i < a.size(); ++i) {
          differ += differing_elements(a[i], want[i]);
          EXPECT_EQ(differing_elements(a[i], want[i]), 0) << "output " << i;
          EXPECT_TRUE(bitwise_equal(a[i], b[i])) << "output " << i << " differs between two runs";
        }
        const double err = rel_err(a[0], cpu[0]);
        std::printf("[ bn pool ] %s: %lld elements differ from BnReluApply + MaxPoolFwd, p %.2e from the CPU\n",
                    f.name.c_str(), static_cast<long long>(differ), err);
        EXPECT_LT(err, tol_for(t));  // measured at most 5.3e-8 (f32) and 5.8e-6 (f16) on an H200
        // (scale, shift) from the same sums by the same double formula, rounded to f32: an f32 ulp (at most
        // 1.2e-7) apart where the doubles straddle a rounding point; 1e-5 leaves over 80x.
        EXPECT_LT(rel_err(a[3], cpu[3]), 1e-5);
      }
}

// Any other window: the general kernels. The ResNet-50 stem (3x3/s2/p1 on
// 112x112x64) at batch 2; overlapping windows (3x3/s1/p1, 2x2/s1, 5x5/s2/p2:
// up to 9 outputs per input); a stride larger than the window; the largest pad
// (k-1); H != W; C not a multiple of the vector width (one channel per thread).
// The stem's window with winners has unrolled kernels of its own
// (maxpool_3x3s2_cuda.h): odd and even H and W, down to 1x2, cover their edges.
const PoolCase kMaxCases[] = {
    {{3, 2, 1}, {2, 112, 112, 64}}, {{3, 2, 1}, {3, 9, 7, 16}},   {{3, 2, 1}, {2, 5, 6, 5}}, {{3, 2, 1}, {2, 8, 8, 24}},
    {{3, 1, 1}, {2, 7, 9, 16}},     {{2, 1, 0}, {2, 6, 7, 8}},    {{1, 2, 0}, {2, 7, 7, 8}}, {{3, 2, 2}, {2, 5, 6, 16}},
    {{3, 3, 0}, {2, 9, 10, 8}},     {{5, 2, 2}, {2, 11, 13, 16}}, {{2, 2, 1}, {2, 7, 8, 3}}, {{3, 2, 1}, {2, 1, 2, 8}},
    {{3, 2, 1}, {2, 6, 3, 16}},
};

TEST_F(OpsGpuPool, MaxPoolWindowsMatchCpu) {
  Rng rng(11);
  for (DType t : {F32, F16})
    for (const PoolCase& pc : kMaxCases) {
      max_fwd_bwd(pc, ties(t, pc.x, rng), rng, "ties");
      max_fwd_bwd(pc, rnd(t, pc.x, rng), rng, "random");
    }
}

TEST_F(OpsGpuPool, GlobalMaxPoolMatchesCpu) {
  Rng rng(10);
  for (DType t : {F32, F16})
    for (const Shape& s : kPool2Shapes) {
      const Shape ys{s[0], s[3]};
      const HostTensor x = ties(t, s, rng);
      Case f;
      f.name = cat(tname("GlobalMaxPoolFwd", t), " x", s.str());
      f.in = {x};
      f.out = {HostTensor(t, ys)};
      check_bitwise(global_maxpool_fwd_cpu, global_maxpool_fwd_cuda, f);
      const HostTensor y = run_cpu(global_maxpool_fwd_cpu, f)[0];
      Case b;
      b.name = cat(tname("GlobalMaxPoolBwd", t), " x", s.str());
      b.in = {rnd(t, ys, rng), x, y};
      b.out = {HostTensor(t, s)};
      check_bitwise(global_maxpool_bwd_cpu, global_maxpool_bwd_cuda, b);
    }
}

// ================================================================ average pooling

const PoolCase kAvgCases[] = {
    {{2, 2, 0}, {3, 8, 8, 16}}, {{2, 2, 0}, {2, 7, 9, 16}}, {{2, 2, 0}, {2, 5, 6, 5}}, {{3, 1, 0}, {2, 7, 9, 16}},
    {{3, 2, 0}, {2, 9, 9, 24}}, {{7, 1, 0}, {4, 7, 7, 64}}, {{1, 2, 0}, {2, 7, 7, 8}}, {{2, 3, 0}, {2, 8, 7, 8}},
};

TEST_F(OpsGpuPool, AvgPoolMatchesCpu) {
  Rng rng(12);
  for (DType t : {F32, F16})
    for (const PoolCase& pc : kAvgCases) {
      const Shape ys = pooled(pc.x, pc.w);
      const HostTensor x = rnd(t, pc.x, rng);
      Case f;
      f.name = cat(tname("AvgPoolFwd", t), " x", pc.x.str(), " ", wname(pc.w));
      f.attrs = win_attrs(pc.w);
      f.in = {x};
      f.out = {HostTensor(t, ys)};
      check_bitwise(avgpool_fwd_cpu, avgpool_fwd_cuda, f);
      Case b;
      b.name = cat(tname("AvgPoolBwd", t), " x", pc.x.str(), " ", wname(pc.w));
      b.attrs = f.attrs;
      b.in = {with_negative_zeros(rnd(t, ys, rng)), x};
      b.out = {HostTensor(t, pc.x)};
      check_bitwise(avgpool_bwd_cpu, avgpool_bwd_cuda, b);
    }
}

// H*W = 49 (ResNet-50's head, batch 8), 25, 9, 1, 81 and 6 positions: the
// forward's four-at-a-time loads with and without a remainder.
const Shape kGlobalAvgShapes[] = {{8, 7, 7, 2048}, {3, 5, 5, 16}, {2, 3, 3, 5},
                                  {4, 1, 1, 64},   {2, 9, 9, 24}, {2, 2, 3, 3}};

TEST_F(OpsGpuPool, GlobalAvgPoolMatchesCpu) {
  Rng rng(13);
  for (DType t : {F32, F16})
    for (const Shape& s : kGlobalAvgShapes) {
      const Shape ys{s[0], s[3]};
      const HostTensor x = rnd(t, s, rng);
      Case f;
      f.name = cat(tname("GlobalAvgPoolFwd", t), " x", s.str());
      f.in = {x};
      f.out = {HostTensor(t, ys)};
      check_bitwise(global_avgpool_fwd_cpu, global_avgpool_fwd_cuda, f);
      Case b;
      b.name = cat(tname("GlobalAvgPoolBwd", t), " x", s.str());
      b.in = {with_negative_zeros(rnd(t, ys, rng)), x};
      b.out = {HostTensor(t, s)};
      check_bitwise(global_avgpool_bwd_cpu, global_avgpool_bwd_cuda, b);
    }
}

// ================================================================ capture

// A ResNet-like head launched eagerly, then captured into one CUDA Graph and
// replayed: stem max pool 3x3/s2/p1, residual Add with ReLU, 2x2 average pool,
// global average pool, and their backward. Every replay equals eager bit for bit.
TEST_F(OpsGpuPool, CapturedPoolChainReplaysBitwiseLikeEager) {
  Rng rng(14);
  const DType t = F16;
  const int64_t N = 8, H = 16, C = 32;
  VariantDims v{N, N, H, H};
  const OpAttrs stem = win_attrs({3, 2, 1}), avg = win_attrs({2, 2, 0});
  OpAttrs relu;
  relu.relu = true;
  const OpAttrs none;
  const HostTensor hx = rnd(t, {N, H, H, C}, rng), hr = rnd(t, {N, H / 2, H / 2, C}, rng);
  const HostTensor hdg = rnd(t, {N, C}, rng);
  DevTensor x(hx), r(hr), dg(hdg);
  DevTensor p(HostTensor(t, {N, H / 2, H / 2, C})), q(HostTensor(t, {N, H / 2, H / 2, C}));
  DevTensor a(HostTensor(t, {N, H / 4, H / 4, C})), g(HostTensor(t, {N, C}));
  DevTensor da(HostTensor(t, {N, H / 4, H / 4, C})), dq(HostTensor(t, {N, H / 2, H / 2, C}));
  DevTensor dx(HostTensor(t, {N, H, H, C}));

  auto chain = [&] {
    call(maxpool_fwd_cuda, {x.ref()}, {p.ref()}, stem, v);
    call(add_cuda, {p.ref(), r.ref()}, {q.ref()}, relu, v);
    call(avgpool_fwd_cuda, {q.ref()}, {a.ref()}, avg, v);
    call(global_avgpool_fwd_cuda, {a.ref()}, {g.ref()}, none, v);
    call(global_avgpool_bwd_cuda, {dg.ref(), a.ref()}, {da.ref()}, none, v);
    call(avgpool_bwd_cuda, {da.ref(), q.ref()}, {dq.ref()}, avg, v);
    call(maxpool_bwd_cuda, {dq.ref(), x.ref(), p.ref()}, {dx.ref()}, stem, v);
  };
  std::vector<DevTensor*> outs{&p, &q, &a, &g, &da, &dq, &dx};
  expect_replays_like_eager(chain, outs);
}

}  // namespace
}  // namespace tr
