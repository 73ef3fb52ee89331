// Training on the CPU end to end: replay equals eager bit for bit, a NaN
// gradient skips its step, the last batch trains through its own variant, the
// loss falls, and the learning rate follows the device-side schedule.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "tests/train_test_util.h"

namespace tr {
namespace {

using testing::small_run;
using testing::state_of;
using testing::view_of;

TEST(CpuTraining, ReplayEqualsEagerBitForBit) {
  // 20 steps: 2 epochs of 10, the last batch of each epoch incomplete (its own
  // variant), the first epoch at low resolution (a resolution switch).
  const auto train = testing::model_data("cnn", 10 * 32 - 12, 3);
  const auto val = testing::model_data("cnn", 50, 4);
  for (const testing::PrecisionCase& p : testing::kPrecisions) {
    std::map<std::string, std::vector<float>> ref;
    for (auto [mode, split] : testing::kModeRuns) {
      RunOptions o = small_run("cnn", OptimizerKind::Lars, mode, 32);
      o.step_graphs = !split;
      o.epochs = 2;
      o.lowres_epochs = 1;
      o.lowres_size = 20;
      testing::set_precision_case(o.train, p);
      Trainer t(o, view_of(train), view_of(val));
      ASSERT_EQ(t.steps_per_epoch(), 10);
      for (int e = 0; e < 2; ++e) t.run_epoch();
      const auto s = state_of(t);
      if (mode == ExecMode::Eager) {
        ref = s;
        continue;
      }
      ASSERT_EQ(s.size(), ref.size());
      for (const auto& [name, v] : ref) {
        const auto& w = s.at(name);
        ASSERT_EQ(v.size(), w.size()) << name;
        EXPECT_EQ(0, std::memcmp(v.data(), w.data(), v.size() * sizeof(float)))
            << name << " differs between eager and " << mode_name(mode) << (split ? " split" : "") << " (" << p.name
            << ")";
      }
    }
  }
}

TEST(CpuTraining, LossFallsAndLastBatchUsesItsVariant) {
  const auto train = testing::model_data("cnn", 1000, 11);  // 5 batches of 200 + none left over
  const auto val = testing::model_data("cnn", 300, 12);
  RunOptions o = small_run("mlp", OptimizerKind::AdamW, ExecMode::FullCapture, 192);  // 5x192 + 40
  o.epochs = 3;
  Trainer t(o, view_of(train), view_of(val));
  EXPECT_EQ(t.steps_per_epoch(), 6);
  EXPECT_EQ(t.plans().plan(Variant::TrainLast).dims.batch, 1000 - 5 * 192);
  EXPECT_TRUE(t.atlas().slot(Variant::TrainLast, GraphId::DEEP_FWD_BWD).present());
  const EpochStats e0 = t.run_epoch();
  t.run_epoch();
  const EpochStats e2 = t.run_epoch();
  std::printf("[ mlp ] loss %.4f -> %.4f, val acc %.3f -> %.3f\n", e0.train_loss, e2.train_loss, e0.val_acc,
              e2.val_acc);
  // Measured loss 2.24 -> 1.26 (0.57 of it) and val acc 0.46 -> 0.86; a run that does not learn keeps about
  // 1.0 of its loss, and guessing among 10 classes scores 0.1 (sd 0.017 on 300 images).
  EXPECT_LT(e2.train_loss, e0.train_loss * 0.8);
  EXPECT_GT(e2.val_acc, 0.5);
  // Every sample was counted once per epoch, the last batch included: with the
  // base variant's 192 the last batch would count 1152.
  const auto m = read_tensor(t.model(), t.plans().plan(Variant::TrainBase), t.context(0), t.model().train_metrics);
  EXPECT_EQ(m[kMetricCount], 1000.f);
  // Exactly 3 x 6 optimizer steps ran, none skipped, and the device's batch
  // counter (Note [augmentation]) saw each of them once.
  const TrainScalars sc = read_scalars(t.plans(), t.context(0));
  EXPECT_EQ(sc.step, 18);
  EXPECT_EQ(sc.batches, 18);
  EXPECT_EQ(sc.skipped_steps, 0);
}

struct NanInjector {
  const CompiledModel* model = nullptr;
  const PlanSet* plans = nullptr;
  int step = 0, inject_at = 3;
  std::vector<std::map<std::string, std::vector<float>>> params_at_hook;
  std::vector<TrainScalars> scalars_at_hook;
  Trainer* trainer = nullptr;

  static void hook(DeviceContext& ctx, void* user) {
    auto* self = static_cast<NanInjector*>(user);
    self->params_at_hook.push_back(state_of(*self->trainer));
    self->scalars_at_hook.push_back(read_scalars(*self->plans, ctx));
    if (self->step == self->inject_at) {
      // A NaN in one gradient element of the first layer (f16 under AMP; its cast
      // to f32 runs after this hook, the deep bucket's before it).
      const ComputationGraph& cg = self->model->cg;
      for (TensorId t = 0; t < cg.num_tensors(); ++t) {
        if (cg.tensor(t).role != Role::Grad || cg.tensor(t).group != ParamGroup::First) continue;
        const uint16_t nan16 = 0x7e00;
        ctx.upload(self->plans->plan(Variant::TrainBase).offset_of(t) + 2 * 5, &nan16, 2);
        break;
      }
    }
    ++self->step;
  }
};

TEST(CpuTraining, NanGradientSkipsStepAndHalvesLossScale) {
  const auto train = testing::model_data("cnn", 8 * 32, 5);
  const auto val = testing::model_data("cnn", 64, 6);
  RunOptions o = small_run("cnn", OptimizerKind::Sgd, ExecMode::FullCapture, 32);
  o.train.amp = true;
  o.train.init_loss_scale = 256.f;
  o.epochs = 2;
  Trainer t(o, view_of(train), view_of(val));
  NanInjector inj;
  inj.model = &t.model();
  inj.plans = &t.plans();
  inj.trainer = &t;
  t.set_step_hook(StepHook{&NanInjector::hook, &inj});
  const EpochStats e0 = t.run_epoch();
  const EpochStats e1 = t.run_epoch();
  ASSERT_EQ(inj.scalars_at_hook.size(), 16u);
  const int k = inj.inject_at;
  // Before step k: k finite steps done at the initial scale.
  EXPECT_EQ(inj.scalars_at_hook[k].step, k);
  EXPECT_EQ(inj.scalars_at_hook[k].loss_scale, 256.f);
  // After step k: skipped, scale halved, no state moved (weights, momentum, BN running stats, EMA).
  EXPECT_EQ(inj.scalars_at_hook[k + 1].step, k);
  EXPECT_EQ(inj.scalars_at_hook[k + 1].skipped_steps, 1);
  EXPECT_EQ(inj.scalars_at_hook[k + 1].loss_scale, 128.f);
  for (const auto& [name, v] : inj.params_at_hook[k])
    EXPECT_EQ(0, std::memcmp(v.data(), inj.params_at_hook[k + 1].at(name).data(), v.size() * 4)) << name << " moved";
  // Training goes on: later steps advance and change the weights.
  EXPECT_EQ(inj.scalars_at_hook[k + 2].step, k + 1);
  EXPECT_NE(inj.params_at_hook[k + 1], inj.params_at_hook[k + 2]);
  EXPECT_EQ(e1.skipped_steps, 1);
  EXPECT_TRUE(std::isfinite(e1.train_loss));
  EXPECT_LT(e1.train_loss, e0.train_loss);
}

// Every step's learning rate, as the captured step reads it from device
// memory, equals the schedule's closed form (warm-up, then cosine), step 0
// included, over two epochs and no re-capture (expect_rates_follow_closed_form).
TEST(CpuTraining, LearningRateFollowsDeviceScheduleWithoutRecapture) {
  const auto train = testing::model_data("cnn", 6 * 16, 8);
  const auto val = testing::model_data("cnn", 16, 9);
  RunOptions o = small_run("mlp", OptimizerKind::Sgd, ExecMode::FullCapture, 16);
  o.lr.kind = LrSchedule::Cosine;
  o.lr.warmup_fraction = 0.25f;  // 3 of 12 steps
  o.lr.final_fraction = 0.1f;
  o.lr.base_lr = 0.1f;
  o.epochs = 2;
  Trainer t(o, view_of(train), view_of(val));
  struct Rec {
    const PlanSet* plans;
    std::vector<float> lrs;
    static void hook(DeviceContext& ctx, void* u) {
      auto* r = static_cast<Rec*>(u);
      r->lrs.push_back(read_scalars(*r->plans, ctx).lr);
    }
  } rec{&t.plans(), {}};
  t.set_step_hook(StepHook{&Rec::hook, &rec});
  const int captured_before = t.capture().captured;
  t.run_epoch();
  t.run_epoch();
  EXPECT_EQ(t.capture().captured, captured_before);
  ASSERT_EQ(rec.lrs.size(), 12u);
  const std::vector<float> applied =
      testing::expect_rates_follow_closed_form(rec.lrs, read_scalars(t.plans(), t.context(0)).lr, o.lr, 12);
  // The shape itself: the ramp's first and last steps, the peak, the cosine's midpoint.
  EXPECT_FLOAT_EQ(applied[0], 0.1f / 3);
  EXPECT_FLOAT_EQ(applied[2], 0.1f);
  EXPECT_FLOAT_EQ(applied[3], 0.1f);
  EXPECT_FLOAT_EQ(applied[3 + 9 / 2], float(0.01 + 0.09 * (1 + std::cos(3.14159265358979323846 * 4 / 9)) / 2));
}

// make_lr_table at every step of every schedule kind, with and without a
// warm-up, against the closed form (one f32 ulp: expect_rates_follow_closed_form says why).
TEST(LrSchedule, TableFollowsTheClosedFormAtEveryStep) {
  for (LrSchedule kind : {LrSchedule::Constant, LrSchedule::Linear, LrSchedule::Cosine})
    for (float warm : {0.f, 0.1f, 0.5f})
      for (int64_t steps : {1, 2, 7, 100}) {
        LrScheduleSpec s;
        s.kind = kind;
        s.base_lr = 0.4f;
        s.warmup_fraction = warm;
        s.final_fraction = 0.05f;
        const auto table = make_lr_table(s, steps);
        ASSERT_EQ(int64_t(table.size()), steps);
        for (int64_t i = 0; i < steps; ++i) {
          const float want = float(testing::closed_form_lr(s, steps, i));
          EXPECT_LE(std::fabs(table[size_t(i)] - want), std::nextafter(want, 1.f) - want)
              << lr_schedule_name(kind) << ", warm-up " << warm << ", " << steps << " steps, step " << i;
        }
      }
}

}  // namespace
}  // namespace tr
