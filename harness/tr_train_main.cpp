// tr-train: trains a registered model on an IDX image set (Fashion-MNIST by
// default) or on synthetic data, and prints per-epoch loss, accuracy and time.
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "datasets/byte_tokens.h"
#include "datasets/data_view.h"
#include "framework/core/error.h"
#include "framework/graph/model_registry.h"
#include "framework/train/trainer.h"
#include "harness/lib/cli/cli_args.h"
#include "harness/lib/cli/cli_main.h"
#include "harness/lib/cli/conv_plans_file.h"
#include "harness/lib/cli/precision_flag.h"
#include "harness/lib/cli/process_agreement.h"
#include "harness/lib/cli/process_launch.h"
#include "harness/lib/cli/state_digest.h"
#include "harness/lib/cli/train_flags.h"

namespace {

const char* kUsage = R"(usage: tr-train [flags]

Trains a reference model with the whole training step compiled into graphs.

  --recipe plain|tta       the defaults below (plain), or the model's time-to-accuracy recipe
                           (tta: its epochs, batch, learning rate, augmentation, TTA and
                           precision; docs/design.md). Flags override either.
)";
const char* kUsageTail = R"(  --state-hash             print a digest of rank 0's training state at the end: two runs
                           that print the same digest hold the same bits
  --help                   this text

Exit codes: 0 success, 2 bad input (flags, data files), 1 other errors.
)";

int run(int argc, char** argv, tr::World* world) {
  using namespace tr;
  std::vector<std::string> values = train_value_flags(), bools = train_bool_flags();
  values.push_back("--recipe");
  bools.push_back("--help");
  bools.push_back("--state-hash");
  CliArgs a(argc, argv, values, bools);
  if (a.flag("--help")) {
    std::fputs(kUsage, stdout);
    std::printf(kTrainFlagsUsage, model_names().c_str());
    std::fputs(kProcessFlagsUsage, stdout);
    std::fputs(kUsageTail, stdout);
    return 0;
  }
  // Before anything else that the processes do together (Note [processes agree]).
  if (world) check_processes_agree(*world, run_settings("tr-train", a), watchdog_flag(a));
  const std::string recipe = a.str("--recipe", "plain");
  TR_USER_CHECK(recipe == "plain" || recipe == "tta", "--recipe must be plain or tta, got '", recipe, "'");
  const TrainSetup setup = parse_train_setup(a, recipe == "tta", world);
  const RunOptions& o = setup.options;
  const std::string& device = setup.device;
  Trainer t(o, data::data_view(setup.data.train, setup.data.train_count),
            data::data_view(setup.data.test, setup.data.test_count));
  const auto& pc = t.capture();
  save_conv_plans(o.algos.conv_plans.get(), world);
  const std::string processes =
      world ? cat(" in ", world->processes(), world->processes() == 1 ? " process (" : " processes (",
                  world->launch_kind(), ", ", world->library(), ")")
            : "";
  const std::string input = o.model.is_sequence() ? cat(o.model.seq_len, "-token windows, vocabulary ", o.model.classes)
                                                  : cat(o.model.in_height, "x", o.model.in_width, "x",
                                                        o.model.in_channels, ", ", o.model.classes, " classes");
  std::printf("tr-train: model %s (width %g, %s), %s, mode %s, %s, batch %lld, %d rank(s)%s%s, %lld steps/epoch\n",
              o.model.name.c_str(), o.model.width, input.c_str(), device.c_str(), mode_name(o.mode).c_str(),
              precision_name(o.train).c_str(), static_cast<long long>(o.batch), o.train.ranks, processes.c_str(),
              o.train.ranks > 1 ? cat(", BN sync ", bn_sync_name(o.train.bn_sync)).c_str() : "",
              static_cast<long long>(t.steps_per_epoch()));
  const AugmentConfig& aug = o.train.augment;
  if (aug.any() || o.train.tta_flip)
    std::printf("tr-train: augmentation in the input graphs: flip %s, translate %d, cutout %d; test-time: %s\n",
                aug.flip ? "on" : "off", aug.translate, aug.cutout, o.train.tta_flip ? "flip" : "none");
  std::printf(
      "tr-train: %zu nodes, arena %.1f MiB (activations %.1f MiB, %.1f MiB without reuse); atlas %d slots, "
      "%d unique, %d reused; %d captured, %d step graphs, in %.1f ms\n",
      t.model().cg.total_nodes(), t.plans().arena_bytes / 1048576.0, t.plans().activation_pool_bytes / 1048576.0,
      t.plans().activation_no_reuse_bytes / 1048576.0, pc.dedup.total_slots, pc.dedup.unique, pc.dedup.reused,
      pc.captured, pc.step_graphs, pc.capture_ms);
  std::printf("%5s %5s %10s %9s %9s %9s %9s %9s %8s %8s %6s\n", "epoch", "res", "train_loss", "train_acc", "val_loss",
              "val_acc", "ema_loss", "ema_acc", "train_s", "val_s", "skip");
  EpochStats s;
  for (int e = 0; e < o.epochs; ++e) {
    s = t.run_epoch();
    for (const ValPoint& v : s.mid_vals)
      std::printf("  step %lld: val_loss %.4f, val_acc %.4f, ema_loss %.4f, ema_acc %.4f\n",
                  static_cast<long long>(v.step), v.loss, v.acc, v.ema_loss, v.ema_acc);
    std::printf("%5d %5d %10.4f %9.4f %9.4f %9.4f %9.4f %9.4f %8.2f %8.2f %6d\n", s.epoch + 1,
                s.lowres                ? o.lowres_size
                : o.model.is_sequence() ? int(o.model.seq_len)
                                        : o.model.in_height,
                s.train_loss, s.train_acc, s.val_loss, s.val_acc, s.val_ema_loss, s.val_ema_acc, s.train_seconds,
                s.val_seconds, s.skipped_steps);
    std::fflush(stdout);
  }
  if (const double tpb = setup.data.val_tokens_per_byte; tpb > 0)
    std::printf("tr-train: validation loss %.4f nats/token = %.4f bits/byte (EMA %.4f), %.6f tokens a byte\n",
                s.val_loss, data::bits_per_byte(s.val_loss, tpb), data::bits_per_byte(s.val_ema_loss, tpb), tpb);
  if (o.algos.conv_plans) std::printf("tr-train: %s\n", conv_plans_summary(*o.algos.conv_plans).c_str());
  if (a.flag("--state-hash")) std::printf("tr-train: state hash %s\n", state_digest(t).str().c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return tr::run_cli_world("tr-train", &argc, &argv, [&](tr::World* world) { return run(argc, argv, world); });
}
