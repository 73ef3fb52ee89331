#pragma once
// Note [model FLOPs]: what a sequence model's training step does, counted as
// PaLM (appendix B) and nanoGPT count it, so tokens/s and model FLOP
// utilisation (MFU) compare with what other trainers report:
//
//   FLOPs per token = 6 N + 12 L C T
//
// N: the parameters without the position table (each weight multiplies and
// adds once in the forward, twice in the backward: 2 + 4 FLOPs per token);
// L: the attention layers, C: the embedding's width, T: the sequence length
// (QK^T and the weighted sum of V, 4 T C forward per token and layer, twice
// that backward, counted in full although the causal mask skips half, as PaLM
// counts it). LayerNorm, GELU, softmax and the optimizer are not counted.
//
// MFU = tokens/s per GPU x FLOPs per token / the GPU's dense fp16/bf16 tensor
// peak, whatever precision the run used (the convention llm.c and nanoGPT
// follow): an fp32 run's MFU says how far it is from what the GPU could do.
#include <cstdint>
#include <string>

#include "framework/graph/model_builder.h"

namespace tr::bench {

struct SequenceFlops {
  int64_t params = 0;  // N, without the position table
  int64_t layers = 0, channels = 0, seq = 0;
  double per_token() const { return 6.0 * double(params) + 12.0 * double(layers * channels * seq); }
};
// The counts of a built sequence model (ModelConfig::seq_len > 0).
SequenceFlops sequence_flops(const CompiledModel& m);

// Dense fp16/bf16 tensor-core peak FLOP/s of one GPU, by the name CUDA gives
// it; 0 for a GPU not in the table (A100 312, H100 SXM 989, H100 PCIe 756,
// H100 NVL 835, H200 989 TFLOP/s, NVIDIA's data sheets without sparsity).
double tensor_peak_flops(const std::string& device_name);

}  // namespace tr::bench
