// GPU BatchNorm+ReLU, fully connected, ReLU and softmax cross-entropy against
// the CPU reference, the fused classifier head against those ops apart, and a
// captured chain of ops replayed bitwise like eager launches. Pooling:
// ops_pool_gpu_test.cpp. Skips without a CUDA device.
#include "framework/ops/compute/classifier_head.h"
#include "tests/ops_gpu_bitwise.h"

namespace tr {
namespace {

using namespace gpu_test;

// ================================================================ BatchNorm

struct BnShape {
  Shape x;
  int64_t global_batch;
};
const BnShape kBnShapes[] = {{{4, 6, 5, 16}, 8},      {{8, 7, 7, 32}, 8},  {{3, 5, 5, 7}, 3},
                             {{64, 14, 14, 64}, 256}, {{2, 3, 3, 256}, 2}, {{16, 40}, 16}};

// Consistent inputs for the BN phases, made with the CPU reference.
struct BnData {
  HostTensor x, gamma, beta, sums, y, batch, affine, dy, dsums;  // affine: the forward's (scale, shift)
};

class OpsGpuBn : public OpsGpu {
 protected:
  BnData make(DType t, const BnShape& s, Rng& rng, bool relu) {
    const int64_t C = s.x[s.x.rank - 1];
    BnData d;
    d.x = rnd(t, s.x, rng, -1.5, 2.5);
    d.gamma = rnd(t, {C}, rng, 0.5, 1.5);
    d.beta = rnd(t, {C}, rng, -0.5, 0.5);
    d.dy = rnd(t, s.x, rng);
    OpRunner r;
    r.variant = {s.x[0], s.global_batch, 0, 0};
    r.attrs.relu = relu;
    d.sums = HostTensor(F32, {2, C});
    r.run(bn_stats_cpu, {&d.x}, {&d.sums});
    // Pretend the other ranks hold similar data: scale the local sums up.
    for (int64_t i = 0; i < 2 * C; ++i) d.sums.set(i, d.sums.get(i) * double(s.global_batch) / double(s.x[0]));
    d.y = HostTensor(t, s.x);
    d.batch = HostTensor(F32, {2, C});
    d.affine = HostTensor(F32, {2, C});
    r.run(bn_relu_apply_cpu, {&d.x, &d.sums, &d.gamma, &d.beta}, {&d.y, &d.batch, &d.affine});
    HostTensor dg(t, {C}), db(t, {C});
    d.dsums = HostTensor(F32, {2, C});
    r.run(bn_relu_bwd_reduce_cpu, {&d.dy, &d.affine, &d.x, &d.batch}, {&dg, &db, &d.dsums});
    return d;
  }
};

TEST_F(OpsGpuBn, AllPhasesMatchCpu) {
  Rng rng(7);
  for (DType t : {F32, F16})
    for (bool relu : {true, false})
      for (const BnShape& s : kBnShapes) {
        const int64_t C = s.x[s.x.rank - 1];
        const BnData d = make(t, s, rng, relu);
        const std::string tag = cat(tname("", t), " x", s.x.str(), relu ? " relu" : "");
        Case base;
        base.variant = {s.x[0], s.global_batch, 0, 0};
        base.attrs.relu = relu;
        base.attrs.eps = 1e-5f;

        Case st = base;
        st.name = cat("BnStats", tag);
        st.in = {d.x};
        st.out = {HostTensor(F32, {2, C})};
        st.tol = {1e-5};  // f32 statistics for either dtype (GPU sums in f32, CPU in double): tol_for(F32)
        check(bn_stats_cpu, bn_stats_cuda, st);

        Case ap = base;
        ap.name = cat("BnReluApply", tag);
        ap.in = {d.x, d.sums, d.gamma, d.beta};
        ap.out = {HostTensor(t, s.x), HostTensor(F32, {2, C}), HostTensor(F32, {2, C})};
        // batch and affine: the same double formula on the same sums, rounded to f32: an f32 ulp (at most
        // 1.2e-7) apart where the doubles straddle a rounding point; 1e-6 leaves 8x.
        ap.tol = {tol_for(t), 1e-6, 1e-6};
        check(bn_relu_apply_cpu, bn_relu_apply_cuda, ap);

        Case ar = ap;  // with a residual (Note [fusion])
        ar.name = cat("BnAddReluApply", tag);
        ar.in.push_back(rnd(t, s.x, rng));
        check(bn_add_relu_apply_cpu, bn_add_relu_apply_cuda, ar);

        Case br = base;
        br.name = cat("BnReluBwdReduce", tag);
        br.in = {d.dy, d.affine, d.x, d.batch};
        br.out = {HostTensor(t, {C}), HostTensor(t, {C}), HostTensor(F32, {2, C})};
        br.tol = {tol_for(t), tol_for(t), 1e-5};  // dsums: f32 statistics for either dtype, as BnStats
        check(bn_relu_bwd_reduce_cpu, bn_relu_bwd_reduce_cuda, br);

        Case ba = base;
        ba.name = cat("BnReluBwdApply", tag);
        ba.in = {d.dy, d.affine, d.x, d.batch, d.gamma, d.dsums};
        ba.out = {HostTensor(t, s.x)};
        check(bn_relu_bwd_apply_cpu, bn_relu_bwd_apply_cuda, ba);

        Case in = base;
        in.name = cat("BnReluInfer", tag);
        HostTensor affine = rnd(F32, {2, C}, rng);
        in.in = {d.x, affine};
        in.out = {HostTensor(t, s.x)};
        check(bn_relu_infer_cpu, bn_relu_infer_cuda, in);
      }
}

TEST_F(OpsGpu, BnFoldMatchesCpu) {
  Rng rng(8);
  for (int64_t C : {1, 32, 257}) {
    Case k;
    k.name = cat("BnFold C=", C);
    HostTensor running = rnd(F32, {2, C}, rng);
    for (int64_t i = C; i < 2 * C; ++i) running.set(i, 0.1 + std::fabs(running.get(i)));  // variances > 0
    k.in = {rnd(F32, {C}, rng, 0.5, 1.5), rnd(F32, {C}, rng), running};
    k.out = {HostTensor(F32, {2, C})};
    k.tol = {1e-6};  // the same double formula on f32 inputs, rounded to f32: an ulp (1.2e-7) at most; 8x
    check(bn_fold_cpu, bn_fold_cuda, k);
  }
}

// ================================================================ fully connected

struct FcShape {
  Shape x;
  int64_t m;
};
const FcShape kFcShapes[] = {{{37, 50}, 20},  {{200, 784}, 1024}, {{200, 256}, 10}, {{16, 3, 3, 8}, 10},
                             {{64, 256}, 10}, {{5, 7}, 3},        {{4097, 70}, 32}};

TEST_F(OpsGpu, FcMatchesCpu) {
  Rng rng(11);
  for (DType t : {F32, F16})
    for (bool bias : {true, false})
      for (const FcShape& s : kFcShapes) {
        const int64_t N = s.x[0], K = s.x.inner(), M = s.m;
        const std::string tag = cat(tname("", t), " x", s.x.str(), " M=", M, bias ? " bias" : "");
        const float scale = bias ? 1.f : 0.125f;
        const HostTensor x = rnd(t, s.x, rng), w = rnd(t, {M, K}, rng, -0.1, 0.1), b = rnd(t, {M}, rng);
        const HostTensor dy = rnd(t, {N, M}, rng);

        Case f;
        f.name = cat("FcFwd", tag);
        f.attrs.scale = scale;
        f.attrs.has_bias = bias;
        f.in = {x, w};
        if (bias) f.in.push_back(b);
        f.out = {HostTensor(t, {N, M})};
        check(fc_fwd_cpu, fc_fwd_cuda, f);

        Case d;
        d.name = cat("FcBwdData", tag);
        d.attrs.scale = scale;
        d.in = {dy, w, x};
        d.out = {HostTensor(t, s.x)};
        check(fc_bwd_data_cpu, fc_bwd_data_cuda, d);

        Case g;
        g.name = cat("FcBwdWeight", tag);
        g.attrs.scale = scale;
        g.attrs.has_bias = bias;
        g.in = {x, dy};
        g.out = {HostTensor(t, {M, K})};
        if (bias) g.out.emplace_back(t, Shape{M});
        check(fc_bwd_weight_cpu, fc_bwd_weight_cuda, g);
      }
}

// ================================================================ ReLU

TEST_F(OpsGpu, ReluMatchesCpu) {
  Rng rng(12);
  for (DType t : {F32, F16})
    for (const Shape& s : {Shape{4, 8, 8, 16}, Shape{3, 5, 7, 3}, Shape{1001}, Shape{200, 1024}}) {
      HostTensor x = rnd(t, s, rng);
      for (int64_t i = 0; i < x.numel(); i += 13) x.set(i, 0.0);
      Case f;
      f.name = cat(tname("ReluFwd", t), " ", s.str());
      f.in = {x};
      f.out = {HostTensor(t, s)};
      f.tol = {0.0};  // a select: the same bits
      check(relu_fwd_cpu, relu_fwd_cuda, f);
      const HostTensor y = run_cpu(relu_fwd_cpu, f)[0];
      Case b;
      b.name = cat(tname("ReluBwd", t), " ", s.str());
      b.in = {rnd(t, s, rng), y};
      b.out = {HostTensor(t, s)};
      b.tol = {0.0};  // a select: the same bits
      check(relu_bwd_cpu, relu_bwd_cuda, b);
      Case b2 = b;  // with a second gradient (Note [fusion]): the sum rounded once, as Add does
      b2.name = cat(tname("ReluBwdAdd", t), " ", s.str());
      b2.in.push_back(rnd(t, s, rng));
      check(relu_bwd_add_cpu, relu_bwd_add_cuda, b2);
    }
}

TEST_F(OpsGpu, F64IsRefusedOnCuda) {
  Rng rng(13);
  const HostTensor x = rnd(DType::F64, {4, 4}, rng);
  DevTensor dx(x), dy(x);
  OpAttrs a;
  VariantDims v;
  EXPECT_THROW(call(relu_fwd_cuda, {dx.ref()}, {dy.ref()}, a, v), Error);
}

// ================================================================ softmax cross-entropy

TEST_F(OpsGpu, SoftmaxXentMatchesCpu) {
  Rng rng(14);
  for (DType t : {F32, F16})
    for (bool grad : {true, false})
      for (int64_t M : {10, 100})
        for (int64_t N : {200, 7, 64}) {
          Case k;
          k.name = cat(tname("SoftmaxXent", t), " N=", N, " M=", M, grad ? " grad" : "");
          k.attrs.label_smoothing = 0.1f;
          k.attrs.with_grad = grad;
          k.variant = {N, 2 * N, 0, 0};
          k.loss_scale = 1024.f;
          HostTensor lab(DType::I32, {N});
          for (int64_t i = 0; i < N; ++i) lab.set(i, double(rng.below(uint64_t(M))));
          HostTensor z = rnd(t, {N, M}, rng, -4, 4);
          // A few rows with a tie for the maximum (the first index wins).
          for (int64_t n = 0; n < N; n += 5) {
            z.set(n * M + 1, 6.0);
            z.set(n * M + 3, 6.0);
          }
          k.in = {z, lab};
          if (grad) k.out.emplace_back(t, Shape{N, M});
          k.out.emplace_back(F32, Shape{kMetricSlots});
          check(softmax_xent_cpu, softmax_xent_cuda, k);
        }
}

// ================================================================ classifier head

// A fused op's GPU outputs a (and b, a second run) against the ops apart on
// the GPU (want: the same bits) and the CPU (cpu: within 20x the dtype's
// tolerance); returns how many elements differ from want.
int64_t expect_the_ops_apart(const std::vector<HostTensor>& a, const std::vector<HostTensor>& b,
                             const std::vector<HostTensor>& want, const std::vector<HostTensor>& cpu, DType t) {
  int64_t differ = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    differ += differing_elements(a[i], want[i]);
    EXPECT_EQ(differing_elements(a[i], want[i]), 0) << "output " << i;
    EXPECT_TRUE(bitwise_equal(a[i], b[i])) << "output " << i << " differs between two runs";
    // The CPU runs the ops in turn, each held to tol_for apart; chained, their differences add and carry (a
    // logit an fp16 ulp apart moves its dlogit and the routed gradient): 20x. Measured at most 5e-5 (f16) and
    // 2e-7 (f32) in dx and dlogits on an H200.
    EXPECT_LT(rel_err(a[i], cpu[i]), 20 * tol_for(t)) << "output " << i;
  }
  return differ;
}

// ClassifierHead (classifier_head.h) against the five ops it fuses, run apart
// on the GPU: the same bits in all four outputs (the routed gradient included,
// with ties for the maximum), the same bits on a second run, and within
// tolerance of the CPU. Shapes: the cnn's head at batch 256; C not a multiple
// of 8 with two classes; C above the block's 256 threads with 32 classes;
// batches large enough for 4 and 8 samples per block on the H200, with a
// last group of fewer.
TEST_F(OpsGpu, ClassifierHeadIsTheFiveOpsInTurn) {
  Rng rng(16);
  struct HeadShape {
    Shape x;
    int64_t m;
  };
  for (DType t : {F32, F16})
    for (const HeadShape& hs :
         {HeadShape{{256, 3, 3, 256}, 10}, HeadShape{{7, 4, 4, 45}, 2}, HeadShape{{33, 2, 5, 300}, 32},
          HeadShape{{1101, 3, 3, 40}, 7}, HeadShape{{4500, 2, 2, 64}, 10}}) {
      const int64_t N = hs.x[0], C = hs.x[3], M = hs.m, P = hs.x[1] * hs.x[2];
      Case k;
      k.name = cat(tname("ClassifierHead", t), " x", hs.x.str(), " M=", M);
      SCOPED_TRACE(k.name);
      k.attrs.scale = 0.125f;
      k.attrs.label_smoothing = 0.2f;
      k.attrs.with_grad = true;
      k.variant = {N, 2 * N, 0, 0};
      k.loss_scale = 512.f;
      HostTensor x = rnd(t, hs.x, rng, -2, 2);
      for (int64_t n = 0; n < N; n += 3)  // ties: position P-1 repeats position 0's value
        for (int64_t c = 0; c < C; c += 2) x.set((n * P + P - 1) * C + c, x.get(n * P * C + c));
      HostTensor labels(DType::I32, {N});
      for (int64_t n = 0; n < N; ++n) labels.set(n, double(rng.below(uint64_t(M))));
      k.in = {x, rnd(t, {M, C}, rng, -0.5, 0.5), labels};
      k.out = {HostTensor(t, {N, C}), HostTensor(t, {N, M}), HostTensor(F32, {kMetricSlots}), HostTensor(t, hs.x)};
      const std::vector<HostTensor> a = run_gpu(classifier_head_cuda, k), b = run_gpu(classifier_head_cuda, k);
      // The five ops apart, each on the GPU outputs of the one before.
      Case pool = k;
      pool.in = {x};
      pool.out = {k.out[0]};
      const HostTensor p = run_gpu(global_maxpool_fwd_cuda, pool)[0];
      Case fc = k;
      fc.in = {p, k.in[1]};
      fc.out = {HostTensor(t, {N, M})};
      const HostTensor z = run_gpu(fc_fwd_cuda, fc)[0];
      Case xent = k;
      xent.in = {z, labels};
      xent.out = {k.out[1], k.out[2]};
      const std::vector<HostTensor> loss = run_gpu(softmax_xent_cuda, xent);
      Case dgrad = k;
      dgrad.in = {loss[0], k.in[1], p};
      dgrad.out = {HostTensor(t, {N, C})};
      const HostTensor dp = run_gpu(fc_bwd_data_cuda, dgrad)[0];
      Case route = k;
      route.in = {dp, x, p};
      route.out = {k.out[3]};
      const HostTensor dx = run_gpu(global_maxpool_bwd_cuda, route)[0];
      const std::vector<HostTensor> want = {p, loss[0], loss[1], dx};
      const std::vector<HostTensor> cpu = run_cpu(classifier_head_cpu, k);
      const int64_t differ = expect_the_ops_apart(a, b, want, cpu, t);
      int64_t routed = 0;  // dx entries that got a gradient: one per (sample, channel)
      for (int64_t i = 0; i < a[3].numel(); ++i) routed += a[3].get(i) != 0.0;
      // One winner per (sample, channel); a routed gradient of exactly 0 is rare, so most must be nonzero.
      EXPECT_LE(routed, N * C);
      EXPECT_GT(routed, N * C / 2);
      std::printf("[ head ] %s: %lld elements differ from the five ops apart, dx %.2e and dlogits %.2e from the CPU\n",
                  k.name.c_str(), static_cast<long long>(differ), rel_err(a[3], cpu[3]), rel_err(a[1], cpu[1]));
    }
}

// Note [the head's BatchNorm]: the head with the BatchNorm + ReLU in front
// gives the bits of BnReluApply then the plain head, on the GPU, for all six
// outputs (y is never stored, only recomputed), with and without the ReLU; the
// same bits on a second run; within tolerance of the CPU.
TEST_F(OpsGpu, ClassifierHeadWithItsBatchNormIsTheBatchNormThenTheHead) {
  Rng rng(17);
  struct HeadShape {
    Shape x;
    int64_t m;
  };
  for (DType t : {F32, F16})
    for (bool relu : {true, false})
      for (const HeadShape& hs :
           {HeadShape{{256, 3, 3, 256}, 10}, HeadShape{{7, 4, 4, 45}, 2}, HeadShape{{1101, 3, 3, 40}, 7}}) {
        const int64_t N = hs.x[0], C = hs.x[3], M = hs.m;
        Case k;
        k.name = cat(tname("BnReluClassifierHead", t), " x", hs.x.str(), " M=", M, relu ? " relu" : "");
        SCOPED_TRACE(k.name);
        k.attrs.scale = 0.125f;
        k.attrs.label_smoothing = 0.1f;
        k.attrs.with_grad = true;
        k.attrs.relu = relu;
        k.attrs.eps = 1e-5f;
        k.variant = {N, N, 0, 0};
        k.loss_scale = 256.f;
        const HostTensor x = rnd(t, hs.x, rng, -2, 3);
        Case st = k;
        st.in = {x};
        st.out = {HostTensor(F32, {2, C})};
        const HostTensor sums = run_gpu(bn_stats_cuda, st)[0];
        const HostTensor gamma = rnd(t, {C}, rng, 0.5, 1.5), beta = rnd(t, {C}, rng, -0.5, 0.5);
        HostTensor labels(DType::I32, {N});
        for (int64_t n = 0; n < N; ++n) labels.set(n, double(rng.below(uint64_t(M))));
        const HostTensor w = rnd(t, {M, C}, rng, -0.5, 0.5);
        const std::vector<HostTensor> head_out = {HostTensor(t, {N, C}), HostTensor(t, {N, M}),
                                                  HostTensor(F32, {kMetricSlots}), HostTensor(t, hs.x)};
        Case fused = k;
        fused.in = {x, w, labels, sums, gamma, beta};
        fused.out = head_out;
        fused.out.emplace_back(F32, Shape{2, C});
        fused.out.emplace_back(F32, Shape{2, C});
        const std::vector<HostTensor> a = run_gpu(bn_relu_classifier_head_cuda, fused),
                                      b = run_gpu(bn_relu_classifier_head_cuda, fused);
        Case bn = k;
        bn.in = {x, sums, gamma, beta};
        bn.out = {HostTensor(t, hs.x), HostTensor(F32, {2, C}), HostTensor(F32, {2, C})};
        const std::vector<HostTensor> y = run_gpu(bn_relu_apply_cuda, bn);
        Case head = k;
        head.in = {y[0], w, labels};
        head.out = head_out;
        std::vector<HostTensor> want = run_gpu(classifier_head_cuda, head);
        want.push_back(y[1]);
        want.push_back(y[2]);
        const std::vector<HostTensor> cpu = run_cpu(bn_relu_classifier_head_cpu, fused);
        ASSERT_EQ(a.size(), 6u);
        const int64_t differ = expect_the_ops_apart(a, b, want, cpu, t);
        std::printf("[ head + bn ] %s: %lld elements differ from BnReluApply then the head, dx %.2e from the CPU\n",
                    k.name.c_str(), static_cast<long long>(differ), rel_err(a[3], cpu[3]));
      }
}

// ================================================================ capture

// A forward/backward chain launched eagerly, then captured into one CUDA Graph
// and replayed: every replay must equal the eager results bit for bit.
TEST_F(OpsGpu, CapturedChainReplaysBitwiseLikeEager) {
  Rng rng(15);
  const DType t = F16;
  const int64_t N = 32, H = 8, W = 8, C = 16, K = 32, M = 10;
  VariantDims v{N, N, H, W};
  OpAttrs a;
  a.label_smoothing = 0.1f;
  a.scale = 0.125f;
  OpAttrs pa;  // the max pool's 2x2/s2 window
  pa.kernel = 2;
  pa.stride = 2;
  const HostTensor hx = rnd(t, {N, H, W, C}, rng), hw = rnd(t, {K, 3, 3, C}, rng, -0.3, 0.3);
  const HostTensor hg = rnd(t, {K}, rng, 0.5, 1.5), hb = rnd(t, {K}, rng, -0.5, 0.5);
  const HostTensor hfc = rnd(t, {M, K}, rng, -0.3, 0.3);
  HostTensor hl(DType::I32, {N});
  for (int64_t i = 0; i < N; ++i) hl.set(i, double(rng.below(M)));
  DevTensor x(hx), w(hw), gamma(hg), beta(hb), fcw(hfc), labels(hl);
  DevTensor y(HostTensor(t, {N, H, W, K})), sums(HostTensor(F32, {2, K})), z(HostTensor(t, {N, H, W, K}));
  DevTensor batch(HostTensor(F32, {2, K})), affine(HostTensor(F32, {2, K})), pool(HostTensor(t, {N, H / 2, W / 2, K})),
      g(HostTensor(t, {N, K}));
  DevTensor logits(HostTensor(t, {N, M})), dlogits(HostTensor(t, {N, M})), metrics(HostTensor(F32, {4}));
  DevTensor dfc(HostTensor(t, {M, K})), dg(HostTensor(t, {N, K})), dwc(HostTensor(t, {K, 3, 3, C}));
  DevTensor dpool(HostTensor(t, {N, H / 2, W / 2, K})), dz(HostTensor(t, {N, H, W, K}));
  OpAttrs ca;  // the convolutions': 3x3, stride 1, pad 1
  ca.kernel = 3;
  ca.pad = 1;
  plans_->prepare(gh_, conv_key(OpKind::ConvFwd, {hx.shape(), hw.shape()}, ca, t));
  plans_->prepare(gh_, conv_key(OpKind::ConvBwdFilter, {hx.shape(), Shape{N, H, W, K}}, ca, t));
  set_scalars(256.f);

  auto chain = [&] {
    call(conv_fwd_cuda, {x.ref(), w.ref()}, {y.ref()}, ca, v);
    call(bn_stats_cuda, {y.ref()}, {sums.ref()}, a, v);
    call(bn_relu_apply_cuda, {y.ref(), sums.ref(), gamma.ref(), beta.ref()}, {z.ref(), batch.ref(), affine.ref()}, a,
         v);
    call(maxpool_fwd_cuda, {z.ref()}, {pool.ref()}, pa, v);
    call(global_maxpool_fwd_cuda, {pool.ref()}, {g.ref()}, a, v);
    call(fc_fwd_cuda, {g.ref(), fcw.ref()}, {logits.ref()}, a, v);
    call(softmax_xent_cuda, {logits.ref(), labels.ref()}, {dlogits.ref(), metrics.ref()}, a, v);
    call(fc_bwd_weight_cuda, {g.ref(), dlogits.ref()}, {dfc.ref()}, a, v);
    call(fc_bwd_data_cuda, {dlogits.ref(), fcw.ref(), g.ref()}, {dg.ref()}, a, v);
    call(global_maxpool_bwd_cuda, {dg.ref(), pool.ref(), g.ref()}, {dpool.ref()}, a, v);
    call(maxpool_bwd_cuda, {dpool.ref(), z.ref(), pool.ref()}, {dz.ref()}, pa, v);
    call(conv_bwd_filter_cuda, {x.ref(), dz.ref()}, {dwc.ref()}, ca, v);
  };
  std::vector<DevTensor*> outs{&y,       &sums,    &z,   &batch, &affine, &pool, &g,  &logits,
                               &dlogits, &metrics, &dfc, &dg,    &dpool,  &dz,   &dwc};
  expect_replays_like_eager(chain, outs);
}

}  // namespace
}  // namespace tr
