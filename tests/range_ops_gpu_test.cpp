// GPU RANGE ops against the CPU reference: every op on random data (outputs
// poisoned first), bit-for-bit where the math is identical (Note [range op
// rounding]), LARS within 1e-6 relative; determinism (two runs bitwise equal);
// and a CUDA Graph capture of a whole AMP + optimizer step replayed several times.
// Skips without a CUDA device.
#include "tests/range_ops_gpu_fixture.h"

namespace tr {
namespace {

using namespace gpu_test;

TEST_F(RangeOpsGpu, LerpAndAccumulateMatchCpuBitwise) {
  std::mt19937 rng(11);
  for (int64_t n : {int64_t(1), int64_t(7), int64_t(1024), int64_t(1000003)}) {
    std::vector<float> d(n), s(n);
    std::normal_distribution<float> nd(0.f, 3.f);
    for (auto& x : d) x = nd(rng);
    for (auto& x : s) x = nd(rng);
    DevBuf<float> gd(d), gs(s);
    RangeAttrs a;
    a.t = 0.0173f;
    set_scalars(TrainScalars{});
    run_gpu(lerp_cuda, {operand(gd), operand(gs)}, a);
    run_cpu(lerp_cpu, {operand(d), operand(s)}, a);
    expect_bitwise(gd.download(), d, "lerp");
    run_gpu(accumulate_cuda, {operand(gd), operand(gs)}, a);
    run_cpu(accumulate_cpu, {operand(d), operand(s)}, a);
    expect_bitwise(gd.download(), d, "accumulate");
    // skip_on_inf with found_inf set: unchanged on both sides.
    TrainScalars inf;
    inf.found_inf = 1;
    set_scalars(inf);
    a.skip_on_inf = true;
    run_gpu(lerp_cuda, {operand(gd), operand(gs)}, a);
    run_cpu(lerp_cpu, {operand(d), operand(s)}, a);
    expect_bitwise(gd.download(), d, "lerp skipped");
    a.skip_on_inf = false;
  }
}

// Floats across the whole half range: subnormals, rounding ties, overflow.
std::vector<float> half_range_floats(std::mt19937& rng, int64_t n) {
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::uniform_int_distribution<int> e(-28, 17);
  std::vector<float> v(n);
  for (auto& x : v) x = std::ldexp(u(rng), e(rng));
  if (n > 3) {
    v[0] = 1.f + 1.f / 2048.f;  // tie: rounds to even
    v[1] = 65520.f;             // overflows to inf
    v[2] = -INFINITY;
  }
  return v;
}

TEST_F(RangeOpsGpu, CastMatchesCpuBitwiseBothWays) {
  std::mt19937 rng(12);
  for (int64_t n : {int64_t(3), int64_t(4096 + 5), int64_t(777777)}) {
    std::vector<float> f = half_range_floats(rng, n);
    std::vector<half_t> h(n, half_t{0xffff});
    DevBuf<float> gf(f);
    DevBuf<half_t> gh(h);
    gh.poison();
    run_gpu(cast_cuda, {operand(gf), operand(gh)});
    run_cpu(cast_cpu, {operand(f), operand(h)});
    expect_bitwise(gh.download(), h, "f32->f16");

    std::uniform_int_distribution<int> bits(0, 0xffff);
    for (auto& x : h) {
      do x.bits = uint16_t(bits(rng));
      while ((x.bits & 0x7c00) == 0x7c00 && (x.bits & 0x3ff) != 0);  // no NaN payloads
    }
    std::vector<float> back(n, 0.f);
    gh.upload(h);
    DevBuf<float> gb(back);
    gb.poison();
    run_gpu(cast_cuda, {operand(gh), operand(gb)});
    run_cpu(cast_cpu, {operand(h), operand(back)});
    expect_bitwise(gb.download(), back, "f16->f32");

    // Same dtype: a copy.
    DevBuf<float> gc(back);
    gc.poison();
    run_gpu(cast_cuda, {operand(gb), operand(gc)});
    expect_bitwise(gc.download(), back, "f32->f32");
  }
}

// bf16 keeps f32's exponent: floats across the whole f32 range, subnormals,
// ties of the 16 bits dropped (to even), the largest finite floats (which
// round to inf) and infinities, both ways, bit for bit with the CPU's
// float_to_bf16; NaN becomes the canonical 0x7fff on both sides.
TEST_F(RangeOpsGpu, BF16CastMatchesCpuBitwiseBothWays) {
  std::mt19937 rng(13);
  std::uniform_int_distribution<uint32_t> any(0, 0xffffffffu);
  for (int64_t n : {int64_t(5), int64_t(4096 + 3), int64_t(500009)}) {
    std::vector<float> f(n);
    for (auto& x : f) {
      uint32_t b = any(rng);
      if (b % 4 == 0) b = (b & 0xffff0000u) | 0x8000u;  // a tie in one case of four
      std::memcpy(&x, &b, 4);
    }
    f[0] = std::numeric_limits<float>::max();
    f[1] = -INFINITY;
    f[2] = NAN;
    f[3] = std::numeric_limits<float>::denorm_min();
    std::vector<bf16_t> h(n, bf16_t{0x1234});
    DevBuf<float> gf(f);
    DevBuf<bf16_t> gh(h);
    gh.poison();
    run_gpu(cast_cuda, {operand(gf), operand(gh)});
    run_cpu(cast_cpu, {operand(f), operand(h)});
    expect_bitwise(gh.download(), h, "f32->bf16");
    EXPECT_EQ(h[0].bits, 0x7f80) << "the largest float rounds to inf";
    EXPECT_EQ(h[2].bits, 0x7fff) << "NaN";

    std::vector<float> back(n, 0.f);
    DevBuf<float> gb(back);
    gb.poison();
    run_gpu(cast_cuda, {operand(gh), operand(gb)});
    run_cpu(cast_cpu, {operand(h), operand(back)});
    expect_bitwise(gb.download(), back, "bf16->f32");
  }
}

TEST_F(RangeOpsGpu, CastNanStaysNan) {
  std::vector<float> f(8, NAN);
  std::vector<half_t> h(8);
  DevBuf<float> gf(f);
  DevBuf<half_t> gh(h);
  run_gpu(cast_cuda, {operand(gf), operand(gh)});
  for (half_t x : gh.download()) EXPECT_TRUE((x.bits & 0x7c00) == 0x7c00 && (x.bits & 0x3ff) != 0);
}

// Note [the check's flag]: the check only sets pending_inf; a poisoned flag
// stays as it was on both sides when nothing is found.
TEST_F(RangeOpsGpu, CheckFiniteMatchesCpuAndOnlySetsThePendingFlag) {
  std::mt19937 rng(13);
  const int64_t n32 = 500001, n16 = 70001;
  std::vector<float> a = half_range_floats(rng, n32);
  a[2] = 1.f;  // clean
  std::vector<half_t> b(n16, half_t{0x3c00});
  const float bad32[] = {NAN, INFINITY, -INFINITY};
  const uint16_t bad16[] = {0x7c00, 0xfc00, 0x7e00};
  struct Case {
    int op;      // -1: clean, 0: f32 operand, 1: f16 operand
    int64_t at;  // element
    int kind;
  };
  std::vector<Case> cases = {{-1, 0, 0}};
  for (int k = 0; k < 3; ++k) {
    cases.push_back({0, n32 - 1, k});
    cases.push_back({0, 12345, k});
    cases.push_back({1, n16 - 1, k});
    cases.push_back({1, 0, k});
  }
  for (const Case& cs : cases) {
    std::vector<float> a2 = a;
    std::vector<half_t> b2 = b;
    if (cs.op == 0) a2[cs.at] = bad32[cs.kind];
    if (cs.op == 1) b2[cs.at].bits = bad16[cs.kind];
    DevBuf<float> ga(a2);
    DevBuf<half_t> gb(b2);
    TrainScalars s;
    s.found_inf = 7;  // not the check's to touch
    set_scalars(s);
    run_gpu(check_finite_cuda, {operand(ga), operand(gb)});
    run_cpu(check_finite_cpu, {operand(a2), operand(b2)});
    EXPECT_EQ(host_scalars_.pending_inf, cs.op >= 0 ? 1 : 0);
    EXPECT_EQ(host_scalars_.found_inf, 7);
    expect_scalars(gpu_scalars(), host_scalars_, "check_finite");
  }
}

// Note [the check in the casts]: the f16 -> f32 cast with the check sets the
// flag where CheckFinite does, on the first, a middle and the last element of
// several tiles, and its output is the plain cast's.
TEST_F(RangeOpsGpu, CastWithTheCheckFlagsWhatCheckFiniteFlags) {
  const int64_t n = 70001;
  RangeAttrs check;
  check.check_finite = true;
  for (int64_t at : {int64_t(-1), int64_t(0), int64_t(4099), n - 1})
    for (uint16_t bad : {uint16_t(0x7c00), uint16_t(0xfe00)}) {
      std::vector<half_t> h(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) h[size_t(i)].bits = uint16_t(0x3c00 + i % 977);  // finite
      if (at >= 0) h[size_t(at)].bits = bad;
      std::vector<float> f(size_t(n), 0.f);
      DevBuf<half_t> gh(h);
      DevBuf<float> gf(f);
      set_scalars(TrainScalars{});
      run_gpu(cast_cuda, {operand(gh), operand(gf)}, check);
      run_cpu(cast_cpu, {operand(h), operand(f)}, check);
      EXPECT_EQ(host_scalars_.pending_inf, at >= 0 ? 1 : 0) << at;
      expect_scalars(gpu_scalars(), host_scalars_, "cast with the check");
      std::vector<float> got = gf.download();
      if (at >= 0) {  // a NaN's payload is the platform's: compare its class, then the rest bitwise
        const size_t a = size_t(at);
        EXPECT_EQ(std::isnan(got[a]), std::isnan(f[a])) << at;
        EXPECT_EQ(std::isinf(got[a]), std::isinf(f[a])) << at;
        EXPECT_FALSE(std::isfinite(got[a])) << at;
        got[a] = f[a] = 0.f;
      }
      expect_bitwise(got, f, "cast with the check");
    }
}

TEST_F(RangeOpsGpu, UnscaleGradsMatchesCpuBitwiseOverSeveralOperands) {
  std::mt19937 rng(14);
  std::vector<std::vector<float>> h;
  for (int64_t n : {5, 4096, 300007, 33}) h.push_back(half_range_floats(rng, n));
  // 20 operands: more than one launch's table.
  while (h.size() < 20) h.push_back(half_range_floats(rng, 100 + h.size()));
  std::vector<std::unique_ptr<DevBuf<float>>> d;
  std::vector<RangeOperand> gops, cops;
  for (auto& v : h) {
    d.push_back(std::make_unique<DevBuf<float>>(v));
    gops.push_back(operand(*d.back()));
    cops.push_back(operand(v));
  }
  for (int inf : {0, 1}) {
    TrainScalars s;
    s.loss_scale = 3.f * 1024.f;  // 1/scale is inexact: exercises the rounding
    s.found_inf = inf;
    set_scalars(s);
    run_gpu(unscale_grads_cuda, gops);
    run_cpu(unscale_grads_cpu, cops);
    for (size_t k = 0; k < h.size(); ++k) expect_bitwise(d[k]->download(), h[k], "unscale");
  }
}

TEST_F(RangeOpsGpu, ScalarOpsMatchCpuStepByStep) {
  std::vector<float> table = {0.1f, 0.2f, 0.3f, 0.4f};
  DevBuf<float> gt(table);
  TrainScalars s;
  s.loss_scale = 65536.f;
  s.schedule_len = 4;
  set_scalars(s);
  std::vector<float> epoch = {1e8f, 0.1f, 3.f, 0.f}, step = {1.f, 0.2f, 0.3f, 0.f};
  DevBuf<float> g_epoch(epoch), g_step(step);
  RangeAttrs a;
  a.growth_interval = 2;
  const int infs[] = {0, 0, 1, 0, 1, 1, 0, 0, 0, 0, 0};
  int k = 0;
  for (int inf : infs) {
    // AdvanceStep then UpdateLossScale, and every other step the two in one
    // with the metrics added (Note [the step's scalars in one kernel]).
    a.update_scale = k++ % 2 == 1;
    TrainScalars g = gpu_scalars();
    g.pending_inf = inf;
    CUDA_OK(cudaMemcpy(d_scalars_, &g, sizeof(g), cudaMemcpyHostToDevice));
    host_scalars_.pending_inf = inf;
    if (a.update_scale) {
      run_gpu(advance_step_cuda, {operand(gt), operand(g_epoch), operand(g_step)}, a);
      run_cpu(advance_step_cpu, {operand(table), operand(epoch), operand(step)}, a);
      expect_bitwise(g_epoch.download(), epoch, "metrics");
    } else {
      run_gpu(advance_step_cuda, {operand(gt)}, a);
      run_cpu(advance_step_cpu, {operand(table)}, a);
    }
    if (!a.update_scale) {
      run_gpu(update_loss_scale_cuda, {}, a);
      run_cpu(update_loss_scale_cpu, {}, a);
    }
    EXPECT_EQ(host_scalars_.found_inf, inf);
    expect_scalars(gpu_scalars(), host_scalars_, "scalars");
  }
  EXPECT_EQ(host_scalars_.step, 8);
  EXPECT_EQ(host_scalars_.skipped_steps, 3);
  EXPECT_EQ(host_scalars_.lr, 0.4f);
  a.dynamic_scale = false;
  run_gpu(update_loss_scale_cuda, {}, a);
  run_cpu(update_loss_scale_cpu, {}, a);
  expect_scalars(gpu_scalars(), host_scalars_, "fixed scale");
}

TEST_F(RangeOpsGpu, ClearAndCopyInMatchCpu) {
  std::vector<float> f(1001, 3.f);
  std::vector<half_t> h(333, half_t{0x3c00});
  DevBuf<float> gf(f);
  DevBuf<half_t> gh(h);
  run_gpu(clear_cuda, {operand(gf), operand(gh)});
  for (float x : gf.download()) EXPECT_EQ(x, 0.f);
  for (half_t x : gh.download()) EXPECT_EQ(x.bits, 0);

  uint8_t* pinned_img = nullptr;
  int32_t* pinned_lab = nullptr;
  CUDA_OK(cudaMallocHost(&pinned_img, 3000));
  CUDA_OK(cudaMallocHost(&pinned_lab, 10 * sizeof(int32_t)));
  for (int i = 0; i < 3000; ++i) pinned_img[i] = uint8_t(i * 7);
  for (int i = 0; i < 10; ++i) pinned_lab[i] = i * 3;
  HostBatch staging[2] = {{nullptr, nullptr}, {pinned_img, pinned_lab}};
  env_.staging = staging;
  uint8_t* d_img = nullptr;
  int32_t* d_lab = nullptr;
  CUDA_OK(cudaMalloc(&d_img, 3000));
  CUDA_OK(cudaMalloc(&d_lab, 10 * sizeof(int32_t)));
  RangeAttrs a;
  a.slot = 1;
  run_gpu(copy_in_cuda, {{d_img, DType::U8, 3000}, {d_lab, DType::I32, 10}}, a);
  std::vector<uint8_t> img(3000);
  std::vector<int32_t> lab(10);
  CUDA_EXPECT(cudaMemcpy(img.data(), d_img, 3000, cudaMemcpyDeviceToHost));
  CUDA_EXPECT(cudaMemcpy(lab.data(), d_lab, 40, cudaMemcpyDeviceToHost));
  EXPECT_TRUE(bitwise_equal(img.data(), pinned_img, 3000));
  EXPECT_TRUE(bitwise_equal(lab.data(), pinned_lab, 40));
  env_.staging = nullptr;
  cudaFree(d_img);
  cudaFree(d_lab);
  cudaFreeHost(pinned_img);
  cudaFreeHost(pinned_lab);
}

TEST_F(RangeOpsGpu, CapturedAmpStepReplaysLikeTheCpu) {
  std::mt19937 rng(31);
  const Layout l(rng, 30, true);
  const std::vector<Segment>* sg = &l.segs;
  std::vector<float> p = l.random(rng, -1, 1), g32(l.elems, 0.f), m(l.elems, 0.f), v(l.elems, 0.f), ema = p,
                     metrics(4, 0.f), metric_step = {1.5f, 2.f, 3.f, 0.f};
  std::vector<half_t> g16(l.elems), p16(l.elems);
  std::vector<float> table = {0.01f, 0.02f, 0.03f};
  DevBuf<float> d_p(p), d_g32(g32), d_m(m), d_v(v), d_ema(ema), d_metrics(metrics), d_ms(metric_step), d_table(table);
  DevBuf<half_t> d_g16(g16), d_p16(p16);
  TrainScalars s0;
  s0.loss_scale = 1024.f;
  s0.schedule_len = 3;
  set_scalars(s0);

  RangeAttrs a = opt_attrs();
  a.t = 0.1f;
  a.skip_on_inf = true;
  a.growth_interval = 2;
  struct Node {
    RangeFn gpu, cpu;
    std::vector<RangeOperand> g_ops, c_ops;
  };
  const std::vector<Node> nodes = {
      {clear_cuda, clear_cpu, {operand(d_g32)}, {operand(g32)}},
      {cast_cuda, cast_cpu, {operand(d_g16), operand(d_g32)}, {operand(g16), operand(g32)}},
      {check_finite_cuda, check_finite_cpu, {operand(d_g32)}, {operand(g32)}},
      {advance_step_cuda, advance_step_cpu, {operand(d_table)}, {operand(table)}},
      {unscale_grads_cuda, unscale_grads_cpu, {operand(d_g32)}, {operand(g32)}},
      {update_loss_scale_cuda, update_loss_scale_cpu, {}, {}},
      {adamw_cuda,
       adamw_cpu,
       {operand(d_p, sg), operand(d_g32, sg), operand(d_m, sg), operand(d_v, sg)},
       {operand(p, sg), operand(g32, sg), operand(m, sg), operand(v, sg)}},
      {lerp_cuda, lerp_cpu, {operand(d_ema), operand(d_p)}, {operand(ema), operand(p)}},
      {cast_cuda, cast_cpu, {operand(d_p), operand(d_p16)}, {operand(p), operand(p16)}},
      {accumulate_cuda, accumulate_cpu, {operand(d_metrics), operand(d_ms)}, {operand(metrics), operand(metric_step)}},
  };

  // Warm-up call outside capture is not needed: the launchers must be capturable as they are.
  cudaGraph_t graph = nullptr;
  CUDA_OK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeGlobal));
  for (const Node& n : nodes) {
    RangeCall c{n.g_ops.data(), int(n.g_ops.size()), &a, &env_};
    n.gpu(c);
  }
  CUDA_OK(cudaStreamEndCapture(stream_, &graph));
  cudaGraphExec_t exec = nullptr;
  CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));

  for (int it = 0; it < 5; ++it) {
    std::normal_distribution<float> nd(0.f, 200.f);
    for (int64_t i = 0; i < l.elems; ++i) g16[i] = l.in_seg[i] ? float_to_half(nd(rng)) : half_t{};
    if (it == 2) g16[l.segs.back().offset + l.segs.back().elems - 1].bits = 0x7c00;  // overflow step
    d_g16.upload(g16);
    CUDA_OK(cudaGraphLaunch(exec, stream_));
    CUDA_OK(cudaStreamSynchronize(stream_));
    for (const Node& n : nodes) {
      RangeCall c{n.c_ops.data(), int(n.c_ops.size()), &a, &host_env_};
      n.cpu(c);
    }
    expect_scalars(gpu_scalars(), host_scalars_, "scalars");
    expect_bitwise(d_p.download(), p, "param");
    expect_bitwise(d_m.download(), m, "m");
    expect_bitwise(d_v.download(), v, "v");
    expect_bitwise(d_ema.download(), ema, "ema");
    expect_bitwise(d_p16.download(), p16, "param f16");
    expect_bitwise(d_metrics.download(), metrics, "metrics");
  }
  EXPECT_EQ(host_scalars_.skipped_steps, 1);
  EXPECT_EQ(host_scalars_.step, 4);
  CUDA_EXPECT(cudaGraphExecDestroy(exec));
  CUDA_EXPECT(cudaGraphDestroy(graph));
}

// LARS in a captured graph, three groups on three streams at once (as
// LARS_FC/FIRST_CONV/DEEP_CONV run): no shared scratch, so results equal the
// groups run one by one.
TEST_F(RangeOpsGpu, LarsGroupsOnConcurrentStreamsMatchSerialRuns) {
  std::mt19937 rng(32);
  const Layout l(rng, 36, true);
  std::vector<float> p = l.random(rng, -1, 1), g = l.random(rng, -1, 1), mo = l.random(rng, -0.1f, 0.1f);
  std::vector<Segment> groups[3];
  for (size_t i = 0; i < l.segs.size(); ++i) groups[i % 3].push_back(l.segs[i]);
  TrainScalars s;
  s.lr = 0.1f;
  set_scalars(s);
  const RangeAttrs a = opt_attrs();

  DevBuf<float> cp(p), cgr(g), cm(mo);  // concurrent, captured
  cudaStream_t side[2];
  cudaEvent_t fork, join[2];
  CUDA_OK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
  for (int i = 0; i < 2; ++i) {
    CUDA_OK(cudaStreamCreateWithFlags(&side[i], cudaStreamNonBlocking));
    CUDA_OK(cudaEventCreateWithFlags(&join[i], cudaEventDisableTiming));
  }
  cudaGraph_t graph = nullptr;
  CUDA_OK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeGlobal));
  CUDA_OK(cudaEventRecord(fork, stream_));
  ExecEnv envs[3] = {env_, env_, env_};
  for (int i = 0; i < 2; ++i) {
    CUDA_OK(cudaStreamWaitEvent(side[i], fork, 0));
    envs[i + 1].stream = side[i];
  }
  for (int k = 0; k < 3; ++k) {
    std::vector<RangeOperand> ops = {operand(cp, &groups[k]), operand(cgr, &groups[k]), operand(cm, &groups[k])};
    RangeCall c{ops.data(), 3, &a, &envs[k]};
    lars_cuda(c);
  }
  for (int i = 0; i < 2; ++i) {
    CUDA_OK(cudaEventRecord(join[i], side[i]));
    CUDA_OK(cudaStreamWaitEvent(stream_, join[i], 0));
  }
  CUDA_OK(cudaStreamEndCapture(stream_, &graph));
  cudaGraphExec_t exec = nullptr;
  CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
  CUDA_OK(cudaGraphLaunch(exec, stream_));
  CUDA_OK(cudaStreamSynchronize(stream_));
  // Serial, eager, after the capture (so that in a fresh process the launcher's
  // one-time setup ran inside the capture).
  DevBuf<float> sp(p), sgr(g), sm(mo);
  for (auto& grp : groups) run_gpu(lars_cuda, {operand(sp, &grp), operand(sgr, &grp), operand(sm, &grp)}, a);
  expect_bitwise(cp.download(), sp.download(), "param");
  expect_bitwise(cm.download(), sm.download(), "momentum");
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  for (int i = 0; i < 2; ++i) {
    cudaStreamDestroy(side[i]);
    cudaEventDestroy(join[i]);
  }
  cudaEventDestroy(fork);
}

}  // namespace
}  // namespace tr
