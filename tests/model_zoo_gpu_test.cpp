// The zoo on the GPU (resnet18, resnet50, vgg16bn at reduced width, 32x32x3):
// the modes are bit-identical over 20 steps that include incomplete last
// batches, first-step gradients agree with the CPU oracle, full capture is one
// graph and no kernel launch per step, and gradient buckets all-reduced inside
// the captured backward (NCCL on a side stream) change nothing. Every test
// skips without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "harness/lib/bench/bench_driver.h"
#include "tests/gpu_test_util.h"
#include "tests/train_test_util.h"

namespace tr {
namespace {

using testing::run_data;
using testing::state_of;
using testing::view_of;
using testing::zoo_models;
using testing::zoo_run;

TEST(ZooGpu, ModesAreBitIdenticalOver20Steps) {
  SKIP_WITHOUT_GPU();
  for (const std::string& model : zoo_models()) {
    RunOptions o = zoo_run(model, OptimizerKind::Sgd, ExecMode::Eager, 32, 0.25);
    o.backend = Backend::Cuda;
    testing::expect_modes_bit_identical(o, 10, 91);
  }
}

// Relative L2 distance over all gradients together.
double total_rel_l2(const std::map<std::string, std::vector<float>>& ref,
                    const std::map<std::string, std::vector<float>>& got) {
  double num = 0, den = 0;
  for (const auto& [name, c] : ref)
    for (size_t i = 0; i < c.size(); ++i) {
      const double d = double(c[i]) - got.at(name)[i];
      num += d * d;
      den += double(c[i]) * c[i];
    }
  return std::sqrt(num / den);
}

// The fewest values any BatchNorm of the run normalises over (batch x H x W).
int64_t smallest_bn_population(Trainer& t) {
  const MemoryPlan& p = t.plans().plan(Variant::TrainBase);
  int64_t least = INT64_MAX;
  for (const Node& n : t.model().cg.nodes(GraphId::DEEP_FWD_BWD))
    if (n.kind == Node::Kind::Compute && n.op == OpKind::BnStats) {
      const Shape& x = p.shape_of(n.in[0]);
      least = std::min(least, x[0] * x[1] * x[2]);
    }
  return least;
}

// The first step's gradients of a batch on the CPU or on the GPU.
std::map<std::string, std::vector<float>> first_grads(const std::string& model, Backend b,
                                                      int64_t* bn_population = nullptr) {
  RunOptions o = zoo_run(model, OptimizerKind::Sgd, ExecMode::Eager, 16);
  o.validate = false;
  o.shuffle = false;
  o.backend = b;
  // The CPU rounds its BatchNorm sums to f32 as the GPU does, so the two differ
  // only by summation order. With its own f64 sums (Note [BatchNorm sums in
  // double]) the CPU moves these gradients from its f32 self by 1.27e-2
  // (vgg16bn), 5.2e-3 (resnet50) and 1.0e-6 (resnet18): f32 rounding of the
  // mean and variance flips ReLUs near zero, as it does between the GPU and
  // an f64 CPU (0.0127 and 0.0457 measured on the H200).
  if (b == Backend::Cpu) o.bn_sums = DType::F32;
  const auto train = run_data(o, 16, 93);
  Trainer t(o, view_of(train), view_of(train));
  testing::GradRecorder rec{&t, {}};
  t.set_step_hook(StepHook{&testing::GradRecorder::hook, &rec});
  t.run_epoch();
  if (bn_population) *bn_population = smallest_bn_population(t);
  return rec.grads;
}

// Tolerance: cuDNN and cuBLAS sum in other orders than the CPU's im2col + BLAS
// (relative ~1e-6 per op, fp32 without TF32): resnet18 and vgg16bn agree to
// 2e-6 and 3e-6 over all gradients (H200), within 1e-4. The 1/8-width resnet50
// at 32x32 ends in 1x1 feature maps where a BN sees 16 values per channel: one
// ReLU that such a difference flips near zero moves that BN's reduction, and
// every gradient below it, by about 1/16 of the BN's share: 0.52 % over all
// gradients on the H200. Where some BN normalises 16 values or fewer the bound
// is that of a few flips, 2e-2. A wrong stride, padding or window is off by
// tens of percent; the op tests (OpsGpu*) bound every kernel tightly.
TEST(ZooGpu, FirstStepGradientsMatchCpu) {
  SKIP_WITHOUT_GPU();
  for (const std::string& model : zoo_models()) {
    int64_t population = 0;
    const auto cpu = first_grads(model, Backend::Cpu, &population);
    const auto gpu = first_grads(model, Backend::Cuda);
    const double total = total_rel_l2(cpu, gpu);
    const auto [worst, worst_name] = testing::worst_rel_l2(cpu, gpu);
    std::printf(
        "[ zoo gpu vs cpu ] %s first-step gradients: relative L2 error %.3g over all, worst tensor %.3g (%s); "
        "fewest values under one BN: %lld\n",
        model.c_str(), total, worst, worst_name.c_str(), static_cast<long long>(population));
    EXPECT_LT(total, population <= 16 ? 2e-2 : 1e-4) << model << ", fewest BN values " << population;
  }
}

TEST(ZooGpu, FullCaptureIsOneGraphPerStep) {
  SKIP_WITHOUT_GPU();
  for (const std::string& model : zoo_models())
    for (ExecMode mode : {ExecMode::Eager, ExecMode::FullCapture}) {
      RunOptions o = zoo_run(model, OptimizerKind::Sgd, mode, 32, 0.25);
      o.backend = Backend::Cuda;
      o.train.amp = true;
      o.train.init_loss_scale = 4096.f;
      const auto train = run_data(o, 4 * 32, 94);
      Trainer t(o, view_of(train), view_of(train));
      bench::BenchDriver drive(t.session());
      drive.prime(Variant::TrainBase);
      drive.steps(Variant::TrainBase, 2);
      const LaunchTally l = drive.steps(Variant::TrainBase, 10).rank0_tally;
      std::printf("[ zoo launches ] %s %s per step: %.1f graphs, %.1f kernels, %.1f library calls\n", model.c_str(),
                  mode_name(mode).c_str(), l.graph_launches / 10.0, l.kernels / 10.0, l.library_calls / 10.0);
      if (mode == ExecMode::FullCapture) {
        EXPECT_EQ(l.graph_launches, 10) << model;
        EXPECT_EQ(l.kernels + l.library_calls + l.memcpys, 0) << model;
      } else {
        EXPECT_GT(l.kernels + l.library_calls, 50) << model;
      }
    }
}

// With collectives forced on one GPU, small buckets put NCCL all-reduces inside
// the captured backward on UPDATE (Note [gradient buckets]); the state stays
// bit-identical to eager and to one bucket after the backward.
TEST(ZooGpu, InBackwardBucketsChangeNothing) {
  SKIP_WITHOUT_GPU();
  RunOptions o = zoo_run("resnet18", OptimizerKind::Sgd, ExecMode::Eager, 32, 0.25);
  o.backend = Backend::Cuda;
  o.train.force_collectives = true;
  o.train.bucket_bytes = 0;
  const auto train = run_data(o, 6 * 32 - 8, 95);
  const auto val = run_data(o, 64, 96);
  Trainer one(o, view_of(train), view_of(val));
  one.run_epoch();
  const auto ref = state_of(one);
  for (ExecMode mode : {ExecMode::Eager, ExecMode::PartialCapture, ExecMode::FullCapture}) {
    o.mode = mode;
    o.train.bucket_bytes = 256 << 10;
    Trainer t(o, view_of(train), view_of(val));
    t.run_epoch();
    int in_backward = 0;
    for (const Node& n : t.model().cg.nodes(GraphId::DEEP_FWD_BWD))
      in_backward += n.collective && n.stream == StreamKind::UPDATE;
    const int differing = testing::differing_tensors(ref, state_of(t), cat("buckets, ", mode_name(mode)));
    std::printf(
        "[ zoo buckets ] resnet18 on 1 GPU, collectives forced, %s: %d bucket all-reduces inside the "
        "backward, %d of %zu state tensors differ from one bucket\n",
        mode_name(mode).c_str(), in_backward, differing, ref.size());
    EXPECT_GT(in_backward, 0);
  }
}

}  // namespace
}  // namespace tr
