// What the training flags resolve to (harness/lib/cli/train_flags.h): the model's
// time-to-accuracy recipe as the defaults of `--recipe tta` and `tr-bench tta`,
// the plain defaults otherwise, a flag over either; and, under a launcher
// spread over several hosts, each process's GPUs counted on its own host.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "harness/lib/cli/precision_flag.h"
#include "harness/lib/cli/process_launch.h"
#include "harness/lib/cli/train_flags.h"
#include "tests/thread_world.h"
#include "tests/train_setup_util.h"

namespace tr {
namespace {

using testing::setup_of;

constexpr const char* kTiny = "--synthetic --train-subset 8 --val-subset 8";

// The cnn's recipe, written out: a change to the registry's entry must change
// this test too (docs/design.md, "Time-to-accuracy recipes" gives the runs behind it).
TEST(TrainSetup, TheCnnRecipeIsTheTtaDefault) {
  const RunOptions o = setup_of(std::string("--model cnn ") + kTiny, true).options;
  EXPECT_EQ(o.epochs, 7);
  EXPECT_EQ(o.batch, 512);
  EXPECT_EQ(o.train.optimizer, OptimizerKind::Sgd);
  EXPECT_FLOAT_EQ(o.lr.base_lr, 0.4f);
  EXPECT_FLOAT_EQ(o.lr.warmup_fraction, 0.2f);
  EXPECT_FLOAT_EQ(o.train.label_smoothing, 0.1f);
  EXPECT_FLOAT_EQ(o.train.ema_decay, 0.99f);
  EXPECT_FLOAT_EQ(o.train.weight_decay, 5e-4f);  // the recipe leaves it to the optimizer: SGD-like 5e-4
  EXPECT_TRUE(o.train.augment.flip);
  EXPECT_EQ(o.train.augment.translate, 0);
  EXPECT_EQ(o.train.augment.cutout, 0);
  EXPECT_TRUE(o.train.tta_flip);
  EXPECT_TRUE(o.train.amp);
}

// Every model with a recipe: each setting is the recipe's (or the rule for
// what the recipe leaves open), and the plain defaults differ where the
// recipe does.
TEST(TrainSetup, EveryRecipeIsTheTtaDefaultAndPlainIsNot) {
  int models_with_a_recipe = 0;
  for (const ModelEntry& e : model_registry()) {
    const Recipe& r = e.recipe;
    if (r.epochs == Recipe{}.epochs && r.batch == 0 && r.lr == 0.f) continue;  // no recipe ({})
    ++models_with_a_recipe;
    const std::string model(e.name);
    const RunOptions t = setup_of("--model " + model + " " + kTiny, true).options;
    const bool adam = e.optimizer == OptimizerKind::AdamW;
    EXPECT_EQ(t.epochs, r.epochs) << model;
    EXPECT_EQ(t.batch, r.batch > 0 ? r.batch : e.train_batch) << model;
    EXPECT_EQ(t.train.optimizer, e.optimizer) << model;
    EXPECT_FLOAT_EQ(t.lr.base_lr, r.lr > 0 ? r.lr : e.train_lr > 0 ? e.train_lr : default_lr(e.optimizer)) << model;
    EXPECT_FLOAT_EQ(t.lr.warmup_fraction, r.warmup) << model;
    EXPECT_FLOAT_EQ(t.train.weight_decay, r.weight_decay >= 0 ? r.weight_decay : adam ? 1e-4f : 5e-4f) << model;
    EXPECT_FLOAT_EQ(t.train.label_smoothing, r.label_smoothing) << model;
    EXPECT_FLOAT_EQ(t.train.ema_decay, r.ema_decay) << model;
    EXPECT_EQ(t.train.augment.flip, r.flip) << model;
    EXPECT_EQ(t.train.augment.translate, r.translate) << model;
    EXPECT_EQ(t.train.augment.cutout, r.cutout) << model;
    EXPECT_EQ(t.train.tta_flip, r.tta_flip) << model;
    EXPECT_EQ(precision_name(t.train), r.precision) << model;
    EXPECT_EQ(t.lr.kind, parse_lr_schedule(std::string(r.schedule))) << model;
    EXPECT_FLOAT_EQ(t.train.max_grad_norm, r.clip_grad_norm) << model;
    EXPECT_EQ(t.val_every, r.val_every) << model;
    // The plain defaults: one epoch, the entry's batch, no augmentation, fp32.
    const RunOptions p = setup_of("--model " + model + " " + kTiny, false).options;
    EXPECT_EQ(p.epochs, 1) << model;
    EXPECT_EQ(p.batch, e.train_batch) << model;
    EXPECT_FALSE(p.train.augment.any()) << model;
    EXPECT_FALSE(p.train.tta_flip) << model;
    EXPECT_FALSE(p.train.amp) << model;
    EXPECT_FLOAT_EQ(p.lr.warmup_fraction, adam ? 0.f : 0.1f) << model;
    EXPECT_EQ(p.lr.kind, LrSchedule::Linear) << model;
    EXPECT_EQ(p.train.max_grad_norm, 0.f) << model;
    EXPECT_EQ(p.val_every, 0) << model;
    // Flags win over the recipe (a GPT model refuses the image flags).
    const std::string image_flags = e.is_sequence() ? "" : " --no-augment --tta none";
    const RunOptions f = setup_of("--model " + model + " " + kTiny +
                                      " --epochs 2 --batch 16 --lr 0.5 --warmup 0 --no-amp --schedule constant "
                                      "--clip-grad-norm 0 --val-every 3" +
                                      image_flags,
                                  true)
                             .options;
    EXPECT_EQ(f.epochs, 2) << model;
    EXPECT_EQ(f.batch, 16) << model;
    EXPECT_FLOAT_EQ(f.lr.base_lr, 0.5f) << model;
    EXPECT_FLOAT_EQ(f.lr.warmup_fraction, 0.f) << model;
    EXPECT_FALSE(f.train.amp) << model;
    EXPECT_EQ(f.lr.kind, LrSchedule::Constant) << model;
    EXPECT_EQ(f.train.max_grad_norm, 0.f) << model;
    EXPECT_EQ(f.val_every, 3) << model;
    EXPECT_FALSE(f.train.augment.any()) << model;
    EXPECT_FALSE(f.train.tta_flip) << model;
    // --precision over the recipe's: bf16 runs without loss scaling, amp starts at 2^16.
    const RunOptions b = setup_of("--model " + model + " " + kTiny + " --precision bf16", true).options;
    EXPECT_TRUE(b.train.amp) << model;
    EXPECT_EQ(b.train.amp_dtype, DType::BF16) << model;
    EXPECT_FALSE(b.train.loss_scaling()) << model;
    EXPECT_EQ(b.train.init_loss_scale, 1.f) << model;
    const RunOptions a = setup_of("--model " + model + " " + kTiny + " --precision amp", false).options;
    EXPECT_EQ(a.train.amp_dtype, DType::F16) << model;
    EXPECT_TRUE(a.train.loss_scaling()) << model;
    EXPECT_EQ(a.train.init_loss_scale, 65536.f) << model;
  }
  EXPECT_EQ(models_with_a_recipe, 4);  // mlp, cnn, resnet18, gpt2-d6 (model_registry.cpp)
}

// Four processes on two hosts, two rank threads each (--ranks-per-process 2):
// each host's processes take devices 0-1 and 2-3 of their own host, not of the
// whole job, and the run knows it spans nodes.
TEST(TrainSetup, ProcessesCountTheirDevicesOnTheirOwnHost) {
  const std::vector<std::string> hosts = {"node-a", "node-b", "node-a", "node-b"};
  const int P = int(hosts.size());
  auto hub = std::make_shared<testing::ThreadWorldHub>(P);
  std::vector<int> first(size_t(P), -1), ranks(size_t(P), 0);
  std::vector<std::string> kinds(static_cast<size_t>(P));
  std::vector<std::thread> threads;
  for (int p = 0; p < P; ++p)
    threads.emplace_back([&, p] {
      testing::ThreadWorld w(hub, p, hosts);
      const RunOptions o =
          setup_of(std::string("--model mlp --device cpu --ranks-per-process 2 ") + kTiny, false, &w).options;
      first[size_t(p)] = o.first_device;
      ranks[size_t(p)] = o.train.ranks;
      kinds[size_t(p)] = w.launch_kind();
    });
  for (auto& t : threads) t.join();
  const std::vector<int> want = {0, 0, 2, 2};  // node index 0, 0, 1, 1 on each host, x 2 devices
  EXPECT_EQ(first, want);
  for (int p = 0; p < P; ++p) {
    EXPECT_EQ(ranks[size_t(p)], 8) << "process " << p;
    EXPECT_EQ(kinds[size_t(p)], "nodes") << "process " << p;
  }
}

}  // namespace
}  // namespace tr
