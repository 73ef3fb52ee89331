#pragma once
// Helpers for tests that train small models on the CPU (and on the GPU).
#include <gtest/gtest.h>
#include <algorithm>
#include <array>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "datasets/data_view.h"
#include "datasets/synthetic.h"
#include "datasets/token_window_set.h"
#include "datasets/token_windows.h"
#include "framework/graph/model_registry.h"
#include "framework/train/param_init.h"
#include "framework/train/trainer.h"
#include "harness/lib/bench/bench_driver.h"

namespace tr::testing {

inline DataView view_of(const data::ImageDataset& d) { return data::data_view(d); }

// The modes the equivalence tests compare, eager first: (mode, split steps).
// Full capture twice: whole-step graphs (the default) and --split-steps.
inline constexpr std::array<std::pair<ExecMode, bool>, 4> kModeRuns = {
    std::pair{ExecMode::Eager, false}, std::pair{ExecMode::PartialCapture, false},
    std::pair{ExecMode::FullCapture, false}, std::pair{ExecMode::FullCapture, true}};

// `count` synthetic images of a registered model's input shape and classes
// (class-dependent patterns, so the loss falls).
inline data::ImageDataset model_data(const std::string& model, int64_t count, uint64_t seed) {
  const ModelConfig m = model_config(model);
  return data::make_synthetic(count, m.in_height, m.in_width, m.in_channels, m.classes, seed);
}

// A small run of a registered model at a quarter of its width (cnn: 8/16/32/64
// channels), batch `batch`.
inline RunOptions small_run(const std::string& model, OptimizerKind opt, ExecMode mode, int64_t batch) {
  RunOptions o;
  o.model = model_config(model, 0.25);
  o.train.optimizer = opt;
  o.train.weight_decay = 5e-4f;
  o.mode = mode;
  o.batch = batch;
  o.lr.base_lr = opt == OptimizerKind::AdamW ? 1e-3f : 0.05f;
  o.lr.kind = LrSchedule::Linear;
  o.lr.warmup_fraction = 0.1f;
  o.seed = 7;
  return o;
}

// Every persistent training state tensor by name: master weights, optimizer
// state, EMA, BN running statistics, as raw floats.
inline std::map<std::string, std::vector<float>> state_of(Trainer& t, int rank = 0) {
  std::map<std::string, std::vector<float>> out;
  const CompiledModel& m = t.model();
  const MemoryPlan& p = t.plans().plan(Variant::TrainBase);
  for (TensorId id = 0; id < m.cg.num_tensors(); ++id) {
    const TensorInfo& ti = m.cg.tensor(id);
    if (is_training_state(ti.role)) out[ti.name] = read_tensor(m, p, t.context(rank), id);
  }
  return out;
}

// Fills every gradient tensor (f16 and, under AMP, the f32 masters) of rank
// 0's arena with NaN, padding left alone: a step that read any element it had
// not written first would train on NaN (Note [gradients are overwritten]).
inline void poison_gradients(Trainer& t) {
  const CompiledModel& m = t.model();
  const MemoryPlan& p = t.plans().plan(Variant::TrainBase);
  DeviceContext& ctx = t.context(0);
  for (TensorId id = 0; id < m.cg.num_tensors(); ++id) {
    const TensorInfo& ti = m.cg.tensor(id);
    if (ti.role != Role::Grad && ti.role != Role::GradMaster) continue;
    const size_t n = static_cast<size_t>(p.shape_of(id).numel());
    if (is_half(ti.dtype)) {
      const std::vector<uint16_t> nan(n, ti.dtype == DType::BF16 ? 0x7fc0 : 0x7e00);
      ctx.upload(p.offset_of(id), nan.data(), 2 * n);
    } else {
      ASSERT_EQ(ti.dtype, DType::F32) << ti.name;
      const std::vector<uint32_t> nan(n, 0x7fc00000u);
      ctx.upload(p.offset_of(id), nan.data(), 4 * n);
    }
  }
}

// How many tensors of `got` differ in any bit from `ref`; each one is also a
// test failure naming it and `what` (e.g. "full-capture split").
inline int differing_tensors(const std::map<std::string, std::vector<float>>& ref,
                             const std::map<std::string, std::vector<float>>& got, const std::string& what) {
  int differing = 0;
  for (const auto& [name, v] : ref)
    if (std::memcmp(v.data(), got.at(name).data(), v.size() * sizeof(float)) != 0) {
      ++differing;
      ADD_FAILURE() << name << " differs: " << what;
    }
  return differing;
}

// How far a data-parallel run's update is from the one-rank reference:
// L2 norm of (got - ref) over the L2 norm of how far the reference moved from
// init (ref - init), overall and for the worst tensor. Optimizer state follows
// the weights and is left out. See DataParallel.RanksMatchOneRankWithTheWholeBatch
// for why the bound is on the update and not on bits.
struct UpdateDiff {
  double total = 0, worst = 0;
  std::string worst_name;
};
inline UpdateDiff update_diff(const std::map<std::string, std::vector<float>>& init,
                              const std::map<std::string, std::vector<float>>& ref,
                              const std::map<std::string, std::vector<float>>& got) {
  UpdateDiff u;
  double diff2 = 0, move2 = 0;
  for (const auto& [name, v] : ref) {
    if (name.find(".opt") != std::string::npos) continue;
    double d2 = 0, m2 = 0;
    for (size_t i = 0; i < v.size(); ++i) {
      const double d = double(v[i]) - got.at(name)[i], m = double(v[i]) - init.at(name)[i];
      d2 += d * d;
      m2 += m * m;
    }
    diff2 += d2;
    move2 += m2;
    if (m2 > 0 && std::sqrt(d2 / m2) > u.worst) u.worst = std::sqrt(d2 / m2), u.worst_name = name;
  }
  u.total = move2 > 0 ? std::sqrt(diff2 / move2) : 0;
  return u;
}

// Note [rank-split bounds]
// One training step of N CPU ranks x B/N against 1 rank x B. A sample's
// forward and data gradient are the same bits in either (Note [batch-invariant
// CPU GEMMs] in framework/ops/kernels/cpu_kernel_util.h), and so are the BatchNorm
// statistics up to double rounding (Note [BatchNorm sums in double]); what
// differs is the order of the f32 sums over samples of the weight and bias
// gradients, a rounding of about 1e-7 of the update (measured at most 4e-7
// over the zoo and the cnn with OpenBLAS's Prescott, Haswell and SkylakeX
// kernels, 1 and 2 threads). The same step on the batch reversed changes the
// same sums' order and nothing else: it carries the same kind of error, so it
// is held to the same bounds (a sample whose forward depended on its place in
// the batch would break it). A missing all-reduce halves the gradient (0.5 of
// the update), a wrong BatchNorm count or a dropped shard is off by tens of
// percent.
//   overall: 1e-4, 250x the rounding measured and 5000x below a missing all-reduce;
//   worst tensor: 1e-3, since one tensor's update may be small against the
//   roundings in it (an EMA moves 1/100 of its weights' step; a BatchNorm
//   beta's gradient is a sum of dy near zero): measured at most 1.5e-4.
inline constexpr double kRankSplitStepTotal = 1e-4;
inline constexpr double kRankSplitStepWorst = 1e-3;

// The learning rate of step i (0-based) of `steps`, written from the schedules'
// definitions (lr_schedule.h) rather than from make_lr_table: a linear ramp
// over the first floor(warmup * steps) steps that reaches the peak at the
// ramp's last step, then constant, a straight line, or half a cosine from the
// peak towards peak * final_fraction, which the step after the last would reach.
inline double closed_form_lr(const LrScheduleSpec& s, int64_t steps, int64_t i) {
  const int64_t ramp = int64_t(std::floor(double(s.warmup_fraction) * double(steps)));
  const double peak = s.base_lr, end = double(s.base_lr) * s.final_fraction;
  if (i < ramp) return peak * double(i + 1) / double(ramp);
  const double left = double(i - ramp) / double(std::max<int64_t>(1, steps - ramp));  // 0 at the peak
  switch (s.kind) {
    case LrSchedule::Constant: return peak;
    case LrSchedule::Linear: return (1 - left) * peak + left * end;
    case LrSchedule::Cosine: return end + (peak - end) * (std::cos(left * 3.14159265358979323846) + 1) / 2;
  }
  return 0;
}

// How many of the cnn's captured graphs hold all-reduces when one rank forces
// its collectives, with a last batch and validation (DataParallel.
// ForcedCollectivesWithOneRankChangeNothing on the CPU, GpuDataParallel.
// OneRankRunsNcclInsideCapturedGraphs on a GPU: the same graphs on either).
// Synchronised BN: the layers' statistics in the training graphs of both
// variants and both input buffers, the gradient and validation all-reduces;
// per-rank BN: DEEP_COMM, FIRST_COMM and VAL_RESULT_COMM alone.
inline const std::map<BnSync, int> kCnnCollectiveGraphs = {{BnSync::Batch, 11}, {BnSync::Running, 3}};

// The rate each of `steps` steps applied, from the rates seen at each step's
// hook (`at_hooks`: step i's hook sees the rate step i-1 set, since AdvanceStep
// comes after it; before step 0 the arena holds step 0's) and the rate after
// the run (the last step's); each within one f32 ulp of the closed form, since
// make_lr_table and closed_form_lr round doubles that differ in the last bits.
inline std::vector<float> expect_rates_follow_closed_form(const std::vector<float>& at_hooks, float after,
                                                          const LrScheduleSpec& s, int64_t steps) {
  EXPECT_EQ(int64_t(at_hooks.size()), steps);
  if (at_hooks.empty()) return {};
  std::vector<float> applied(at_hooks.begin() + 1, at_hooks.end());
  applied.push_back(after);
  EXPECT_EQ(at_hooks[0], applied[0]) << "the rate before the first step";
  for (int64_t i = 0; i < int64_t(applied.size()); ++i) {
    const float want = float(closed_form_lr(s, steps, i));
    EXPECT_LE(std::fabs(applied[size_t(i)] - want), std::nextafter(want, 1.f) - want) << "step " << i;
  }
  return applied;
}

// Writes `state` (as state_of reads it: f32 training-state tensors by name)
// into the arena of local rank `rank`.
inline void load_state(Trainer& t, int rank, const std::map<std::string, std::vector<float>>& state) {
  const CompiledModel& m = t.model();
  const MemoryPlan& p = t.plans().plan(Variant::TrainBase);
  for (TensorId id = 0; id < m.cg.num_tensors(); ++id) {
    const TensorInfo& ti = m.cg.tensor(id);
    if (!is_training_state(ti.role)) continue;
    ASSERT_EQ(ti.dtype, DType::F32) << ti.name;
    const std::vector<float>& v = state.at(ti.name);
    ASSERT_EQ(int64_t(v.size()), p.shape_of(id).numel()) << ti.name;
    t.context(rank).upload(p.offset_of(id), v.data(), v.size() * sizeof(float));
  }
}

// Note [stepwise rank equivalence]
// Over many steps, N ranks and one rank drift apart as soon as the rounding of
// Note [rank-split bounds] flips a max-pool tie or a ReLU near zero in a later
// step, and then like two runs of different data order: no bound on the end
// state is tight and sure at once. So every step starts both from the same
// state: before step k the one-rank run's state is written into every local
// rank of the N-rank run, and step k's update is held to the one-step bounds.
// Each trainer runs one batch per epoch (epochs = steps, no shuffle) from a
// window of `batch` images that the test refills with batch k before epoch k;
// the schedule, momentum, EMA and running statistics advance as in one run.
// `o` as compare_stepwise runs it: one batch per epoch for `steps` epochs, in
// order, without validation.
inline RunOptions stepwise_run(RunOptions o, int steps) {
  o.shuffle = false;
  o.validate = false;
  o.epochs = steps;
  return o;
}

struct StepwiseDiff {
  double total = 0;  // the largest overall difference of a step's update, at step total_step
  int total_step = 0;
  double worst = 0;  // the largest difference of one tensor's update: worst_name at step worst_step
  std::string worst_name;
  int worst_step = 0;
  double loss_rel = 0;  // the largest relative difference of a step's training loss
};
inline StepwiseDiff compare_stepwise(Trainer& one, Trainer& many, data::ImageDataset& window,
                                     const data::ImageDataset& all, int steps) {
  StepwiseDiff out;
  const int64_t n = window.count, img = window.image_bytes();
  for (int k = 0; k < steps; ++k) {
    std::copy_n(all.images.begin() + k * n * img, n * img, window.images.begin());
    std::copy_n(all.labels.begin() + k * n, n, window.labels.begin());
    const auto before = state_of(one);
    for (int r = 0; r < many.local_ranks(); ++r) load_state(many, r, before);
    const EpochStats s1 = one.run_epoch(), sn = many.run_epoch();
    const UpdateDiff u = update_diff(before, state_of(one), state_of(many));
    if (u.total >= out.total) out.total = u.total, out.total_step = k;
    if (u.worst >= out.worst) out.worst = u.worst, out.worst_name = u.worst_name, out.worst_step = k;
    out.loss_rel = std::max(out.loss_rel, std::fabs(sn.train_loss - s1.train_loss) / std::fabs(s1.train_loss));
  }
  return out;
}

// The first training step's gradients by name (a StepHook after the backward).
// One rank only: with several, every rank thread would run the hook at once.
struct GradRecorder {
  Trainer* t = nullptr;
  std::map<std::string, std::vector<float>> grads;
  static void hook(DeviceContext& ctx, void* u) {
    auto* r = static_cast<GradRecorder*>(u);
    if (!r->grads.empty()) return;
    const ComputationGraph& cg = r->t->model().cg;
    for (TensorId id = 0; id < cg.num_tensors(); ++id)
      if (cg.tensor(id).role == Role::Grad)
        r->grads[cg.tensor(id).name] = read_tensor(r->t->model(), r->t->plans().plan(Variant::TrainBase), ctx, id);
  }
};

// Worst relative L2 distance over the tensors of `ref` and `got`, and its tensor.
inline std::pair<double, std::string> worst_rel_l2(const std::map<std::string, std::vector<float>>& ref,
                                                   const std::map<std::string, std::vector<float>>& got) {
  double worst = 0;
  std::string name;
  for (const auto& [n, c] : ref) {
    const auto& q = got.at(n);
    double num = 0, den = 0;
    for (size_t i = 0; i < c.size(); ++i) {
      num += (double(c[i]) - q[i]) * (double(c[i]) - q[i]);
      den += double(c[i]) * c[i];
    }
    const double rel = std::sqrt(num / std::max(den, 1e-30));
    if (rel > worst) worst = rel, name = n;
  }
  return {worst, name};
}

// The zoo's new models, small enough for the CPU: 1/8 width, 32x32x3, 10
// classes (their registry entries with the input and classes overridden).
inline const std::vector<std::string>& zoo_models() {
  static const std::vector<std::string> m = {"resnet18", "resnet50", "vgg16bn"};
  return m;
}
// The same samples in reverse order: the same gradient, summed in another
// order (a perturbation of rounding only, to compare other ones against).
inline data::ImageDataset reversed(const data::ImageDataset& d) {
  data::ImageDataset r = d;
  const int64_t img = d.image_bytes();
  for (int64_t i = 0; i < d.count; ++i) {
    std::copy_n(d.images.begin() + (d.count - 1 - i) * img, img, r.images.begin() + i * img);
    r.labels[size_t(i)] = d.labels[size_t(d.count - 1 - i)];
  }
  return r;
}

// d with each run of `batch` images (the last one may be shorter) in reverse
// order: the same batches, each summed over its samples in the other order.
inline data::ImageDataset reversed_within_batches(const data::ImageDataset& d, int64_t batch) {
  data::ImageDataset r = d;
  const int64_t img = d.image_bytes();
  for (int64_t b0 = 0; b0 < d.count; b0 += batch) {
    const int64_t b1 = std::min(d.count, b0 + batch);
    for (int64_t i = b0; i < b1; ++i) {
      const int64_t j = b1 - 1 - (i - b0);
      std::copy_n(d.images.begin() + j * img, img, r.images.begin() + i * img);
      r.labels[size_t(i)] = d.labels[size_t(j)];
    }
  }
  return r;
}

inline RunOptions zoo_run(const std::string& model, OptimizerKind opt, ExecMode mode, int64_t batch,
                          double width = 0.125) {
  RunOptions o = small_run(model, opt, mode, batch);
  o.model = model_config(model, width, 32, 3, 10);
  return o;
}
// Whether a run's model also builds for side x side inputs (a low-resolution
// variant): VGG's five 2x2 pools need 32x32, the ResNets take anything.
inline bool builds_at(const RunOptions& o, int side) {
  ModelConfig m = o.model;
  m.in_height = m.in_width = side;
  try {
    build_model(m, o.train, 1);
    return true;
  } catch (const UserError&) {
    return false;
  }
}

// Every augmentation on (flip, translate 2, cutout 6) and flip-TTA.
inline void augment_all(RunOptions& o) {
  o.train.augment.flip = true;
  o.train.augment.translate = 2;
  o.train.augment.cutout = 6;
  o.train.tta_flip = true;
}

// Synthetic images of the run's own model shape (token windows for a sequence model).
inline data::ImageDataset run_data(const RunOptions& o, int64_t count, uint64_t seed) {
  const ModelConfig& m = o.model;
  if (m.is_sequence())  // count windows of seq_len + 1 synthetic tokens, as the tools carry them
    return data::window_images(data::make_synthetic_tokens(count * m.seq_len + 1, m.classes, seed), m.seq_len,
                               m.classes, "the test's");
  return data::make_synthetic(count, m.in_height, m.in_width, m.in_channels, m.classes, seed);
}

// The precisions the mode tests run: fp32, fp16 AMP (at a loss scale of
// 1024, so that some steps overflow and are skipped in every mode alike) and
// bf16 (no loss scaling).
struct PrecisionCase {
  const char* name;
  bool amp;
  DType dtype;
};
inline constexpr PrecisionCase kPrecisions[] = {
    {"fp32", false, DType::F16}, {"amp", true, DType::F16}, {"bf16", true, DType::BF16}};
inline void set_precision_case(TrainConfig& tc, const PrecisionCase& p) {
  tc.amp = p.amp;
  tc.amp_dtype = p.dtype;
  tc.init_loss_scale = tc.loss_scaling() ? 1024.f : 1.f;
}

// The specification of the modes for one model: two epochs of
// `steps_per_epoch` steps, the last one short, the first at 24x24 where the
// model takes it (a resolution switch), in fp32, fp16 AMP and bf16; every mode's state
// compared with eager's, bit for bit, one line printed per mode. `base` gives
// the model, backend and batch.
inline void expect_modes_bit_identical(const RunOptions& base, int64_t steps_per_epoch, uint64_t seed) {
  const int64_t B = base.batch;
  for (const PrecisionCase& precision : kPrecisions) {
    std::map<std::string, std::vector<float>> ref;
    for (auto [mode, split] : kModeRuns) {
      RunOptions o = base;
      o.mode = mode;
      o.step_graphs = !split;
      o.epochs = 2;
      o.lowres_epochs = builds_at(o, 24) ? 1 : 0;
      o.lowres_size = 24;
      set_precision_case(o.train, precision);
      const auto train = run_data(o, steps_per_epoch * B - B / 4, seed);
      const auto val = run_data(o, 2 * B, seed + 1);
      Trainer t(o, view_of(train), view_of(val));
      for (int e = 0; e < 2; ++e) t.run_epoch();
      const auto s = state_of(t);
      if (mode == ExecMode::Eager) {
        ref = s;
        continue;
      }
      const std::string& model = o.model.name;
      const int differing = differing_tensors(
          ref, s, cat(model, ": eager vs ", mode_name(mode), split ? " split" : "", " (", precision.name, ")"));
      std::printf("[ zoo modes ] %s %s%s %s, %lld steps: %zu state tensors, %d differ from eager\n", model.c_str(),
                  mode_name(mode).c_str(), split ? " (split steps)" : "", precision.name,
                  static_cast<long long>(2 * steps_per_epoch), s.size(), differing);
    }
  }
}

// Two runs of `o` from the same start, one of them with every gradient
// poisoned (poison_gradients) after its first step and again after its
// second; three steps each (BenchDriver, the same batch every step). Every
// state tensor must agree bit for bit, and so must the step count, the skipped
// steps and the loss scale (a NaN read would skip a step under AMP); at least
// one step must have updated. Prints "[ gradients overwritten ] <model>
// <precision> <mode>: N of M state tensors differ, K of 3 steps updated".
inline void expect_poisoned_gradients_change_nothing(const RunOptions& o, uint64_t seed) {
  const auto train = run_data(o, 2 * o.batch, seed);
  Trainer clean(o, view_of(train), view_of(train));
  Trainer poisoned(o, view_of(train), view_of(train));
  bench::BenchDriver dc(clean.session()), dp(poisoned.session());
  dc.prime(Variant::TrainBase);
  dp.prime(Variant::TrainBase);
  for (int step = 0; step < 3; ++step) {
    dc.steps(Variant::TrainBase, 1);
    dp.steps(Variant::TrainBase, 1);
    if (step < 2) poison_gradients(poisoned);
  }
  const auto ref = state_of(clean);
  const std::string what =
      cat(o.model.name, " ", o.train.amp ? dtype_name(o.train.amp_dtype) : "f32", " ", mode_name(o.mode));
  const int differing = differing_tensors(ref, state_of(poisoned), what + ", gradients poisoned between steps");
  const TrainScalars a = read_scalars(clean.plans(), clean.context(0));
  const TrainScalars b = read_scalars(poisoned.plans(), poisoned.context(0));
  EXPECT_EQ(a.step, b.step) << what;
  EXPECT_EQ(a.skipped_steps, b.skipped_steps) << what;
  EXPECT_EQ(a.loss_scale, b.loss_scale) << what;
  EXPECT_GE(b.step, 1) << what;
  std::printf("[ gradients overwritten ] %s: %d of %zu state tensors differ, %d of 3 steps updated\n", what.c_str(),
              differing, ref.size(), static_cast<int>(b.step));
}

// A GPU setting must change no bit: `model` at a quarter width, AMP, batch 32,
// trains an epoch of 152 samples (the last batch short) in eager mode with
// `reference` applied to its options, then in every mode with `variant`
// applied; each mode's state is compared with the reference's, bit for bit, and
// one line per mode is printed: "[ tag ] model amp mode: N of M state tensors
// differ from <reference_name>".
inline void expect_setting_changes_no_bit(const std::string& model, uint64_t seed, const char* tag,
                                          const char* reference_name, const std::function<void(RunOptions&)>& reference,
                                          const std::function<void(RunOptions&)>& variant) {
  RunOptions o = zoo_run(model, OptimizerKind::Sgd, ExecMode::Eager, 32, 0.25);
  o.backend = Backend::Cuda;
  o.train.amp = true;
  o.train.init_loss_scale = 1024.f;
  const auto train = run_data(o, 5 * 32 - 8, seed);
  reference(o);
  Trainer ref_run(o, view_of(train), view_of(train));
  ref_run.run_epoch();
  const auto ref = state_of(ref_run);
  for (ExecMode mode : {ExecMode::Eager, ExecMode::PartialCapture, ExecMode::FullCapture}) {
    o.mode = mode;
    variant(o);
    Trainer t(o, view_of(train), view_of(train));
    t.run_epoch();
    const int differing = differing_tensors(ref, state_of(t), cat(model, " ", tag, ", ", mode_name(mode)));
    std::printf("[ %s ] %s amp %s: %d of %zu state tensors differ from %s\n", tag, model.c_str(),
                mode_name(mode).c_str(), differing, ref.size(), reference_name);
  }
}

}  // namespace tr::testing
