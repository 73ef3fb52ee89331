// Training without an EMA of the weights (--ema-decay 0): the EMA's tensors,
// its update, its 16-bit copy and its evaluation are absent, and everything
// else trains bit for bit as with an EMA (the EMA feeds nothing back). The
// small GPT (AdamW, no BatchNorm) in every mode and precision, fused and not;
// the cnn (SGD with BatchNorm's statistics in its tail) in fp16 AMP.
#include <gtest/gtest.h>

#include <cstdio>

#include "datasets/token_window_set.h"
#include "datasets/token_windows.h"
#include "tests/gpu_test_util.h"
#include "tests/train_test_util.h"

namespace tr {
namespace {

constexpr int kVocab = 264;

data::ImageDataset gpt_windows(int64_t count, uint64_t seed) {
  return data::window_images(data::make_synthetic_tokens(count * 32 + 1, kVocab, seed), 32, kVocab, "the test's");
}

RunOptions small_gpt() {
  RunOptions o;
  o.model = model_config("gpt2-d6", 0.25, 0, 0, 0, 32);
  o.train.optimizer = OptimizerKind::AdamW;
  o.train.weight_decay = 0.1f;
  o.train.max_grad_norm = 1.f;
  o.batch = 4;
  o.epochs = 2;
  o.lr.base_lr = 3e-3f;
  o.seed = 5;
  return o;
}

// What a model built without an EMA must not hold or run.
void expect_no_ema_in(const Trainer& t, const std::string& what) {
  const ComputationGraph& cg = t.model().cg;
  int ema_tensors = 0;
  for (TensorId id = 0; id < cg.num_tensors(); ++id) {
    const Role r = cg.tensor(id).role;
    ema_tensors += r == Role::EmaParam || r == Role::EmaParamCompute || r == Role::EmaBnRunning;
  }
  EXPECT_EQ(ema_tensors, 0) << what;
  for (GraphId g : {GraphId::EMA_UPDATE, GraphId::CAST_EMA_FP32_TO_FP16, GraphId::INF_EMA})
    EXPECT_TRUE(cg.nodes(g).empty()) << what << ": " << graph_name(g) << " has nodes";
  for (const Node& n : cg.nodes(GraphId::OPTIMIZER)) EXPECT_FALSE(n.range_attrs.ema) << what << ": " << n.label;
}

// Trains `o` with the EMA (decay 0.99) and without (0) in each of `modes`;
// every state tensor of the run without equals the run with, bit for bit, and
// so do the validation loss and the smaller arena. Returns the bytes saved.
int64_t expect_trains_as_with_an_ema(RunOptions o, const data::ImageDataset& train, const data::ImageDataset& val,
                                     const std::vector<ExecMode>& modes, const std::string& what) {
  o.train.ema_decay = 0.99f;
  Trainer with(o, testing::view_of(train), testing::view_of(val));
  EpochStats ref;
  for (int e = 0; e < o.epochs; ++e) ref = with.run_epoch();
  const auto ref_state = testing::state_of(with);
  const int64_t ref_bytes = with.plans().plan(Variant::TrainBase).arena_bytes;
  int64_t saved = 0;
  for (ExecMode mode : modes) {
    o.mode = mode;
    o.train.ema_decay = 0.f;
    Trainer without(o, testing::view_of(train), testing::view_of(val));
    const std::string w = cat(what, " ", mode_name(mode));
    expect_no_ema_in(without, w);
    EpochStats s;
    for (int e = 0; e < o.epochs; ++e) s = without.run_epoch();
    const auto state = testing::state_of(without);
    // The run without an EMA holds a subset of the state: compare that subset.
    EXPECT_LT(state.size(), ref_state.size()) << w;
    EXPECT_EQ(testing::differing_tensors(state, ref_state, w + ": without an EMA vs with"), 0);
    EXPECT_EQ(s.train_loss, ref.train_loss) << w;
    EXPECT_EQ(s.val_loss, ref.val_loss) << w;
    EXPECT_EQ(s.val_ema_loss, s.val_loss) << w << ": without an EMA, its metrics are the weights'";
    EXPECT_NE(ref.val_ema_loss, ref.val_loss) << w << ": with one, the EMA is evaluated apart";
    saved = ref_bytes - without.plans().plan(Variant::TrainBase).arena_bytes;
    EXPECT_GT(saved, 0) << w << ": the EMA's memory is gone";
    std::printf("[ no ema ] %s: %zu of %zu state tensors kept, none differs; %lld bytes of %lld saved\n", w.c_str(),
                state.size(), ref_state.size(), static_cast<long long>(saved), static_cast<long long>(ref_bytes));
  }
  return saved;
}

void expect_gpt_trains_as_with_an_ema(Backend backend) {
  const data::ImageDataset train = gpt_windows(10, 41), val = gpt_windows(4, 42);
  for (const testing::PrecisionCase& p : testing::kPrecisions)
    for (bool fusion : {true, false}) {
      RunOptions o = small_gpt();
      o.backend = backend;
      o.mode = ExecMode::FullCapture;
      testing::set_precision_case(o.train, p);
      o.train.fusion = fusion;
      expect_trains_as_with_an_ema(o, train, val, {ExecMode::Eager, ExecMode::FullCapture},
                                   cat("gpt ", p.name, fusion ? " fused" : " unfused"));
    }
}

void expect_cnn_trains_as_with_an_ema(Backend backend) {
  RunOptions o = testing::small_run("cnn", OptimizerKind::Sgd, ExecMode::FullCapture, 16);
  o.backend = backend;
  o.train.amp = true;
  o.train.init_loss_scale = 1024.f;
  o.epochs = 2;
  const auto train = testing::run_data(o, 3 * 16 - 4, 43), val = testing::run_data(o, 16, 44);
  expect_trains_as_with_an_ema(o, train, val, {ExecMode::Eager, ExecMode::FullCapture}, "cnn amp");
}

TEST(NoEma, TheGptTrainsAsWithOneInEveryModeAndPrecision) { expect_gpt_trains_as_with_an_ema(Backend::Cpu); }

TEST(NoEma, TheCnnsBatchNormStatisticsMoveAsWithOne) { expect_cnn_trains_as_with_an_ema(Backend::Cpu); }

TEST(NoEmaGpu, TheGptTrainsAsWithOneInEveryModeAndPrecision) {
  SKIP_WITHOUT_GPU();
  expect_gpt_trains_as_with_an_ema(Backend::Cuda);
}

TEST(NoEmaGpu, TheCnnsBatchNormStatisticsMoveAsWithOne) {
  SKIP_WITHOUT_GPU();
  expect_cnn_trains_as_with_an_ema(Backend::Cuda);
}

}  // namespace
}  // namespace tr
