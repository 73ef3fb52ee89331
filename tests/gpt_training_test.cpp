// Training the small GPT (gpt2-d6 at a quarter width, windows of 32 tokens)
// on the CPU: every mode gives the same bits in fp32, fp16 AMP and bf16 with a
// shorter last batch; a warm-up on shorter windows (--seq-warmup) is the same
// training as a model built for them; N ranks x B/N match 1 rank x B.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <span>

#include "datasets/token_window_set.h"
#include "datasets/token_windows.h"
#include "framework/graph/fusion_rules.h"
#include "tests/gpu_test_util.h"
#include "tests/train_test_util.h"

namespace tr {
namespace {

constexpr int kVocab = 264;

RunOptions small_gpt(ExecMode mode, int64_t seq, int64_t batch) {
  RunOptions o;
  o.model = model_config("gpt2-d6", 0.25, 0, 0, 0, seq);
  o.mode = mode;
  o.train.optimizer = OptimizerKind::AdamW;
  o.train.weight_decay = 0.1f;
  o.train.label_smoothing = 0.f;
  o.train.max_grad_norm = 1.f;
  o.batch = batch;
  o.lr.base_lr = 3e-3f;
  o.lr.kind = LrSchedule::Cosine;
  o.lr.warmup_fraction = 0.2f;
  o.seed = 11;
  return o;
}

// `count` windows of T + 1 synthetic tokens, as the tools carry them.
data::ImageDataset windows(int64_t count, int64_t seq, uint64_t seed) {
  return data::window_images(data::make_synthetic_tokens(count * seq + 1, kVocab, seed), seq, kVocab, "the test's");
}

// 10 windows at batch 4: two full batches and a last one of 2, 3 epochs. The
// state and the validation loss are the same bits in every mode.
TEST(GptTraining, ModesGiveTheSameBitsInEveryPrecisionWithAShorterLastBatch) {
  const data::ImageDataset train = windows(10, 32, 3), val = windows(6, 32, 4);
  for (const testing::PrecisionCase& p : testing::kPrecisions) {
    std::map<std::string, std::vector<float>> ref;
    double ref_val = 0;  // the validation loss, from the inference graphs (captured in the capture modes)
    for (const auto& [mode, split] : testing::kModeRuns) {
      RunOptions o = small_gpt(mode, 32, 4);
      o.epochs = 3;
      testing::set_precision_case(o.train, p);
      o.step_graphs = !split;
      Trainer t(o, testing::view_of(train), testing::view_of(val));
      ASSERT_EQ(t.plans().plan(Variant::TrainLast).dims.global_batch, 2);
      EpochStats s;
      for (int e = 0; e < 3; ++e) s = t.run_epoch();
      std::printf("[ gpt modes ] %s %s%s: train loss %.4f, val loss %.4f\n", p.name, mode_name(mode).c_str(),
                  split ? " (split steps)" : "", s.train_loss, s.val_loss);
      EXPECT_EQ(s.skipped_steps, 0);
      const auto state = testing::state_of(t);
      if (ref.empty()) {
        ref = state;
        ref_val = s.val_loss;
        continue;
      }
      EXPECT_EQ(testing::differing_tensors(ref, state, cat(p.name, " eager vs ", mode_name(mode))), 0);
      EXPECT_EQ(s.val_loss, ref_val) << mode_name(mode) << ": the validation loss differs from eager's";
    }
  }
}

// Note [optimizer tail]: with fusion AdamW unscales, updates, moves the EMA
// and writes the 16-bit copy in one node, and GradNorm unscales as it squares;
// without, UnscaleGrads (fp16 AMP only), AdamW, a Lerp and a Cast. The same
// bits, in every precision, with the clip binding (a bound of 0.5) and a
// shorter last batch. Fused, with AMP, the tail reads the 16-bit gradients
// where unfused they are cast to f32 masters first.
void expect_the_tail_changes_no_bit(Backend backend) {
  const data::ImageDataset train = windows(10, 32, 8), val = windows(4, 32, 9);
  for (const testing::PrecisionCase& p : testing::kPrecisions) {
    std::map<std::string, std::vector<float>> ref;
    for (bool fusion : {false, true}) {
      RunOptions o = small_gpt(ExecMode::FullCapture, 32, 4);
      o.epochs = 3;
      testing::set_precision_case(o.train, p);
      o.train.max_grad_norm = 0.5f;
      o.train.fusion = fusion;
      // The epilogue pairs (GELU, residual) stay apart in both runs: on the GPU they round otherwise
      // (FusionRule::same_gpu_bits).
      for (const FusionRule& r : fusion_rules())
        if (r.same_gpu_bits) o.train.fusion_rules.emplace_back(r.name);
      o.backend = backend;
      Trainer t(o, testing::view_of(train), testing::view_of(val));
      int tails = 0, lerps = 0;
      for (const Node& n : t.model().cg.nodes(GraphId::OPTIMIZER)) tails += n.label == "adamw_tail";
      for (const Node& n : t.model().cg.nodes(GraphId::EMA_UPDATE)) lerps += n.label == "ema_params";
      EXPECT_EQ(tails, fusion ? 1 : 0);
      EXPECT_EQ(lerps, fusion ? 0 : 1);
      // Note [16-bit gradients in the optimizer]: fused, the 16-bit gradients are read in place, not cast.
      const bool masters = o.train.amp && !fusion;
      for (const GraphId g : {GraphId::NAN_CHECK_AND_GRAD_SCALING, GraphId::OPTIMIZER})
        for (const Node& n : t.model().cg.nodes(g)) {
          if (n.range_op != RangeOp::CheckFinite && n.range_op != RangeOp::GradNorm && n.range_op != RangeOp::AdamW)
            continue;
          EXPECT_EQ(n.operands[n.range_op == RangeOp::AdamW ? 1 : 0].role, masters ? Role::GradMaster : Role::Grad)
              << n.label << ", " << p.name << ", fusion " << fusion;
        }
      EXPECT_EQ(t.model().cg.nodes(GraphId::CAST_DEEP_GRAD_FP16_TO_FP32).size(), masters ? 1u : 0u) << p.name;
      int master_tensors = 0;  // nor are the masters made
      for (TensorId id = 0; id < t.model().cg.num_tensors(); ++id)
        master_tensors += t.model().cg.tensor(id).role == Role::GradMaster;
      EXPECT_EQ(master_tensors > 0, masters) << p.name << ", fusion " << fusion;
      for (int e = 0; e < 3; ++e) t.run_epoch();
      const auto state = testing::state_of(t);
      if (!fusion) {
        ref = state;
        continue;
      }
      EXPECT_EQ(testing::differing_tensors(ref, state, cat(p.name, ", fused tail vs not")), 0);
    }
  }
}

// bf16 has f32's exponent range: no loss scaling. Its recipe has no
// UnscaleGrads node even unfused, its compute copies are bf16 (named so),
// and the loss scale stays 1 through training, with no step skipped.
TEST(GptTraining, Bf16RunsAtAFixedLossScaleOfOne) {
  const data::ImageDataset train = windows(8, 32, 12), val = windows(4, 32, 13);
  RunOptions o = small_gpt(ExecMode::FullCapture, 32, 4);
  o.epochs = 2;
  o.train.fusion = false;
  testing::set_precision_case(o.train, testing::kPrecisions[2]);
  ASSERT_EQ(o.train.amp_dtype, DType::BF16);
  Trainer t(o, testing::view_of(train), testing::view_of(val));
  int unscales = 0, compute_copies = 0;
  for (const Node& n : t.model().cg.nodes(GraphId::NAN_CHECK_AND_GRAD_SCALING)) unscales += n.label == "unscale_grads";
  for (TensorId id = 0; id < t.model().cg.num_tensors(); ++id) {
    const TensorInfo& ti = t.model().cg.tensor(id);
    if (ti.role != Role::ParamCompute) continue;
    ++compute_copies;
    EXPECT_EQ(ti.dtype, DType::BF16) << ti.name;
    EXPECT_TRUE(ti.name.ends_with(".bf16")) << ti.name;
  }
  EXPECT_EQ(unscales, 0);
  EXPECT_GT(compute_copies, 0);
  EpochStats s;
  for (int e = 0; e < 2; ++e) s = t.run_epoch();
  const TrainScalars sc = read_scalars(t.plans(), t.context(0));
  EXPECT_EQ(sc.loss_scale, 1.f);
  EXPECT_EQ(sc.skipped_steps, 0);
  EXPECT_EQ(sc.step, 4);
  std::printf("[ gpt modes ] bf16: loss scale %g after %d steps, train loss %.4f\n", sc.loss_scale, sc.step,
              s.train_loss);
}

TEST(GptTraining, TheOptimizerTailChangesNoBit) { expect_the_tail_changes_no_bit(Backend::Cpu); }

TEST(GptTrainingGpu, TheOptimizerTailChangesNoBit) {
  SKIP_WITHOUT_GPU();
  expect_the_tail_changes_no_bit(Backend::Cuda);
}

// Note [the norm is the check]: with clipping, GradNorm is the step's NaN/Inf
// check (no CheckFinite node, GradNorm first in NAN_CHECK_AND_GRAD_SCALING).
// A NaN in one gradient at step 3 skips that step: no state moves, the step
// counter stays, fp16 AMP halves its scale; the next step trains.
struct NanAtStep {
  Trainer* t = nullptr;
  int step = 0, at = 3;
  std::vector<std::map<std::string, std::vector<float>>> states;
  std::vector<TrainScalars> scalars;
  static void hook(DeviceContext& ctx, void* u) {
    auto* s = static_cast<NanAtStep*>(u);
    s->states.push_back(testing::state_of(*s->t));
    s->scalars.push_back(read_scalars(s->t->plans(), ctx));
    if (s->step++ != s->at) return;
    const ComputationGraph& cg = s->t->model().cg;
    for (TensorId id = 0; id < cg.num_tensors(); ++id) {
      const TensorInfo& ti = cg.tensor(id);
      if (ti.role != Role::Grad) continue;
      const uint16_t nan16 = ti.dtype == DType::BF16 ? 0x7fc0 : 0x7e00;
      const uint32_t nan32 = 0x7fc00000u;
      const size_t bytes = dtype_size(ti.dtype);  // element 8 of the first gradient
      ctx.upload(s->t->plans().plan(Variant::TrainBase).offset_of(id) + 8 * int64_t(bytes),
                 is_half(ti.dtype) ? static_cast<const void*>(&nan16) : &nan32, bytes);
      return;
    }
  }
};

void expect_a_nan_step_is_skipped(Backend backend) {
  const data::ImageDataset train = windows(12, 32, 21), val = windows(4, 32, 22);
  for (const testing::PrecisionCase& p : testing::kPrecisions) {
    SCOPED_TRACE(p.name);
    RunOptions o = small_gpt(ExecMode::FullCapture, 32, 4);
    o.epochs = 2;
    o.backend = backend;
    testing::set_precision_case(o.train, p);
    Trainer t(o, testing::view_of(train), testing::view_of(val));
    const std::vector<Node>& nan = t.model().cg.nodes(GraphId::NAN_CHECK_AND_GRAD_SCALING);
    ASSERT_FALSE(nan.empty());
    EXPECT_EQ(nan[0].range_op, RangeOp::GradNorm);
    EXPECT_TRUE(nan[0].range_attrs.check_finite);
    for (const Node& n : nan) EXPECT_NE(n.range_op, RangeOp::CheckFinite) << n.label;
    NanAtStep h;
    h.t = &t;
    t.set_step_hook(StepHook{&NanAtStep::hook, &h});
    EpochStats e;
    for (int k = 0; k < 2; ++k) e = t.run_epoch();
    ASSERT_EQ(h.scalars.size(), 6u);
    const size_t k = size_t(h.at);
    EXPECT_EQ(h.scalars[k + 1].skipped_steps, 1);
    EXPECT_EQ(h.scalars[k + 1].step, h.scalars[k].step);
    const float scale_after = o.train.loss_scaling() ? h.scalars[k].loss_scale / 2 : h.scalars[k].loss_scale;
    EXPECT_EQ(h.scalars[k + 1].loss_scale, scale_after);
    EXPECT_EQ(testing::differing_tensors(h.states[k], h.states[k + 1], "the skipped step"), 0);
    EXPECT_EQ(h.scalars[k + 2].step, h.scalars[k].step + 1);
    EXPECT_NE(h.states[k + 1], h.states[k + 2]);
    EXPECT_EQ(e.skipped_steps, 1);
    EXPECT_TRUE(std::isfinite(e.train_loss));
  }
}

TEST(GptTraining, TheClippedStepsNormSkipsANanStep) { expect_a_nan_step_is_skipped(Backend::Cpu); }

TEST(GptTrainingGpu, TheClippedStepsNormSkipsANanStep) {
  SKIP_WITHOUT_GPU();
  expect_a_nan_step_is_skipped(Backend::Cuda);
}

// RunOptions::val_every: validating inside an epoch (after run steps 2 and 4
// of two 3-step epochs, the last batch short) leaves every training bit as it
// was, in every mode, and the validation losses there are the same bits in
// every mode (the capture modes run the captured inference graphs).
void expect_validating_inside_an_epoch_changes_no_training_bit(Backend backend) {
  const data::ImageDataset train = windows(10, 32, 14), val = windows(6, 32, 15);
  std::map<std::string, std::vector<float>> ref;
  std::vector<ValPoint> ref_vals;
  for (const auto& [mode, split] : testing::kModeRuns) {
    for (const int64_t every : {int64_t(0), int64_t(2)}) {
      RunOptions o = small_gpt(mode, 32, 4);
      o.backend = backend;
      o.epochs = 2;
      o.step_graphs = !split;
      o.val_every = every;
      Trainer t(o, testing::view_of(train), testing::view_of(val));
      std::vector<ValPoint> vals;
      for (int e = 0; e < 2; ++e) {
        const EpochStats st = t.run_epoch();
        vals.insert(vals.end(), st.mid_vals.begin(), st.mid_vals.end());
      }
      const auto state = testing::state_of(t);
      const std::string what = cat(mode_name(mode), split ? " split" : "", ", val_every ", every);
      if (ref.empty()) ref = state;
      EXPECT_EQ(testing::differing_tensors(ref, state, what + " vs eager without"), 0);
      if (every == 0) {
        EXPECT_TRUE(vals.empty()) << what;
        continue;
      }
      ASSERT_EQ(vals.size(), 2u) << what;
      EXPECT_EQ(vals[0].step, 2);
      EXPECT_EQ(vals[1].step, 4);
      std::printf("[ gpt modes ] %s: val loss %.4f after step 2, %.4f after step 4\n", what.c_str(), vals[0].loss,
                  vals[1].loss);
      if (ref_vals.empty()) ref_vals = vals;
      for (size_t k = 0; k < vals.size(); ++k) {
        EXPECT_EQ(vals[k].loss, ref_vals[k].loss) << what << ", point " << k;
        EXPECT_EQ(vals[k].ema_loss, ref_vals[k].ema_loss) << what << ", point " << k;
      }
    }
  }
}

TEST(GptTraining, ValidatingInsideAnEpochChangesNoTrainingBit) {
  expect_validating_inside_an_epoch_changes_no_training_bit(Backend::Cpu);
}

TEST(GptTrainingGpu, ValidatingInsideAnEpochChangesNoTrainingBit) {
  SKIP_WITHOUT_GPU();
  expect_validating_inside_an_epoch_changes_no_training_bit(Backend::Cuda);
}

// A validation after step 1 of a 2-step epoch is the validation of an epoch
// that ends there: the same batch, the same constant learning rate, the same
// bits (main and EMA weights).
TEST(GptTraining, AValidationInsideAnEpochIsTheValidationOfAnEpochEndingThere) {
  const data::ImageDataset train = windows(8, 32, 16), val = windows(6, 32, 17);
  data::ImageDataset first_half = train;
  first_half.count = 4;
  first_half.images.resize(size_t(4 * train.image_bytes()));
  first_half.labels.resize(4);
  RunOptions o = small_gpt(ExecMode::FullCapture, 32, 4);
  o.lr.kind = LrSchedule::Constant;
  o.lr.warmup_fraction = 0.f;
  o.shuffle = false;
  o.val_every = 1;
  Trainer paused(o, testing::view_of(train), testing::view_of(val));
  const EpochStats p = paused.run_epoch();
  ASSERT_EQ(p.steps, 2);
  ASSERT_EQ(p.mid_vals.size(), 1u);
  o.val_every = 0;
  Trainer ended(o, testing::view_of(first_half), testing::view_of(val));
  const EpochStats e = ended.run_epoch();
  ASSERT_EQ(e.steps, 1);
  EXPECT_EQ(p.mid_vals[0].step, 1);
  EXPECT_EQ(p.mid_vals[0].loss, e.val_loss);
  EXPECT_EQ(p.mid_vals[0].ema_loss, e.val_ema_loss);
  std::printf("[ gpt modes ] validation after step 1 of 2: %.6f; of an epoch ending there: %.6f\n", p.mid_vals[0].loss,
              e.val_loss);
}

// The validation loss on the GPU against the CPU's, from the same weights: one
// SGD step at lr 1e-6 (the weights stay all but the initial ones, and the two
// updates differ by 1e-6 x the gradients' rounding), then the captured
// inference graphs over 6 windows, main and EMA weights. fp32 on both sides:
// only the summation order of the matrix products and attention and the
// exponentials' rounding differ, about 1e-7 of the loss (as the cnn's step
// loss in GpuTraining.Fp32LossMatchesCpuOver20Steps); 1e-5 leaves 100x.
TEST(GptTrainingGpu, TheValidationLossIsTheCpusWithinRounding) {
  SKIP_WITHOUT_GPU();
  const data::ImageDataset train = windows(4, 32, 21), val = windows(6, 32, 22);
  RunOptions o = small_gpt(ExecMode::FullCapture, 32, 4);
  o.train.optimizer = OptimizerKind::Sgd;
  o.train.max_grad_norm = 0.f;
  o.lr.base_lr = 1e-6f;
  o.lr.kind = LrSchedule::Constant;
  o.lr.warmup_fraction = 0.f;
  Trainer cpu(o, testing::view_of(train), testing::view_of(val));
  o.backend = Backend::Cuda;
  Trainer gpu(o, testing::view_of(train), testing::view_of(val));
  const EpochStats c = cpu.run_epoch(), g = gpu.run_epoch();
  std::printf("[ gpt gpu vs cpu ] validation loss %.7f on the GPU, %.7f on the CPU (EMA %.7f, %.7f)\n", g.val_loss,
              c.val_loss, g.val_ema_loss, c.val_ema_loss);
  EXPECT_NEAR(g.val_loss, c.val_loss, 1e-5 * c.val_loss);
  EXPECT_NEAR(g.val_ema_loss, c.val_ema_loss, 1e-5 * c.val_ema_loss);
}

// The first 17 tokens of each 33-token window, as a set of 17-token windows.
data::ImageDataset shortened(const data::ImageDataset& d, int keep) {
  data::ImageDataset s = d;
  s.width = keep;
  s.images.assign(size_t(d.count * keep * 4), 0);
  for (int64_t k = 0; k < d.count; ++k)
    std::memcpy(s.images.data() + k * keep * 4, d.images.data() + k * d.image_bytes(), size_t(keep * 4));
  return s;
}

// Note [sequence warm-up]: the warm-up epoch reads the first T + 1 tokens of
// each window, so it is the same step as a model built for T-token windows
// fed those tokens: the same losses and the same weights after it, bit for
// bit; the next epoch runs at the full length.
TEST(GptTraining, ASequenceWarmupTrainsLikeAModelOfTheShorterWindows) {
  const data::ImageDataset long_windows = windows(8, 32, 5), short_windows = shortened(long_windows, 17);
  RunOptions warm = small_gpt(ExecMode::FullCapture, 32, 4);
  warm.epochs = 2;
  warm.lowres_epochs = 1;
  warm.lowres_size = 16;
  RunOptions plain = small_gpt(ExecMode::FullCapture, 16, 4);
  plain.epochs = 2;
  Trainer a(warm, testing::view_of(long_windows), testing::view_of(long_windows));
  Trainer b(plain, testing::view_of(short_windows), testing::view_of(short_windows));
  EXPECT_EQ(a.plans().plan(Variant::TrainLowres).dims.height, 16);
  EXPECT_EQ(a.plans().plan(Variant::TrainBase).dims.height, 32);
  const EpochStats wa = a.run_epoch(), wb = b.run_epoch();
  EXPECT_TRUE(wa.lowres);
  EXPECT_EQ(wa.train_loss, wb.train_loss);
  EXPECT_EQ(testing::differing_tensors(testing::state_of(b), testing::state_of(a), "warm-up epoch vs T = 16"), 0);
  const EpochStats full = a.run_epoch();
  EXPECT_FALSE(full.lowres);
  std::printf("[ gpt seq warm-up ] epoch 1 at T = 16: loss %.4f (both); epoch 2 at T = 32: %.4f\n", wa.train_loss,
              full.train_loss);
}

// 10 steps of 2 and 4 ranks x 8/N against 1 rank x 8, each from the same
// state, within Note [rank-split bounds], with SGD: the per-token loss divides
// by every rank's tokens (a rank that divided by its own would double the
// update), and the embedding's, LayerNorms' and linear layers' weight
// gradients are sums over tokens that the split only reorders. (AdamW divides
// each gradient by its own size, which hides a wrong scale and magnifies the
// rounding of gradients near its epsilon: measured up to 1e-4 of a tensor's
// update.) Then AdamW with the clip: the global norm is taken after the
// all-reduce, so every rank holds the same state.
TEST(GptTraining, RanksMatchOneRankWithTheWholeBatch) {
  const data::ImageDataset all = windows(10 * 8, 32, 7);
  data::ImageDataset window = windows(8, 32, 7);
  auto run = [](int r, OptimizerKind opt) {
    RunOptions o = testing::stepwise_run(small_gpt(ExecMode::FullCapture, 32, 8), 10);
    o.lr.kind = LrSchedule::Constant;
    o.train.optimizer = opt;
    if (opt == OptimizerKind::Sgd) o.train.max_grad_norm = 0.f, o.lr.base_lr = 0.05f;
    o.train.ranks = r;
    return o;
  };
  for (int ranks : {2, 4}) {
    Trainer one(run(1, OptimizerKind::Sgd), testing::view_of(window), testing::view_of(window));
    Trainer many(run(ranks, OptimizerKind::Sgd), testing::view_of(window), testing::view_of(window));
    const testing::StepwiseDiff d = testing::compare_stepwise(one, many, window, all, 10);
    for (int r = 1; r < ranks; ++r)
      EXPECT_EQ(testing::differing_tensors(testing::state_of(many, 0), testing::state_of(many, r), "ranks"), 0);
    std::printf("[ gpt dp ] sgd, %d ranks x %d vs 1 rank x 8, 10 steps: updates within %.3g overall, worst %.3g (%s)\n",
                ranks, 8 / ranks, d.total, d.worst, d.worst_name.c_str());
    EXPECT_LT(d.total, testing::kRankSplitStepTotal) << "step " << d.total_step;
    EXPECT_LT(d.worst, testing::kRankSplitStepWorst) << d.worst_name << ", step " << d.worst_step;
    EXPECT_LT(d.loss_rel, 1e-5);
  }
  Trainer adam(run(2, OptimizerKind::AdamW), testing::view_of(window), testing::view_of(window));
  for (int e = 0; e < 3; ++e) adam.run_epoch();
  EXPECT_EQ(testing::differing_tensors(testing::state_of(adam, 0), testing::state_of(adam, 1), "adamw ranks"), 0);
}

}  // namespace
}  // namespace tr
