// The fused multi-tensor optimizers on the GPU (SGD with Nesterov momentum,
// AdamW, LARS) against the CPU reference, bitwise where the math is identical,
// LARS within 1e-6; two runs bitwise equal; a step with a found Inf changes
// nothing. Skips without a CUDA device.
#include <cmath>
#include <cstdio>

#include "framework/ops/kernels/range_util.h"
#include "framework/ops/range/grad_norm.h"
#include "tests/range_ops_gpu_fixture.h"

namespace tr {
namespace {

using namespace gpu_test;

enum class Opt { Sgd, AdamW, Lars };

struct OptState {
  std::vector<float> p, g, a, b;  // a: momentum / m, b: v (AdamW)
};

class RangeOpsGpuOptim : public RangeOpsGpu {
 protected:
  // One step on both sides; gpu buffers are uploaded from/downloaded to `gpu`.
  void step(Opt opt, const Layout& l, OptState& cpu, OptState& gpu, int t) {
    TrainScalars s;
    s.lr = 0.05f;
    s.step = t;
    set_scalars(s);
    const RangeAttrs a = opt_attrs();
    DevBuf<float> p(gpu.p), g(gpu.g), ma(gpu.a), vb(gpu.b);
    const std::vector<Segment>* sg = &l.segs;
    switch (opt) {
      case Opt::Sgd:
        run_gpu(sgd_nesterov_cuda, {operand(p, sg), operand(g, sg), operand(ma, sg)}, a);
        run_cpu(sgd_nesterov_cpu, {operand(cpu.p, sg), operand(cpu.g, sg), operand(cpu.a, sg)}, a);
        break;
      case Opt::AdamW:
        run_gpu(adamw_cuda, {operand(p, sg), operand(g, sg), operand(ma, sg), operand(vb, sg)}, a);
        run_cpu(adamw_cpu, {operand(cpu.p, sg), operand(cpu.g, sg), operand(cpu.a, sg), operand(cpu.b, sg)}, a);
        break;
      case Opt::Lars:
        run_gpu(lars_cuda, {operand(p, sg), operand(g, sg), operand(ma, sg)}, a);
        run_cpu(lars_cpu, {operand(cpu.p, sg), operand(cpu.g, sg), operand(cpu.a, sg)}, a);
        break;
    }
    gpu.p = p.download();
    gpu.a = ma.download();
    gpu.b = vb.download();
  }

  void compare(Opt opt, const Layout& l, uint32_t seed) {
    std::mt19937 rng(seed);
    OptState cpu;
    cpu.p = l.random(rng, -1, 1);
    cpu.a = l.random(rng, -0.1f, 0.1f);
    cpu.b = l.random(rng, 0, 0.01f);
    OptState gpu = cpu;
    for (int t = 1; t <= 3; ++t) {
      cpu.g = l.random(rng, -1, 1);
      gpu.g = cpu.g;
      step(opt, l, cpu, gpu, t);
      if (opt != Opt::Lars) {
        expect_bitwise(gpu.p, cpu.p, "param");
        expect_bitwise(gpu.a, cpu.a, "state a");
        expect_bitwise(gpu.b, cpu.b, "state b");
      } else {
        // Norms are summed in a different order: allow 1e-6 relative, count exact matches. The double sums
        // differ by about 1e-16, so the f32 norms and trust ratio are the same bits unless a sum lies that
        // close to an f32 rounding point; then the trust is an ulp or two (2e-7) apart, and an element moves
        // by 2e-7 of its step, within 1e-6 of itself where it is not far smaller than its step. Another
        // tensor's trust is percents off. (Below 1e-6 the error is measured against 1e-6.)
        size_t exact = 0;
        double worst = 0;
        for (int64_t i = 0; i < l.elems; ++i) {
          for (auto [x, y] : {std::pair{gpu.p[i], cpu.p[i]}, std::pair{gpu.a[i], cpu.a[i]}}) {
            exact += bitwise_equal(&x, &y, 4);
            worst = std::max(worst, std::fabs(double(x) - y) / std::max(1e-6, std::fabs(double(y))));
          }
          ASSERT_TRUE(bitwise_equal(&gpu.b[i], &cpu.b[i], 4)) << "untouched state at " << i;
        }
        EXPECT_LE(worst, 1e-6) << "step " << t;
        RecordProperty("lars_exact_fraction_x1000", int(1000 * exact / (2 * l.elems)));
        // For padding the GPU must match exactly (zeros).
        for (int64_t i = 0; i < l.elems; ++i)
          if (!l.in_seg[i]) {
            ASSERT_EQ(gpu.p[i], 0.f) << i;
          }
        gpu.p = cpu.p;  // continue from the same state
        gpu.a = cpu.a;
      }
    }
  }

  // Two GPU runs from the same state give the same bits.
  void determinism(Opt opt, const Layout& l, uint32_t seed) {
    std::mt19937 rng(seed);
    OptState s0;
    s0.p = l.random(rng, -1, 1);
    s0.g = l.random(rng, -1, 1);
    s0.a = l.random(rng, -0.1f, 0.1f);
    s0.b = l.random(rng, 0, 0.01f);
    OptState c1 = s0, g1 = s0, c2 = s0, g2 = s0;
    step(opt, l, c1, g1, 2);
    step(opt, l, c2, g2, 2);
    expect_bitwise(g1.p, g2.p, "determinism param");
    expect_bitwise(g1.a, g2.a, "determinism a");
    expect_bitwise(g1.b, g2.b, "determinism b");
  }
};

TEST_F(RangeOpsGpuOptim, SgdNesterovMatchesCpuBitwise) {
  std::mt19937 rng(21);
  compare(Opt::Sgd, Layout(rng, 24, true), 1);
  compare(Opt::Sgd, Layout(rng, 300, false), 2);  // more segments than one launch holds
}

// Note [optimizer tail]: SgdNesterov with the unscale, the EMA, the f16
// compute copy and BatchNorm's statistics folded in, on the GPU, gives the
// bits of the CPU running the unfused ops one after another: UnscaleGrads,
// SgdNesterov, Lerp, Cast, and the statistics' two Lerps. At a power-of-two
// loss scale and at 3 (where 1/scale rounds); with more segments than one
// launch holds (the statistics ride in the first), and with no statistics;
// with the EMA and without one (attrs.ema false: neither EMA operand).
TEST_F(RangeOpsGpuOptim, SgdWithItsTailMatchesTheUnfusedOpsOnTheCpu) {
  std::mt19937 rng(26);
  int checked = 0;
  for (float scale : {1024.f, 3.f})
    for (bool big : {true, false})
      for (bool with_ema : {true, false}) {
        const Layout l(rng, big ? 24 : 300, big);
        const std::vector<Segment>* sg = &l.segs;
        TrainScalars s;
        s.lr = 0.05f;
        s.step = 1;
        s.loss_scale = scale;
        s.grad_unscale = range::unscale_factor(scale);  // as AdvanceStep records it
        set_scalars(s);
        OptState cpu;
        cpu.p = l.random(rng, -1, 1);
        cpu.g = l.random(rng, -scale, scale);
        cpu.a = l.random(rng, -0.1f, 0.1f);
        cpu.b = l.random(rng, -1, 1);  // the EMA
        std::vector<half_t> cpu16(size_t(l.elems), half_t{});
        DevBuf<float> p(cpu.p), g(cpu.g), v(cpu.a), ema(cpu.b);
        DevBuf<half_t> p16(cpu16);
        const int64_t n_bn = big ? 70001 : 3;
        std::vector<float> run(static_cast<size_t>(n_bn)), batch(static_cast<size_t>(n_bn)),
            run_ema(static_cast<size_t>(n_bn));
        for (auto* x : {&run, &batch, &run_ema})
          for (float& y : *x) y = std::uniform_real_distribution<float>(-2.f, 2.f)(rng);
        DevBuf<float> g_run(run), g_batch(batch), g_run_ema(run_ema);
        RangeAttrs a = opt_attrs();
        a.unscale = true;
        a.ema = with_ema;
        a.ema_t = 0.01f;
        a.bn_stats = scale == 3.f;
        a.t = 0.1f;
        std::vector<RangeOperand> ops = {operand(p, sg), operand(g, sg), operand(v, sg)};
        if (with_ema) ops.push_back(operand(ema, sg));
        ops.push_back(operand(p16, sg));
        if (a.bn_stats) {
          ops.push_back(operand(g_run));
          ops.push_back(operand(g_batch));
          if (with_ema) ops.push_back(operand(g_run_ema));
          RangeAttrs bn;
          bn.t = a.t;
          run_cpu(lerp_cpu, {operand(run), operand(batch)}, bn);
          bn.t = a.ema_t;
          if (with_ema) run_cpu(lerp_cpu, {operand(run_ema), operand(run)}, bn);
        }
        run_gpu(sgd_nesterov_cuda, ops, a);
        expect_bitwise(g_run.download(), run, "BatchNorm running statistics");
        expect_bitwise(g_run_ema.download(), run_ema, "their EMA (untouched without one)");
        RangeAttrs lerp;
        lerp.t = a.ema_t;
        lerp.skip_on_inf = true;
        run_cpu(unscale_grads_cpu, {operand(cpu.g, sg)});
        run_cpu(sgd_nesterov_cpu, {operand(cpu.p, sg), operand(cpu.g, sg), operand(cpu.a, sg)}, opt_attrs());
        if (with_ema) run_cpu(lerp_cpu, {operand(cpu.b, sg), operand(cpu.p, sg)}, lerp);
        run_cpu(cast_cpu, {operand(cpu.p, sg), operand(cpu16, sg)});
        expect_bitwise(p.download(), cpu.p, "param");
        expect_bitwise(v.download(), cpu.a, "momentum");
        expect_bitwise(ema.download(), cpu.b, "ema");
        const std::vector<half_t> got16 = p16.download();
        for (const Segment& seg : l.segs)
          for (int64_t i = seg.offset; i < seg.offset + seg.elems; ++i, ++checked)
            ASSERT_TRUE(bitwise_equal(&got16[size_t(i)], &cpu16[size_t(i)], 2)) << "f16 copy at " << i;
      }
  std::printf(
      "[ optimizer tail ] SgdNesterov + unscale + EMA (or none) + f16 copy + BatchNorm statistics on the GPU: %d "
      "parameters, the bits of the six ops (four without the EMA) on the CPU\n",
      checked);
}

TEST_F(RangeOpsGpuOptim, AdamWMatchesCpuBitwise) {
  std::mt19937 rng(22);
  compare(Opt::AdamW, Layout(rng, 24, true), 3);
  compare(Opt::AdamW, Layout(rng, 300, false), 4);
}

TEST_F(RangeOpsGpuOptim, LarsMatchesCpuWithinOneMillionth) {
  std::mt19937 rng(23);
  compare(Opt::Lars, Layout(rng, 24, true), 5);
  compare(Opt::Lars, Layout(rng, 300, false), 6);
}

TEST_F(RangeOpsGpuOptim, LarsZeroNormSegmentsMatchCpu) {
  std::mt19937 rng(24);
  Layout l(rng, 6, false);
  for (Segment& s : l.segs) s.decay = true;
  OptState cpu;
  cpu.p = l.random(rng, -1, 1);
  cpu.g = l.random(rng, -1, 1);
  cpu.a = l.random(rng, -0.1f, 0.1f);
  cpu.b = l.random(rng, 0, 1);
  for (int64_t i = l.segs[1].offset; i < l.segs[1].offset + l.segs[1].elems; ++i) cpu.p[i] = 0.f;
  for (int64_t i = l.segs[3].offset; i < l.segs[3].offset + l.segs[3].elems; ++i) cpu.g[i] = 0.f;
  OptState gpu = cpu;
  step(Opt::Lars, l, cpu, gpu, 1);
  // As in compare(): 1e-6 relative holds a trust ratio an ulp or two apart; the zero-norm segments get trust 1
  // on both sides, and the 1e-30 floor demands that exact zeros stay exact.
  for (int64_t i = 0; i < l.elems; ++i) {
    ASSERT_NEAR(gpu.p[i], cpu.p[i], 1e-6 * (std::fabs(cpu.p[i]) + 1e-30)) << i;
    ASSERT_NEAR(gpu.a[i], cpu.a[i], 1e-6 * (std::fabs(cpu.a[i]) + 1e-30)) << i;
  }
}

TEST_F(RangeOpsGpuOptim, TwoRunsAreBitwiseEqual) {
  std::mt19937 rng(25);
  const Layout l(rng, 40, true);
  determinism(Opt::Sgd, l, 7);
  determinism(Opt::AdamW, l, 8);
  determinism(Opt::Lars, l, 9);
}

TEST_F(RangeOpsGpuOptim, AFoundInfStepChangesNothing) {
  std::mt19937 rng(26);
  const Layout l(rng, 10, true);
  OptState s0;
  s0.p = l.random(rng, -1, 1);
  s0.g = l.random(rng, -1, 1);
  s0.a = l.random(rng, -0.1f, 0.1f);
  s0.b = l.random(rng, 0, 0.01f);
  for (Opt opt : {Opt::Sgd, Opt::AdamW, Opt::Lars}) {
    DevBuf<float> p(s0.p), g(s0.g), ma(s0.a), vb(s0.b);
    TrainScalars s;
    s.lr = 0.1f;
    s.step = 2;
    s.found_inf = 1;
    set_scalars(s);
    const RangeAttrs a = opt_attrs();
    const std::vector<Segment>* sg = &l.segs;
    if (opt == Opt::Sgd) run_gpu(sgd_nesterov_cuda, {operand(p, sg), operand(g, sg), operand(ma, sg)}, a);
    if (opt == Opt::AdamW) run_gpu(adamw_cuda, {operand(p, sg), operand(g, sg), operand(ma, sg), operand(vb, sg)}, a);
    if (opt == Opt::Lars) run_gpu(lars_cuda, {operand(p, sg), operand(g, sg), operand(ma, sg)}, a);
    expect_bitwise(p.download(), s0.p, "param");
    expect_bitwise(ma.download(), s0.a, "state a");
    expect_bitwise(vb.download(), s0.b, "state b");
  }
}

// ---------------------------------------------------------------- capture

// A whole AMP step captured once into a CUDA Graph and replayed with new
// gradients (one of them overflowing): the captured launchers read every
// per-step value from device memory, so replays track the CPU step by step.
// GradNorm: the CPU's norm within the f32 rounding of two double sums in
// other orders, the same scale formula, and two GPU runs give the same bits;
// AdamW with clip on the GPU gives the CPU's bits for the same scale.
TEST_F(RangeOpsGpuOptim, GradNormMatchesTheCpuAndRepeatsItsBits) {
  std::mt19937 rng(24);
  const Layout l(rng, 40, true);
  std::vector<float> g = l.random(rng, -1, 1);
  std::vector<double> hp(kGradNormPartials, 0.0);
  DevBuf<float> dg(g);
  DevBuf<double> dp(hp);
  RangeAttrs a;
  a.max_norm = 10.f;
  set_scalars(TrainScalars{});
  run_cpu(grad_norm_cpu, {operand(g, &l.segs), operand(hp)}, a);
  run_gpu(grad_norm_cuda, {operand(dg, &l.segs), operand(dp)}, a);
  const TrainScalars first = gpu_scalars();
  run_gpu(grad_norm_cuda, {operand(dg, &l.segs), operand(dp)}, a);
  const TrainScalars second = gpu_scalars();
  EXPECT_TRUE(bitwise_equal(&first.grad_norm, &second.grad_norm, 4));
  // Double sums of ~3e5 squares in two orders differ by ~1e-16 relative: the f32 norms are equal or one
  // ulp (6e-8) apart.
  EXPECT_NEAR(first.grad_norm, host_scalars_.grad_norm, 1.2e-7 * host_scalars_.grad_norm);
  EXPECT_EQ(first.clip_scale, range::clip_scale_of(first.grad_norm, a.max_norm));
  EXPECT_LT(first.clip_scale, 1.f);
  std::printf("[ grad norm ] %zu gradients: norm %.6g on the GPU, %.6g on the CPU; scale %.6g\n", g.size(),
              double(first.grad_norm), double(host_scalars_.grad_norm), double(first.clip_scale));

  // AdamW with clip: the same scale on both sides, the CPU's bits.
  TrainScalars s;
  s.lr = 0.05f;
  s.step = 1;
  s.clip_scale = first.clip_scale;
  set_scalars(s);
  RangeAttrs o = opt_attrs();
  o.clip = true;
  std::vector<float> p = l.random(rng, -1, 1), m(p.size(), 0.f), v(p.size(), 0.f);
  DevBuf<float> P(p), M(m), V(v);
  run_gpu(adamw_cuda, {operand(P, &l.segs), operand(dg, &l.segs), operand(M, &l.segs), operand(V, &l.segs)}, o);
  run_cpu(adamw_cpu, {operand(p, &l.segs), operand(g, &l.segs), operand(m, &l.segs), operand(v, &l.segs)}, o);
  expect_bitwise(P.download(), p, "param");
  expect_bitwise(M.download(), m, "m");
  expect_bitwise(V.download(), v, "v");
}

// Note [the norm is the check]: GradNorm with attrs.check_finite sets
// pending_inf for a NaN or an Inf gradient, on the GPU as on the CPU, and not
// for finite ones; it unscales by 1/loss_scale, as AdvanceStep then records.
TEST_F(RangeOpsGpuOptim, GradNormAsTheCheckFlagsWhatCheckFiniteFlags) {
  std::mt19937 rng(41);
  const Layout l(rng, 40, true);
  RangeAttrs a;
  a.max_norm = 1.f;
  a.check_finite = true;
  a.unscale = true;
  std::vector<double> hp(kGradNormPartials, 0.0);
  DevBuf<double> dp(hp);
  const float bad[] = {0.f, NAN, INFINITY};  // 0: none
  for (float b : bad) {
    std::vector<float> g = l.random(rng, -1, 1);
    if (b != 0.f) g[size_t(l.segs.back().offset + l.segs.back().elems - 1)] = b;  // the last gradient
    DevBuf<float> dg(g);
    TrainScalars s;
    s.loss_scale = 1024.f;
    s.grad_unscale = 7.f;  // not AdvanceStep's yet: the check must not read it
    set_scalars(s);
    run_gpu(grad_norm_cuda, {operand(dg, &l.segs), operand(dp)}, a);
    run_cpu(grad_norm_cpu, {operand(g, &l.segs), operand(hp)}, a);
    const TrainScalars gs = gpu_scalars();
    EXPECT_EQ(gs.pending_inf, b != 0.f ? 1 : 0) << b;
    EXPECT_EQ(host_scalars_.pending_inf, gs.pending_inf) << b;
    if (b != 0.f) continue;
    EXPECT_NEAR(gs.grad_norm, host_scalars_.grad_norm, 1.2e-7 * host_scalars_.grad_norm);
    // Unscaled by 1/1024, not by grad_unscale: g / 1024 is exact, so the norm
    // is |g| / 1024 but for the order of the double sums (about 1e-15) and
    // the f32 result's rounding (6e-8); 2.4e-7 leaves 4x.
    double squares = 0;
    for (float x : g) squares += double(x) * x;  // the padding is zero
    const double want = std::sqrt(squares) / 1024.0;
    EXPECT_NEAR(gs.grad_norm, want, 2.4e-7 * want);
  }
}

// Note [16-bit gradients in the optimizer]: GradNorm, SgdNesterov and AdamW
// reading f16 or bf16 gradients give the bits they give on those gradients'
// f32 casts, on the GPU and on the CPU, and the GPU's optimizers the CPU's bits.
TEST_F(RangeOpsGpuOptim, HalfGradientsGiveTheBitsOfTheirF32Casts) {
  std::mt19937 rng(31);
  const Layout l(rng, 40, true);
  const std::vector<Segment>* sg = &l.segs;
  auto check = [&](auto tag) {
    using H = decltype(tag);
    const DType dt = dtype_of<H>();
    SCOPED_TRACE(dtype_name(dt));
    std::vector<H> g16;
    std::vector<float> g;  // the f32 casts
    for (float x : l.random(rng, -1, 1)) {
      g16.push_back(H{dt == DType::BF16 ? float_to_bf16(x).bits : float_to_half(x).bits});
      g.push_back(dt == DType::BF16 ? bf16_to_float(bf16_t{g16.back().bits}) : half_to_float(half_t{g16.back().bits}));
    }
    DevBuf<H> dg16(g16);
    DevBuf<float> dg(g);
    std::vector<double> hp(kGradNormPartials, 0.0);
    DevBuf<double> dp(hp);
    RangeAttrs a;
    a.max_norm = 10.f;
    const RangeOperand gpu_in[2] = {operand(dg16, sg), operand(dg, sg)}, cpu_in[2] = {operand(g16, sg), operand(g, sg)};
    TrainScalars norms[4];
    for (int k = 0; k < 2; ++k) {
      set_scalars(TrainScalars{});
      run_gpu(grad_norm_cuda, {gpu_in[k], operand(dp)}, a);
      norms[k] = gpu_scalars();
      run_cpu(grad_norm_cpu, {cpu_in[k], operand(hp)}, a);
      norms[2 + k] = host_scalars_;
    }
    EXPECT_TRUE(bitwise_equal(&norms[0].grad_norm, &norms[1].grad_norm, 4)) << "GPU";
    EXPECT_TRUE(bitwise_equal(&norms[2].grad_norm, &norms[3].grad_norm, 4)) << "CPU";
    for (Opt opt : {Opt::Sgd, Opt::AdamW}) {
      TrainScalars s;
      s.lr = 0.05f;
      s.step = 1;
      s.clip_scale = norms[0].clip_scale;
      set_scalars(s);
      RangeAttrs o = opt_attrs();
      o.clip = opt == Opt::AdamW;
      const std::vector<float> p0 = l.random(rng, -1, 1), m0(p0.size(), 0.01f), v0(p0.size(), 0.001f);
      std::vector<std::vector<float>> got;  // param and state: the GPU on g16, the GPU on g, the CPU on g16
      for (int k = 0; k < 3; ++k) {
        std::vector<float> p = p0, m = m0, v = v0;
        DevBuf<float> P(p), M(m), V(v);
        const bool gpu = k < 2;
        if (opt == Opt::Sgd && gpu) run_gpu(sgd_nesterov_cuda, {operand(P, sg), gpu_in[k], operand(M, sg)}, o);
        if (opt == Opt::Sgd && !gpu) run_cpu(sgd_nesterov_cpu, {operand(p, sg), cpu_in[0], operand(m, sg)}, o);
        if (opt == Opt::AdamW && gpu)
          run_gpu(adamw_cuda, {operand(P, sg), gpu_in[k], operand(M, sg), operand(V, sg)}, o);
        if (opt == Opt::AdamW && !gpu)
          run_cpu(adamw_cpu, {operand(p, sg), cpu_in[0], operand(m, sg), operand(v, sg)}, o);
        if (gpu) p = P.download(), m = M.download();
        got.push_back(p);
        got.push_back(m);
      }
      for (size_t k = 1; k < 3; ++k) {
        expect_bitwise(got[2 * k], got[0], k == 1 ? "param, f32 gradients" : "param, the CPU");
        expect_bitwise(got[2 * k + 1], got[1], k == 1 ? "state, f32 gradients" : "state, the CPU");
      }
    }
  };
  check(half_t{});
  check(bf16_t{});
}

}  // namespace
}  // namespace tr
