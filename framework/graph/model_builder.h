#pragma once
// Compiles a model + training recipe into a ComputationGraph: forward, backward,
// AMP casts, NaN check and loss scaling, BN statistics, optimizer, EMA, metrics
// and inference nodes, bucketed by GraphId.
#include <array>
#include <cstdint>

#include "framework/graph/computation_graph.h"
#include "framework/graph/fusion.h"
#include "framework/graph/model_config.h"
#include "framework/graph/model_registry.h"

namespace tr {

// The tensor ids the trainer needs to talk to the compiled graph.
struct CompiledModel {
  ModelConfig model;
  TrainConfig train;
  ComputationGraph cg;
  DType compute_dtype = DType::F32;
  int64_t max_batch = 0;                  // per-rank capacity of the input buffers
  std::array<TensorId, 2> images{};       // u8 [max_batch, H0, W0, C], buffers A and B
  std::array<TensorId, 2> labels_src{};   // i32 [max_batch]
  TensorId lr_table = kNoTensor;          // f32 [schedule_len]
  TensorId step_metrics = kNoTensor;      // f32 [4] of the current training step
  TensorId train_metrics = kNoTensor;     // f32 [4] summed over the epoch
  TensorId val_main_metrics = kNoTensor;  // f32 [4] summed over validation, main weights
  TensorId val_ema_metrics = kNoTensor;   // f32 [4] summed over validation, EMA weights
  bool supports_lowres = false;           // resolution-agnostic (no spatial fc)
  FusionCounts fusions;                   // node pairs merged (TrainConfig::fusion)
};

CompiledModel build_model(const ModelConfig& m, const TrainConfig& t, int64_t max_batch);

}  // namespace tr
