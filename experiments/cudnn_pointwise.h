#pragma once
// Pointwise operations of cuDNN's backend graph API, for the fusion probe
// (cudnn_fusion_probe.cu); the rest of the API's helpers are the framework's
// (framework/ops/conv_plans/cudnn_graph_cuda.h).
#ifdef TR_HAVE_CUDA
#include <cudnn.h>

#include "framework/ops/conv_plans/cudnn_graph_cuda.h"

namespace tr::cudnn_graph {

Desc pointwise_mode(cudnnPointwiseMode_t mode);  // f32 math
// The operation y = mode(x[, b]).
Desc pointwise_op(const Desc& mode, const Desc& x, const Desc* b, const Desc& y);

}  // namespace tr::cudnn_graph
#endif  // TR_HAVE_CUDA
