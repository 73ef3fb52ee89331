#pragma once
// What to build: the model (docs/design.md, "From a model to a graph") and the training recipe that shapes the
// compiled graph (optimizer, AMP, ranks). Values that change per step (learning
// rate, loss scale) are not here: they live in device memory.
#include <cstdint>
#include <string>
#include <vector>

#include "framework/core/dtype.h"
#include "framework/graph/layer_spec.h"

namespace tr {

enum class OptimizerKind { Sgd, Lars, AdamW };
// How BatchNorm shares statistics among data-parallel ranks (no effect with one
// rank unless collectives are forced):
//  Batch   - synchronised BN: each BN layer all-reduces its batch sums in the
//            forward and its gradient sums in the backward, so N ranks x B/N
//            train exactly like 1 rank x B. Two small collectives per BN layer
//            sit on the critical path of every step.
//  Running - each rank normalises with its own shard's statistics (data
//            parallelism without SyncBatchNorm); the shards' batch statistics
//            are averaged once per step, after the backward (in FIRST_COMM),
//            before they update the running statistics, so every rank keeps
//            the same state. One collective per step instead of 2 per layer.
enum class BnSync { Batch, Running };

// A model to build: its registry entry (framework/graph/model_registry.h) and
// the shape of what it reads. model_config(name) fills it from the registry.
struct ModelConfig {
  std::string name = "mlp";
  double width = 1.0;  // multiplies every layer's channels
  int in_height = 28, in_width = 28, in_channels = 1, classes = 10;
  // InputPrep: x = (u8 / 255 - mean[c]) / std[c], per channel (up to 4).
  float norm_mean[4] = {0.2860f, 0.2860f, 0.2860f, 0.2860f};
  float norm_std[4] = {0.3530f, 0.3530f, 0.3530f, 0.3530f};
  // A layer list of its own instead of the registry entry's (tests, and models
  // described outside the registry); `name` then only labels the run.
  std::vector<LayerSpec> layers;
  // > 0: a sequence model. It reads windows of seq_len + 1 int32 tokens (the
  // inputs and, one later, their targets: TokenPrep, token_prep.h), `classes`
  // is its vocabulary, and its variants' height is the sequence length. Its
  // samples are the windows' bytes: in_height 1, in_width seq_len + 1 and
  // in_channels 4 (sequence_input below), as its DataView holds them.
  int64_t seq_len = 0;
  bool is_sequence() const { return seq_len > 0; }
};

// Sets m's input to windows of seq_len + 1 tokens over a vocabulary of `vocab` (ModelConfig::seq_len).
void sequence_input(ModelConfig& m, int64_t seq_len, int vocab);

// Training-time augmentation inside the captured input graphs (Note
// [augmentation], framework/ops/kernels/augment.h).
struct AugmentConfig {
  bool flip = false;  // mirror left-right with probability 1/2
  int translate = 0;  // shift by up to this many pixels each way, zero-padded
  int cutout = 0;     // side of a square set to the data mean; 0 off
  uint64_t seed = 0;  // keys every decision with (batch, sample)
  bool any() const { return flip || translate > 0 || cutout > 0; }
};

struct TrainConfig {
  OptimizerKind optimizer = OptimizerKind::AdamW;
  // Mixed precision: 16-bit storage and tensor-core compute with f32 master
  // weights. amp_dtype F16 (--precision amp) scales the loss; BF16
  // (--precision bf16) keeps f32's exponent range and runs at a fixed scale 1.
  bool amp = false;
  DType amp_dtype = DType::F16;
  bool loss_scaling() const { return amp && amp_dtype == DType::F16; }
  int ranks = 1;  // data-parallel ranks (threads on the CPU, GPUs on CUDA)
  float label_smoothing = 0.1f;
  float weight_decay = 0.f;
  float momentum = 0.9f;  // SGD / LARS
  float beta1 = 0.9f, beta2 = 0.999f, adam_eps = 1e-8f;
  // > 0: clip the global gradient norm to this on the device (GradNorm, then
  // AdamW with attrs.clip; framework/ops/range/grad_norm.h). AdamW only.
  float max_grad_norm = 0.f;
  float trust_coef = 0.02f;  // LARS
  float bn_momentum = 0.1f;  // running += bn_momentum * (batch - running)
  // ema += (1 - decay) * (param - ema) after each update, evaluated beside the
  // weights. 0: no EMA (its memory, its update and its evaluation are absent).
  float ema_decay = 0.99f;
  bool has_ema() const { return ema_decay > 0.f; }
  float init_loss_scale = 1.f;  // fp16 AMP defaults to 65536 (set by the caller)
  int loss_scale_growth_interval = 1000;
  int64_t schedule_len = 1;  // entries in the device-side learning-rate table
  // Weight gradients on COMP_2 beside the data-gradient chain (Note [streams
  // inside a graph]). tr-train and tr-bench turn it on for CUDA up to each
  // model's measured batch per GPU (harness/lib/bench/side_streams.h): with a cuDNN /
  // cuBLAS handle per stream (Note [a library handle per stream]) the GPU tests
  // find every mode bit-identical to one stream (side_streams_gpu_test.cpp).
  // Off here, so the CPU and the tests keep one stream unless they ask.
  bool side_streams = false;
  // Merge node pairs that walk the same activations (Note [fusion] in
  // framework/graph/fusion.h); false (--no-fusion) keeps them apart.
  bool fusion = true;
  // With fusion: only these rules of fusion_rules.h (their names); empty: every rule.
  std::vector<std::string> fusion_rules;
  // Emit the collectives (gradient buckets, BN statistics, validation metrics)
  // even with one rank, so a single GPU runs NCCL inside its captured graphs.
  bool force_collectives = false;
  BnSync bn_sync = BnSync::Batch;
  // The element type of BatchNorm's sums and gradient sums, and so of their
  // all-reduces: F64 on the CPU, F32 on CUDA (Note [BatchNorm sums in double]
  // in framework/ops/compute/batchnorm.h). The session sets it from the backend.
  DType bn_sums = DType::F32;
  // With collectives: deep gradients all-reduced in buckets of this many bytes,
  // issued during the backward (Note [gradient buckets]); <= 0: one bucket.
  int64_t bucket_bytes = int64_t(25) << 20;
  AugmentConfig augment;
  // Flip test-time augmentation: validation averages the logits of each image
  // and its mirror (InputPrep with tta_flip, then TtaMean).
  bool tta_flip = false;
  bool has_collectives() const { return ranks > 1 || force_collectives; }
};

std::string optimizer_name(OptimizerKind k);
OptimizerKind parse_optimizer(const std::string& s);  // throws UserError
std::string bn_sync_name(BnSync s);
BnSync parse_bn_sync(const std::string& s);  // throws UserError

}  // namespace tr
