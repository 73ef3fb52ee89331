#include "framework/graph/model_registry.h"

#include "framework/core/error.h"
#include "framework/core/setting.h"
#include "framework/graph/models/model_lists.h"

namespace tr {
namespace {

// Per-channel pixel statistics of the data each model was designed for.
constexpr std::array<float, 3> kFashionMnistMean = {0.2860f, 0.2860f, 0.2860f};
constexpr std::array<float, 3> kFashionMnistStd = {0.3530f, 0.3530f, 0.3530f};
constexpr std::array<float, 3> kCifar10Mean = {0.4914f, 0.4822f, 0.4465f};
constexpr std::array<float, 3> kCifar10Std = {0.2470f, 0.2435f, 0.2616f};
constexpr std::array<float, 3> kImageNetMean = {0.485f, 0.456f, 0.406f};
constexpr std::array<float, 3> kImageNetStd = {0.229f, 0.224f, 0.225f};

// GPT-2 124M (llm.c's and nanoGPT's), and a small one of its blocks for the
// CPU and the text task (byte tokens, datasets/byte_tokens.h).
constexpr GptShape kGpt2{.depth = 12, .heads = 12, .head_dim = 64, .context = 1024};
constexpr int kGpt2Vocab = 50304;  // GPT-2's 50,257 tokens padded to a multiple of 128, as llm.c pads them
constexpr GptShape kGptD6{.depth = 6, .heads = 6, .head_dim = 64, .context = 256};
constexpr int kByteVocab = 264;  // 256 bytes and the document token (datasets/byte_tokens.h), padded to 8s

std::vector<LayerSpec> gpt2_layers(double width, int vocab) { return gpt_layers(kGpt2, width, vocab); }
std::vector<LayerSpec> gpt_d6_layers(double width, int vocab) { return gpt_layers(kGptD6, width, vocab); }

std::vector<ModelEntry> make_registry() {
  using O = OptimizerKind;
  std::vector<ModelEntry> r;
  // clang-format off
  // The last member is the time-to-accuracy recipe (docs/design.md, "Time-to-accuracy recipes"
  // gives the reasoning and the runs); {}: none yet.
  r.push_back({"mlp", "784-1024-512-256-10 perceptron with ReLU and biases (the seed's benchmark)", mlp_layers, 28,
               28, 1, 10, kFashionMnistMean, kFashionMnistStd, 200, O::AdamW, 0.f, {200}, {200}, O::AdamW,
               Recipe{.epochs = 10, .batch = 500, .lr = 1.5e-3f, .warmup = 0.f, .label_smoothing = 0.1f,
                      .ema_decay = 0.99f, .weight_decay = -1.f, .flip = true, .translate = 0, .cutout = 0,
                      .tta_flip = true, .precision = "amp", .target_acc = 0.895}});
  r.push_back({"cnn", "airbench-style conv net: conv 32, blocks 64/128/256 with max pools, global max pool, fc/8",
               cnn_layers, 28, 28, 1, 10, kFashionMnistMean, kFashionMnistStd, 256, O::Sgd, 0.f, {64, 256, 1024, 4096},
               {32}, O::Lars,
               Recipe{.epochs = 7, .batch = 512, .lr = 0.4f, .warmup = 0.2f, .label_smoothing = 0.1f,
                      .ema_decay = 0.99f, .weight_decay = -1.f, .flip = true, .translate = 0, .cutout = 0,
                      .tta_flip = true, .precision = "amp", .target_acc = 0.94},
               1024});
  // lr 0.2: the best of 0.05/0.1/0.2/0.4 for 10 epochs of padded Fashion-MNIST
  // at batch 512 (H200; docs/design.md, "Time-to-accuracy recipes").
  r.push_back({"resnet18", "ResNet-18 for CIFAR (3x3 stem, basic blocks 64-512, global average pool)",
               resnet18_layers, 32, 32, 3, 10, kCifar10Mean, kCifar10Std, 512, O::Sgd, 0.2f, {128, 512, 2048}, {8},
               O::Sgd,
               Recipe{.epochs = 12, .batch = 512, .lr = 0.1f, .warmup = 0.2f, .label_smoothing = 0.1f,
                      .ema_decay = 0.99f, .weight_decay = -1.f, .flip = true, .translate = 1, .cutout = 0,
                      .tta_flip = true, .precision = "amp", .target_acc = 0.95},
               2048});
  r.push_back({"resnet50", "ResNet-50 v1.5 (7x7 stem, bottlenecks with the stride on the 3x3, 1000 classes)",
               resnet50_layers, 224, 224, 3, 1000, kImageNetMean, kImageNetStd, 256, O::Sgd, 0.f,
               {32, 64, 128, 256}, {2},
               O::Sgd, {}, 64});
  r.push_back({"vgg16bn", "VGG-16 with BatchNorm: 13 conv+BN+ReLU, 5 max pools, 4096-4096 classifier",
               vgg16bn_layers, 224, 224, 3, 1000, kImageNetMean, kImageNetStd, 128, O::Sgd, 0.f, {32, 128}, {2}, O::Sgd,
               {}, 64});
  // Sequence models: no image (0 x 0 x 0), `classes` is the vocabulary, the
  // last member the context. lr 6e-4: GPT-2 small's, as llm.c and nanoGPT train
  // it; no EMA of the weights, as neither keeps one (and the text task judges
  // the weights themselves).
  r.push_back({"gpt2",
               "GPT-2 124M: 12 pre-LN blocks, 12 heads, 768 channels, context 1024, vocabulary 50,304, tied head",
               gpt2_layers, 0, 0, 0, kGpt2Vocab, {}, {}, 8, O::AdamW, 6e-4f, {1, 4, 16, 64}, {1}, O::AdamW,
               Recipe{.ema_decay = 0.f}, 0, kGpt2.context});
  // The recipe and its target: docs/design.md, "Time-to-accuracy recipes" (tr-data's linux-doc shards).
  r.push_back({"gpt2-d6",
               "GPT-2's blocks at depth 6: 6 heads, 384 channels, context 256, bytes (257 tokens padded to 264), tied",
               gpt_d6_layers, 0, 0, 0, kByteVocab, {}, {}, 32, O::AdamW, 1e-3f, {8, 32, 128}, {2}, O::AdamW,
               Recipe{.epochs = 2, .batch = 32, .lr = 2e-3f, .warmup = 0.05f, .label_smoothing = 0.f,
                      .ema_decay = 0.f, .weight_decay = 0.1f, .precision = "bf16", .target_loss = 1.08,
                      .schedule = "cosine", .clip_grad_norm = 1.f, .val_every = 250},
               0, kGptD6.context});
  // clang-format on
  return r;
}

}  // namespace

const std::vector<ModelEntry>& model_registry() {
  static const std::vector<ModelEntry> registry = make_registry();
  return registry;
}

std::string model_names() {
  std::string s;
  for (const ModelEntry& e : model_registry()) s += cat(s.empty() ? "" : ", ", e.name);
  return s;
}

const ModelEntry& model_entry(std::string_view name) {
  for (const ModelEntry& e : model_registry())
    if (e.name == name) return e;
  throw UserError(cat("unknown model '", name, "' (known: ", model_names(), ")"));
}

namespace {

ModelConfig sequence_config(const ModelEntry& e, double width, int image_size, int channels, int classes, int64_t seq) {
  TR_USER_CHECK(image_size == 0 && channels == 0, "model ", e.name,
                " reads tokens: an image size or channel count has no meaning for it");
  TR_USER_CHECK(seq >= 0 && seq <= e.context, "model ", e.name, " reads windows of 1 to ", e.context,
                " tokens (its context), not ", seq);
  TR_USER_CHECK(classes >= 0 && classes != 1, "model ", e.name, " needs a vocabulary of at least 2, got ", classes);
  ModelConfig m;
  m.name = std::string(e.name);
  m.width = width;
  sequence_input(m, seq > 0 ? seq : e.context, classes > 0 ? classes : e.classes);
  return m;
}

}  // namespace

ModelConfig model_config(std::string_view name, double width, int image_size, int channels, int classes, int64_t seq) {
  const ModelEntry& e = model_entry(name);
  TR_USER_CHECK(width > 0 && width <= 16, setting("width"), " must be in (0, 16], got ", width);
  if (e.is_sequence()) return sequence_config(e, width, image_size, channels, classes, seq);
  TR_USER_CHECK(seq == 0, "model ", name, " reads images: a sequence length has no meaning for it");
  TR_USER_CHECK(image_size >= 0 && channels >= 0 && channels <= 4 && classes >= 0, "model ", name,
                ": bad input override (image size ", image_size, ", channels ", channels, ", classes ", classes,
                "; at most 4 channels)");
  ModelConfig m;
  m.name = std::string(e.name);
  m.width = width;
  m.in_height = image_size > 0 ? image_size : e.height;
  m.in_width = image_size > 0 ? image_size : e.width;
  m.in_channels = channels > 0 ? channels : e.channels;
  m.classes = classes > 0 ? classes : e.classes;
  TR_USER_CHECK(m.classes >= 2, "model ", name, " needs at least 2 classes, got ", m.classes);
  // Channels beyond the design's reuse its last channel's statistics.
  for (int c = 0; c < 4; ++c) {
    const size_t k = size_t(std::min(c, e.channels - 1));
    m.norm_mean[c] = e.norm_mean[k];
    m.norm_std[c] = e.norm_std[k];
  }
  return m;
}

std::vector<LayerSpec> model_layers(const ModelConfig& m) {
  if (!m.layers.empty()) return m.layers;
  return model_entry(m.name).layers(m.width, m.classes);
}

}  // namespace tr
