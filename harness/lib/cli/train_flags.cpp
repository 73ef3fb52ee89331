#include "harness/lib/cli/train_flags.h"

#include <algorithm>
#include <climits>
#include <cstdio>

#include "datasets/idx_dataset.h"
#include "datasets/pad.h"
#include "datasets/synthetic.h"
#include "framework/core/error.h"
#include "framework/core/fnv1a.h"
#include "framework/runtime/context_factory.h"
#include "harness/lib/cli/algo_flags.h"
#include "harness/lib/cli/precision_flag.h"
#include "harness/lib/cli/process_agreement.h"
#include "harness/lib/cli/process_launch.h"
#include "harness/lib/cli/token_data.h"

namespace tr {

const char* const kTrainFlagsUsage = R"(  --model NAME             a registered model (default mlp): %s
  --device cpu|cuda        where to run (default cpu)
  --mode M                 eager | partial-capture | full-capture (default full-capture)
  --epochs N               epochs (default 1; the recipe's with a recipe)
  --batch N                global batch size (default: the model's, e.g. mlp 200, cnn 256)
  --data-dir DIR           IDX image set (MNIST family: train-/t10k- or *-train-/*-test- files;
                           default $TR_DATA_DIR or /usr/share/datasets/fashion-mnist). Images
                           smaller than the model's input are zero-padded to it (28 -> 32).
                           GPT models: token shards, tr-data's (with their manifest.json) or
                           llm.c's (*train*.bin, *val*.bin)
  --synthetic              train on deterministic synthetic data of the model's shape instead
  --train-subset N         use the first N training images (GPT: windows; default: all)
  --val-subset N           use the first N test images (GPT: windows; default: all)
  --seq T                  GPT models: train on windows of T tokens (default and at most: the
                           model's context, e.g. gpt2 1024)
  --seq-warmup T           GPT models: train the first --seq-warmup-epochs epochs on the first T
                           tokens of each window (T < --seq), then at the full length
  --seq-warmup-epochs N    (default 1 with --seq-warmup)
  --val-every N            also validate after every N-th training step inside an epoch, in
                           the inference graphs (default 0: at each epoch's end only; the
                           recipe's with a recipe)
  --width X                channel multiplier of every layer (default 1.0)
  --image-size S           build the model for S x S inputs (default: the model's own)
  --optimizer sgd|lars|adamw   (default: the model's; mlp adamw, the others sgd)
  --lr X                   peak learning rate (default: the model's, else adamw 1e-3, sgd 0.05,
                           lars 0.1; resnet18 0.2)
  --schedule constant|linear|cosine   (default linear, to 0; the recipe's with a recipe)
  --warmup X               warm-up share of all steps (default 0.1 for sgd/lars, 0 for adamw)
  --weight-decay X         (default: adamw 1e-4, sgd/lars 5e-4)
  --clip-grad-norm X       adamw: scale the gradients down to a global norm of at most X, on the
                           device inside the step (default 0: no clipping; the recipe's with
                           a recipe)
  --label-smoothing X      (default 0.1)
  --ema-decay X            EMA of the weights, evaluated too (default: the recipe's, 0.99,
                           0 for the GPTs; 0: no EMA, its memory and work absent)
  --flip                   augment: mirror each training image left-right with probability 1/2
  --translate N            augment: shift each training image by up to N pixels each way
                           (zero padding; default 0)
  --cutout N               augment: set a random N x N square of each training image to the
                           data mean (default 0: off)
  --no-augment             none of the three (a recipe's included)
  --tta none|flip          test-time augmentation: flip averages the logits of each test image
                           and its mirror (default none)
  --precision P            fp32 | amp | bf16: f32 everywhere; fp16 storage and compute with
                           fp32 master weights and a dynamic loss scale; or bf16 storage and
                           compute with fp32 master weights and no loss scaling
                           (default: the recipe's, else fp32)
  --amp                    --precision amp
  --no-amp                 --precision fp32 (where the recipe says amp)
  --side-streams           weight gradients on a second stream inside the backward graphs
  --no-side-streams        weight gradients on the data-gradient stream
                           (neither: on CUDA when the batch per GPU is at most the model's
                           measured limit, see docs/design.md; never on the CPU)
  --cudnn-benchmark        time the heuristics' plan against cuDNN's deterministic engine configs
                           once per convolution shape and keep the fastest (another process may
                           keep another plan, unless --conv-plans names a file)
  --conv-plans FILE        convolution plans kept in FILE (CUDA only): with --cudnn-benchmark,
                           shapes in FILE take its plan, the others are timed and added to it;
                           without, every shape takes FILE's plan (a shape not in it is an
                           error), so the run repeats the timed run's plans and bits
  --split-steps            full capture launches a training step as its dozen sub-graphs
                           instead of one step graph composed of them (docs/design.md, "The step
                           loop and the step graph")
  --no-fusion              keep apart the node pairs that fusion merges (BatchNorm + residual
                           add + ReLU; gradient fan-in + ReLU backward; 2x2 max pool + the
                           BatchNorm statistics after it; BatchNorm + ReLU + the 2x2 max pool
                           after it; the classifier head and the BatchNorm before it; an fc and
                           the GELU after it, and their backward; an fc and the residual add
                           after it; a LayerNorm's backward and the gradient fan-in after it)
                           and the step's tail apart (SGD's unscale, EMA, f16 copy and BatchNorm
                           statistics; AdamW's unscale, EMA and f16 copy without BatchNorm;
                           the NaN check in the AMP casts; metrics and loss scale in AdvanceStep)
  --nondeterministic       let cuDNN pick non-deterministic algorithms too (CUDA only): runs
                           and modes are then no longer bit-identical
  --no-pdl                 launch our kernels without programmatic dependent launch (CUDA only)
  --cudnn-filter-grad      run the f16 3x3 filter gradients that tr's tensor-core kernel takes
                           through cuDNN instead (CUDA only)
  --keep-memset-nodes      leave the memset nodes of captured graphs as they are instead of
                           running them as kernel nodes (CUDA only)
  --grid-sync              add per-channel partial sums behind grid barriers and run a
                           BatchNorm's phases as one cooperative kernel (CUDA only; the
                           same bits, fewer kernels, slower on the H200)
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
  --force-collectives      run the all-reduces even with one rank (they then leave the
                           values as they are: a check of the communicator)
  --watchdog-ms N          a rank that waits this long for the others in a collective, or for
                           its GPU, is an error on every rank, not a hang (default 120000)
  --seed N                 (default 1)
  --no-shuffle             keep the data order
)";

std::vector<std::string> train_value_flags() {
  std::vector<std::string> f = {"--model",
                                "--device",
                                "--mode",
                                "--epochs",
                                "--batch",
                                "--data-dir",
                                "--train-subset",
                                "--val-subset",
                                "--width",
                                "--optimizer",
                                "--lr",
                                "--schedule",
                                "--warmup",
                                "--weight-decay",
                                "--label-smoothing",
                                "--ema-decay",
                                "--lowres-epochs",
                                "--lowres-size",
                                "--ranks",
                                "--gpus",
                                "--seed",
                                "--bn-sync",
                                "--image-size",
                                "--bucket-mb",
                                "--translate",
                                "--cutout",
                                "--tta",
                                "--watchdog-ms",
                                "--conv-plans",
                                "--clip-grad-norm",
                                "--precision",
                                "--seq",
                                "--seq-warmup",
                                "--seq-warmup-epochs",
                                "--val-every"};
  for (const std::string& p : process_value_flags()) f.push_back(p);
  return f;
}

std::vector<std::string> train_bool_flags() {
  return {"--synthetic",         "--amp",         "--no-amp",           "--no-shuffle", "--side-streams",
          "--no-side-streams",   "--split-steps", "--cudnn-benchmark",  "--flip",       "--no-augment",
          "--force-collectives", "--no-fusion",   "--nondeterministic", "--no-pdl",     "--cudnn-filter-grad",
          "--keep-memset-nodes", "--grid-sync"};
}

namespace {

// The synthetic sets' sizes (Fashion-MNIST's).
constexpr int64_t kSyntheticTrain = 60000, kSyntheticTest = 10000;

RunData load_data(const CliArgs& a, const ModelEntry& e, int image_size, uint64_t seed) {
  // The subsets' values are checked before any data is read or made (their
  // upper bounds, the sets' sizes, after): a typo must not wait for a dataset
  // padded to a zoo model's 224x224.
  for (const char* f : {"--train-subset", "--val-subset"})
    if (a.has(f)) (void)a.integer(f, 1, 1, INT64_MAX);
  RunData d;
  if (a.flag("--synthetic")) {
    TR_USER_CHECK(!a.has("--data-dir"), "give --synthetic or --data-dir, not both");
    // A synthetic item does not depend on the set's size, so only the subsets
    // in use are made: the same images, without 60000 of them to skip.
    const int64_t train_n = a.integer("--train-subset", kSyntheticTrain, 1, kSyntheticTrain);
    const int64_t test_n = a.integer("--val-subset", kSyntheticTest, 1, kSyntheticTest);
    d.train = data::make_synthetic(train_n, image_size, image_size, e.channels, e.classes, seed);
    d.test = data::make_synthetic(test_n, image_size, image_size, e.channels, e.classes, seed + 1);
  } else {
    const std::string dir = a.str("--data-dir", data::default_data_dir());
    d.train = data::load_idx_split(dir, data::Split::Train);
    d.test = data::load_idx_split(dir, data::Split::Test);
    TR_USER_CHECK(d.train.height == d.test.height && d.train.width == d.test.width, dir, ": the train images are ",
                  d.train.height, "x", d.train.width, " but the test images are ", d.test.height, "x", d.test.width);
    // The model has the training labels' classes; a test label past them
    // names a class the model cannot output.
    const auto bad =
        std::find_if(d.test.labels.begin(), d.test.labels.end(), [&](int32_t l) { return l >= d.train.num_classes; });
    TR_USER_CHECK(bad == d.test.labels.end(), dir, ": test label ", *bad, " at index ", bad - d.test.labels.begin(),
                  " is not one of the training labels' ", d.train.num_classes, " classes (0..", d.train.num_classes - 1,
                  ")");
    d.test.num_classes = d.train.num_classes;
    TR_USER_CHECK(d.train.height <= image_size && d.train.width <= image_size, "model ", e.name, " takes ", image_size,
                  "x", image_size, " images but the data's are ", d.train.height, "x", d.train.width,
                  " (build it for them with --image-size ", std::max(d.train.height, d.train.width), ")");
    if (d.train.height != image_size || d.train.width != image_size) {
      d.train = data::pad_images(d.train, image_size);
      d.test = data::pad_images(d.test, image_size);
    }
  }
  d.train_count = a.integer("--train-subset", d.train.count, 1, d.train.count);
  d.test_count = a.integer("--val-subset", d.test.count, 1, d.test.count);
  return d;
}

}  // namespace

std::chrono::milliseconds watchdog_flag(const CliArgs& a) {
  return std::chrono::milliseconds(a.integer("--watchdog-ms", RunOptions{}.watchdog_ms, 100, 86400000));
}

std::string data_digest(const RunData& d) {
  Fnv1a h;
  auto add = [&](const data::ImageDataset& ds, int64_t count) {
    for (int64_t v : {count, int64_t(ds.height), int64_t(ds.width), int64_t(ds.channels), int64_t(ds.num_classes)})
      h.u64(uint64_t(v));
    h.bytes(ds.images.data(), size_t(count * ds.image_bytes()));
    h.bytes(ds.labels.data(), size_t(count) * sizeof ds.labels[0]);
  };
  add(d.train, d.train_count);
  add(d.test, d.test_count);
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h.h));
  return hex;
}

namespace {

// The optimizer and its schedule: the recipe's or the model's values unless
// a flag says otherwise (the model's learning rate goes with its own optimizer only).
void parse_optimization(const CliArgs& a, const ModelEntry& entry, const Recipe& rc, bool recipe_defaults,
                        RunOptions& o) {
  o.train.optimizer = a.has("--optimizer") ? parse_optimizer(a.str("--optimizer", "")) : entry.optimizer;
  const bool adam = o.train.optimizer == OptimizerKind::AdamW;
  float model_lr = default_lr(o.train.optimizer);
  if (!a.has("--optimizer")) model_lr = rc.lr > 0 ? rc.lr : entry.train_lr > 0 ? entry.train_lr : model_lr;
  o.lr.base_lr = static_cast<float>(a.real("--lr", model_lr, 1e-9, 1e3));
  o.lr.kind = parse_lr_schedule(a.str("--schedule", std::string(rc.schedule)));
  const double warmup = recipe_defaults ? rc.warmup : adam ? 0.0 : 0.1;
  o.lr.warmup_fraction = static_cast<float>(a.real("--warmup", warmup, 0.0, 0.99));
  const double wd = recipe_defaults && rc.weight_decay >= 0 ? rc.weight_decay : adam ? 1e-4 : 5e-4;
  o.train.weight_decay = static_cast<float>(a.real("--weight-decay", wd, 0.0, 1.0));
  o.train.max_grad_norm = static_cast<float>(a.real("--clip-grad-norm", adam ? rc.clip_grad_norm : 0.0, 0.0, 1e6));
  TR_USER_CHECK(o.train.max_grad_norm == 0 || adam, "--clip-grad-norm needs --optimizer adamw, not ",
                optimizer_name(o.train.optimizer));
  o.train.label_smoothing = static_cast<float>(a.real("--label-smoothing", rc.label_smoothing, 0.0, 0.99));
  o.train.ema_decay = static_cast<float>(a.real("--ema-decay", rc.ema_decay, 0.0, 0.999999));
}

// Augmentation (Note [augmentation]) and flip test-time augmentation.
void parse_augmentation(const CliArgs& a, const Recipe& rc, RunOptions& o) {
  TR_USER_CHECK(!(a.flag("--no-augment") && (a.flag("--flip") || a.has("--translate") || a.has("--cutout"))),
                "--no-augment contradicts --flip, --translate and --cutout");
  const bool aug = !a.flag("--no-augment");
  o.train.augment.flip = aug && (a.flag("--flip") || rc.flip);
  o.train.augment.translate = aug ? static_cast<int>(a.integer("--translate", rc.translate, 0, 64)) : 0;
  o.train.augment.cutout = aug ? static_cast<int>(a.integer("--cutout", rc.cutout, 0, 4096)) : 0;
  const std::string tta = a.str("--tta", rc.tta_flip ? "flip" : "none");
  TR_USER_CHECK(tta == "none" || tta == "flip", "--tta must be none or flip, got '", tta, "'");
  o.train.tta_flip = tta == "flip";
}

// --precision, or its shorthands --amp and --no-amp; else the recipe's.
void parse_precision(const CliArgs& a, const Recipe& rc, RunOptions& o) {
  TR_USER_CHECK(int(a.has("--precision")) + int(a.flag("--amp")) + int(a.flag("--no-amp")) <= 1,
                "give one of --precision, --amp and --no-amp");
  std::string p = a.str("--precision", std::string(rc.precision));
  if (a.flag("--amp")) p = "amp";
  if (a.flag("--no-amp")) p = "fp32";
  set_precision(p, o.train);
}

// What a run without a recipe starts from: Recipe{}'s values, except that a
// language model trains without label smoothing (GPT-2 and llm.c train so).
Recipe plain_defaults(const ModelEntry& e) {
  Recipe r;
  if (e.is_sequence()) r.label_smoothing = 0.f;
  return r;
}

// The first epochs at a lower resolution: a smaller image side, or for a GPT
// model a shorter window (the session's low-resolution variants either way).
void parse_lowres(const CliArgs& a, const ModelEntry& e, int image_size, RunOptions& o) {
  if (!e.is_sequence()) {
    TR_USER_CHECK(!a.has("--seq-warmup") && !a.has("--seq-warmup-epochs"), "--seq-warmup is for GPT models; ", e.name,
                  " reads images (see --lowres-epochs)");
    o.lowres_epochs = static_cast<int>(a.integer("--lowres-epochs", 0, 0, o.epochs));
    o.lowres_size = static_cast<int>(a.integer("--lowres-size", image_size * 5 / 7, 1, 4096));
    return;
  }
  TR_USER_CHECK(!a.has("--lowres-epochs") && !a.has("--lowres-size"), "model ", e.name,
                " reads tokens: give --seq-warmup T (and --seq-warmup-epochs N) instead of --lowres-*");
  TR_USER_CHECK(a.has("--seq-warmup") || !a.has("--seq-warmup-epochs"), "--seq-warmup-epochs needs --seq-warmup T");
  if (!a.has("--seq-warmup")) return;
  o.lowres_size = static_cast<int>(a.integer("--seq-warmup", 1, 1, e.context));
  o.lowres_epochs = static_cast<int>(a.integer("--seq-warmup-epochs", 1, 1, o.epochs));
}

// The ranks: CPU rank threads or GPUs, and under a launcher every process's
// (Note [processes and ranks]). Then the algorithm flags, which come after the
// GPU count: --conv-plans reads (and may test-write) its file.
void parse_ranks(const CliArgs& a, World* world, RunOptions& o) {
  TR_USER_CHECK(!(a.has("--ranks") && a.has("--gpus")), "give --ranks (CPU) or --gpus (CUDA), not both");
  if (o.backend == Backend::Cpu) {
    TR_USER_CHECK(!a.has("--gpus"), "--gpus needs --device cuda; use --ranks for CPU ranks");
    o.train.ranks = static_cast<int>(a.integer("--ranks", 1, 1, 64));
  } else {
    TR_USER_CHECK(!a.has("--ranks"), "--ranks is for --device cpu; use --gpus with --device cuda");
    o.train.ranks = static_cast<int>(a.integer("--gpus", 1, 1, 64));
    if (world == nullptr) {
      const int have = cuda_device_count();
      TR_USER_CHECK(o.train.ranks <= have, "asked for ", o.train.ranks, " GPUs but ", have, " are visible");
    }
  }
  o.algos = algo_flags(a, o.backend);
  const ProcessRanks pr = process_ranks(a, world, o.backend);
  if (!world) return;
  const char* flag = o.backend == Backend::Cpu ? "--ranks" : "--gpus";
  TR_USER_CHECK(!a.has(flag) || o.train.ranks == pr.total, "under ", world->processes(), " processes x ",
                pr.per_process, " per process there are ", pr.total, " ranks, but ", flag, " says ", o.train.ranks);
  o.train.ranks = pr.total;
  o.first_device = pr.first_device;
  o.world = world;
}

}  // namespace

TrainSetup parse_train_setup(const CliArgs& a, bool recipe_defaults, World* world) {
  TR_USER_CHECK(a.positional().empty(), "unexpected argument '", a.positional().front(), "' (see --help)");
  TrainSetup s;
  RunOptions& o = s.options;
  const ModelEntry& entry = model_entry(a.str("--model", "mlp"));
  s.entry = &entry;
  const Recipe rc = recipe_defaults ? entry.recipe : plain_defaults(entry);
  // A sequence model has no image size: --image-size then only reaches model_config, which refuses it.
  const int image_size = static_cast<int>(a.integer("--image-size", entry.height, 1, 4096));
  TR_USER_CHECK(entry.is_sequence() || !a.has("--seq"), "--seq is for GPT models; ", entry.name, " reads images");
  s.device = a.str("--device", "cpu");
  TR_USER_CHECK(s.device == "cpu" || s.device == "cuda", "--device must be cpu or cuda, got '", s.device, "'");
  o.backend = s.device == "cuda" ? Backend::Cuda : Backend::Cpu;
  o.mode = parse_mode(a.str("--mode", "full-capture"));
  o.epochs = static_cast<int>(a.integer("--epochs", recipe_defaults ? rc.epochs : 1, 1, 100000));
  o.batch = a.integer("--batch", rc.batch > 0 ? rc.batch : entry.train_batch, 1, 1 << 20);
  const double width = a.real("--width", 1.0, 1e-3, 16.0);
  parse_optimization(a, entry, rc, recipe_defaults, o);
  parse_augmentation(a, rc, o);
  parse_precision(a, rc, o);
  const SideStreams side_streams = side_streams_flag(a);
  o.train.fusion = !a.flag("--no-fusion");
  o.train.bn_sync = parse_bn_sync(a.str("--bn-sync", "batch"));
  o.train.bucket_bytes = int64_t(a.real("--bucket-mb", 25.0, 0.0, 1e6) * 1048576.0);
  o.step_graphs = !a.flag("--split-steps");
  parse_lowres(a, entry, image_size, o);
  parse_ranks(a, world, o);
  o.train.side_streams = use_side_streams(side_streams, o.backend, entry, o.batch / o.train.ranks);
  o.train.force_collectives = a.flag("--force-collectives");
  o.watchdog_ms = static_cast<int>(watchdog_flag(a).count());
  o.seed = static_cast<uint64_t>(a.integer("--seed", 1, 0, INT64_MAX));
  o.shuffle = !a.flag("--no-shuffle");
  o.val_every = a.integer("--val-every", rc.val_every, 0, INT64_MAX);
  if (entry.is_sequence()) {
    o.model = model_config(entry.name, width, image_size, 0, 0, a.integer("--seq", entry.context, 1, entry.context));
    s.data = load_token_data(a, o.model, o.seed);
  } else {
    s.data = load_data(a, entry, image_size, o.seed);
    o.model = model_config(entry.name, width, image_size, s.data.train.channels, s.data.train.num_classes);
  }
  if (world)  // the same bits on every process (Note [processes agree])
    check_processes_agree(*world, {{"data (digest of the training and test sets as used)", data_digest(s.data)}},
                          watchdog_flag(a));
  return s;
}

}  // namespace tr
