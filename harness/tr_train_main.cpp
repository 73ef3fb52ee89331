// tr-train: trains a registered model on an IDX image set (Fashion-MNIST by
// default) or on synthetic data, and prints per-epoch loss, accuracy and time.
#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "datasets/data_view.h"
#include "datasets/idx_dataset.h"
#include "datasets/pad.h"
#include "datasets/synthetic.h"
#include "framework/core/error.h"
#include "framework/graph/model_registry.h"
#include "framework/runtime/context_factory.h"
#include "framework/train/trainer.h"
#include "harness/lib/cli_args.h"
#include "harness/lib/cli_main.h"

namespace {

const char* kUsage = R"(usage: tr-train [flags]

Trains a reference model with the whole training step compiled into graphs.

  --model NAME             a registered model (default mlp): %s
  --device cpu|cuda        where to run (default cpu)
  --mode M                 eager | partial-capture | full-capture (default full-capture)
  --epochs N               epochs (default 1)
  --batch N                global batch size (default: the model's, e.g. mlp 200, cnn 256)
  --data-dir DIR           IDX image set (MNIST family: train-/t10k- or *-train-/*-test- files;
                           default $TR_DATA_DIR or /usr/share/datasets/fashion-mnist). Images
                           smaller than the model's input are zero-padded to it (28 -> 32)
  --synthetic              train on deterministic synthetic data of the model's shape instead
  --train-subset N         use the first N training images (default: all)
  --val-subset N           use the first N test images (default: all)
  --width X                channel multiplier of every layer (default 1.0)
  --image-size S           build the model for S x S inputs (default: the model's own)
  --optimizer sgd|lars|adamw   (default: the model's; mlp adamw, the others sgd)
  --lr X                   peak learning rate (default: the model's, else adamw 1e-3, sgd 0.05,
                           lars 0.1; resnet18 0.2)
  --schedule constant|linear|cosine   (default linear, to 0)
  --warmup X               warm-up share of all steps (default 0.1 for sgd/lars, 0 for adamw)
  --weight-decay X         (default: adamw 1e-4, sgd/lars 5e-4)
  --label-smoothing X      (default 0.1)
  --ema-decay X            EMA of the weights, evaluated too (default 0.99)
  --amp                    fp16 storage/compute with fp32 master weights and loss scaling
  --side-streams           weight gradients on a second stream inside the backward graphs
                           (faster on small batches; cuBLAS/cuDNN then no longer promise
                           bitwise-reproducible results)
  --cudnn-benchmark        time cuDNN's deterministic algorithms once per convolution shape and
                           keep the fastest (reproducible within a process only)
  --split-steps            full capture launches a training step as its dozen sub-graphs
                           (DESIGN §3) instead of one step graph composed of them
  --lowres-epochs N        train the first N epochs at --lowres-size (models without a
                           spatial fully connected layer)
  --lowres-size S          low resolution side (default 5/7 of the input side: 20 for 28)
  --bn-sync batch|running  with several ranks: BN statistics all-reduced in every BN layer
                           (batch, default: N ranks train like one with the whole batch) or
                           per-rank BN with the running statistics averaged once per step
  --bucket-mb X            with several ranks: all-reduce the deep gradients in buckets of X MB,
                           issued during the backward (default 25; 0: one bucket after it)
  --ranks N                data-parallel ranks on the CPU (default 1)
  --gpus N                 data-parallel ranks on CUDA (default 1)
  --seed N                 (default 1)
  --no-shuffle             keep the data order
  --help                   this text

Exit codes: 0 success, 2 bad input (flags, data files), 1 other errors.
)";

// The data a run trains on: synthetic at the model's shape, or an IDX set
// padded to the model's input side.
struct RunData {
  tr::data::ImageDataset train, test;
};

RunData load_data(const tr::CliArgs& a, const tr::ModelEntry& e, int image_size, uint64_t seed) {
  using namespace tr;
  RunData d;
  if (a.flag("--synthetic")) {
    TR_USER_CHECK(!a.has("--data-dir"), "give --synthetic or --data-dir, not both");
    d.train = data::make_synthetic(60000, image_size, image_size, e.channels, e.classes, seed);
    d.test = data::make_synthetic(10000, image_size, image_size, e.channels, e.classes, seed + 1);
    return d;
  }
  const std::string dir = a.str("--data-dir", data::default_data_dir());
  d.train = data::load_idx_split(dir, data::Split::Train);
  d.test = data::load_idx_split(dir, data::Split::Test);
  TR_USER_CHECK(d.train.height == d.test.height && d.train.width == d.test.width, dir, ": the train images are ",
                d.train.height, "x", d.train.width, " but the test images are ", d.test.height, "x", d.test.width);
  TR_USER_CHECK(d.test.num_classes <= d.train.num_classes, dir, ": the test split has label ",
                d.test.num_classes - 1, ", but the training split only labels ", d.train.num_classes, " classes");
  d.test.num_classes = d.train.num_classes;
  TR_USER_CHECK(d.train.height <= image_size && d.train.width <= image_size, "model ", e.name, " takes ", image_size,
                "x", image_size, " images but the data's are ", d.train.height, "x", d.train.width,
                " (build it for them with --image-size ", std::max(d.train.height, d.train.width), ")");
  if (d.train.height != image_size || d.train.width != image_size) {
    d.train = data::pad_images(d.train, image_size);
    d.test = data::pad_images(d.test, image_size);
  }
  return d;
}

int run(int argc, char** argv) {
  using namespace tr;
  CliArgs a(argc, argv,
            {"--model", "--device", "--mode", "--epochs", "--batch", "--data-dir", "--train-subset", "--val-subset",
             "--width", "--optimizer", "--lr", "--schedule", "--warmup", "--weight-decay", "--label-smoothing",
             "--ema-decay", "--lowres-epochs", "--lowres-size", "--ranks", "--gpus", "--seed", "--bn-sync",
             "--image-size", "--bucket-mb"},
            {"--synthetic", "--amp", "--no-shuffle", "--side-streams", "--split-steps", "--cudnn-benchmark", "--help"});
  if (a.flag("--help")) {
    std::printf(kUsage, model_names().c_str());
    return 0;
  }
  TR_USER_CHECK(a.positional().empty(), "unexpected argument '", a.positional().front(), "' (see --help)");
  RunOptions o;
  const ModelEntry& entry = model_entry(a.str("--model", "mlp"));
  const int image_size = static_cast<int>(a.integer("--image-size", entry.height, 1, 4096));
  const std::string device = a.str("--device", "cpu");
  TR_USER_CHECK(device == "cpu" || device == "cuda", "--device must be cpu or cuda, got '", device, "'");
  o.backend = device == "cuda" ? Backend::Cuda : Backend::Cpu;
  o.mode = parse_mode(a.str("--mode", "full-capture"));
  o.epochs = static_cast<int>(a.integer("--epochs", 1, 1, 100000));
  o.batch = a.integer("--batch", entry.train_batch, 1, 1 << 20);
  const double width = a.real("--width", 1.0, 1e-3, 16.0);
  o.train.optimizer = a.has("--optimizer") ? parse_optimizer(a.str("--optimizer", "")) : entry.optimizer;
  const bool adam = o.train.optimizer == OptimizerKind::AdamW;
  // The model's own learning rate goes with its own optimizer only.
  const float model_lr = !a.has("--optimizer") && entry.train_lr > 0 ? entry.train_lr : default_lr(o.train.optimizer);
  o.lr.base_lr = static_cast<float>(a.real("--lr", model_lr, 1e-9, 1e3));
  o.lr.kind = parse_lr_schedule(a.str("--schedule", "linear"));
  o.lr.warmup_fraction = static_cast<float>(a.real("--warmup", adam ? 0.0 : 0.1, 0.0, 0.99));
  o.train.weight_decay = static_cast<float>(a.real("--weight-decay", adam ? 1e-4 : 5e-4, 0.0, 1.0));
  o.train.label_smoothing = static_cast<float>(a.real("--label-smoothing", 0.1, 0.0, 0.99));
  o.train.ema_decay = static_cast<float>(a.real("--ema-decay", 0.99, 0.0, 0.999999));
  o.train.amp = a.flag("--amp");
  o.train.side_streams = a.flag("--side-streams");
  o.train.bn_sync = parse_bn_sync(a.str("--bn-sync", "batch"));
  o.train.bucket_bytes = int64_t(a.real("--bucket-mb", 25.0, 0.0, 1e6) * 1048576.0);
  o.step_graphs = !a.flag("--split-steps");
  o.cudnn_benchmark = a.flag("--cudnn-benchmark");
  if (o.train.amp) o.train.init_loss_scale = 65536.f;
  o.lowres_epochs = static_cast<int>(a.integer("--lowres-epochs", 0, 0, o.epochs));
  o.lowres_size = static_cast<int>(a.integer("--lowres-size", image_size * 5 / 7, 1, 4096));
  TR_USER_CHECK(!(a.has("--ranks") && a.has("--gpus")), "give --ranks (CPU) or --gpus (CUDA), not both");
  if (o.backend == Backend::Cpu) {
    TR_USER_CHECK(!a.has("--gpus"), "--gpus needs --device cuda; use --ranks for CPU ranks");
    o.train.ranks = static_cast<int>(a.integer("--ranks", 1, 1, 64));
  } else {
    TR_USER_CHECK(!a.has("--ranks"), "--ranks is for --device cpu; use --gpus with --device cuda");
    o.train.ranks = static_cast<int>(a.integer("--gpus", 1, 1, 64));
    const int have = cuda_device_count();
    TR_USER_CHECK(o.train.ranks <= have, "asked for ", o.train.ranks, " GPUs but ", have, " are visible");
  }
  o.seed = static_cast<uint64_t>(a.integer("--seed", 1, 0, INT64_MAX));
  o.shuffle = !a.flag("--no-shuffle");

  const RunData d = load_data(a, entry, image_size, o.seed);
  const data::ImageDataset &train = d.train, &test = d.test;
  o.model = model_config(entry.name, width, image_size, train.channels, train.num_classes);
  const int64_t ntrain = a.integer("--train-subset", 0, 1, train.count);
  const int64_t nval = a.integer("--val-subset", 0, 1, test.count);

  Trainer t(o, data::data_view(train, ntrain), data::data_view(test, nval));
  const auto& pc = t.capture();
  std::printf("tr-train: model %s (width %g, %dx%dx%d, %d classes), %s, mode %s, %s, batch %lld, %d rank(s)%s, "
              "%lld steps/epoch\n",
              o.model.name.c_str(), o.model.width, o.model.in_height, o.model.in_width, o.model.in_channels,
              o.model.classes,
              device.c_str(), mode_name(o.mode).c_str(), o.train.amp ? "amp fp16" : "fp32",
              static_cast<long long>(o.batch), o.train.ranks,
              o.train.ranks > 1 ? cat(", BN sync ", bn_sync_name(o.train.bn_sync)).c_str() : "",
              static_cast<long long>(t.steps_per_epoch()));
  std::printf("tr-train: %zu nodes, arena %.1f MiB (activations %.1f MiB, %.1f MiB without reuse); atlas %d slots, "
              "%d unique, %d reused; %d captured, %d step graphs, in %.1f ms\n",
              t.model().cg.total_nodes(), t.plans().arena_bytes / 1048576.0, t.plans().activation_pool_bytes / 1048576.0,
              t.plans().activation_no_reuse_bytes / 1048576.0, pc.dedup.total_slots, pc.dedup.unique, pc.dedup.reused,
              pc.captured, pc.step_graphs, pc.capture_ms);
  std::printf("%5s %5s %10s %9s %9s %9s %9s %9s %8s %8s %6s\n", "epoch", "res", "train_loss", "train_acc",
              "val_loss", "val_acc", "ema_loss", "ema_acc", "train_s", "val_s", "skip");
  for (int e = 0; e < o.epochs; ++e) {
    const EpochStats s = t.run_epoch();
    std::printf("%5d %5d %10.4f %9.4f %9.4f %9.4f %9.4f %9.4f %8.2f %8.2f %6d\n", s.epoch + 1,
                s.lowres ? o.lowres_size : o.model.in_height, s.train_loss, s.train_acc, s.val_loss, s.val_acc,
                s.val_ema_loss, s.val_ema_acc, s.train_seconds, s.val_seconds, s.skipped_steps);
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return tr::run_cli("tr-train", [&] { return run(argc, argv); }); }
