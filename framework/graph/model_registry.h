#pragma once
// The model registry: every model tr can build, as data (docs/design.md, "From a model to a graph"). An entry
// gives the layer list (a function of the width multiplier and the class
// count), the input it was designed for, its normalisation and what the tools
// use when the command line says nothing. tr-train, tr-bench and the tests read
// it; nothing else knows a model by name.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "framework/graph/layer_spec.h"
#include "framework/graph/model_config.h"

namespace tr {

// The time-to-accuracy recipe (docs/design.md, "Time-to-accuracy recipes"): what `tr-bench tta`
// and `tr-train --recipe tta` default to. Optimizer and batch as the entry's
// training defaults unless set here.
struct Recipe {
  int epochs = 1;
  int64_t batch = 0;   // 0: the entry's train_batch
  float lr = 0.f;      // peak; 0: the entry's train_lr, else the optimizer's default
  float warmup = 0.f;  // share of the steps ramping up linearly; then linear to 0
  float label_smoothing = 0.1f;
  float ema_decay = 0.99f;
  float weight_decay = -1.f;  // < 0: the optimizer's default
  bool flip = false;          // Note [augmentation]
  int translate = 0;
  int cutout = 0;
  bool tta_flip = false;                 // flip test-time augmentation
  std::string_view precision = "fp32";   // fp32, amp or bf16 (--precision)
  double target_acc = 0.9;               // the task's default target (test accuracy, a fraction) ...
  double target_loss = 0;                // ... or, when > 0, a validation loss to reach (nats per token)
  std::string_view schedule = "linear";  // --schedule
  float clip_grad_norm = 0.f;            // --clip-grad-norm
  int64_t val_every = 0;                 // --val-every: validations inside an epoch, where a target is judged too
};

struct ModelEntry {
  std::string_view name;
  std::string_view summary;
  std::vector<LayerSpec> (*layers)(double width, int classes) = nullptr;
  int height = 0, width = 0, channels = 0, classes = 0;  // the input and classes it was designed for
  std::array<float, 3> norm_mean{}, norm_std{};          // per channel of that input
  // tr-train's defaults
  int64_t train_batch = 0;
  OptimizerKind optimizer = OptimizerKind::Sgd;
  float train_lr = 0.f;  // peak learning rate; 0: the optimizer's default (default_lr)
  // tr-bench's defaults: global batches swept on a GPU and on the CPU, optimizer
  std::vector<int64_t> gpu_batches, cpu_batches;
  OptimizerKind bench_optimizer = OptimizerKind::Sgd;
  Recipe recipe;
  // CUDA: weight gradients on a second stream (Note [streams inside a graph])
  // when the batch per GPU is at most this; 0: never. Measured on the H200
  // (docs/design.md, "Decisions and what decided them"): a small batch leaves the
  // GPU room for the weight gradients beside the data-gradient chain, a large
  // one makes them contend (cnn 1024, resnet18 2048, resnet50 64, vgg16bn 64).
  int64_t side_streams_max_batch = 0;
  // > 0: a sequence model (ModelConfig::seq_len) with positions for this many
  // tokens, the longest window it reads and its default. `classes` is then its
  // vocabulary; height, width, channels and the normalisation are unused (0).
  int64_t context = 0;
  bool is_sequence() const { return context > 0; }
};

const std::vector<ModelEntry>& model_registry();
// The entry named `name`; a UserError listing the known names otherwise.
const ModelEntry& model_entry(std::string_view name);
std::string model_names();  // "mlp, cnn, ..." for messages and --help

// A ModelConfig for `name` at its designed input (square side `image_size`
// when > 0, `channels` and `classes` when > 0 instead). A sequence model reads
// windows of `seq` tokens (its context when 0; at most its context) over its
// vocabulary (`classes` when > 0 instead); an image size or channel count for
// it, or a sequence length for an image model, is a UserError.
ModelConfig model_config(std::string_view name, double width = 1.0, int image_size = 0, int channels = 0,
                         int classes = 0, int64_t seq = 0);

// The layer list of a configured model: its own, else its registry entry's.
std::vector<LayerSpec> model_layers(const ModelConfig& m);

}  // namespace tr
