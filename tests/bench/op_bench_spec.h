#pragma once
// What tr_bench_ops times: one Spec per op launch at one model's shapes (the
// catalogue, op_bench_specs.cpp), run by ops_gpu_bench.cpp. CUDA builds only.
#include <string>
#include <vector>

#include "framework/ops/op_registry.h"

namespace tr::bench {

struct TSpec {
  DType dt;
  Shape s;
  double lo = -1, hi = 1;   // uniform fill range (I32: labels in [0, hi))
  bool shape_only = false;  // the op reads its shape only (ConvBwdData's x): not filled, not in GB/s
  bool unread = false;      // filled (a derive reads it) but the op reads its shape only: not in GB/s
};

struct Spec {
  std::string name;
  OpFn fn = nullptr;
  std::vector<TSpec> in, out;
  OpAttrs attrs;
  VariantDims variant;
  OpKind conv = OpKind::Count;  // a conv kind: prepare its plan first
  bool cudnn_conv = false;      // plan with ConvPlanCache::Options::tc_filter off: cuDNN, beside our kernel
  double flops = 0;
  // Optional: before timing, in[derive_to...] = derive(in[derive_from]) with
  // these attrs (a backward's y, or its recorded argmax, made by its forward, so
  // the data is realistic).
  OpFn derive = nullptr;
  int derive_from = 0;
  std::vector<int> derive_to;
};

// Every benchmark: the cnn at batch 256 and 1024 and the mlp (f16 and f32),
// the ResNet-50 convolutions and pools, and the zoo's layers (f16).
std::vector<Spec> op_bench_specs();

}  // namespace tr::bench
