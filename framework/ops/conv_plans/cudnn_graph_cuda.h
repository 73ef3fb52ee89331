#pragma once
// cuDNN's backend graph API in a few helpers: owned descriptors, NHWC
// tensors, convolution descriptors, the engine configs a heuristic offers, and
// what an engine says of itself (deterministic or not, compiled at run time or
// not, tensor cores or not). Used by the convolutions' engine plans
// (conv_engine_cuda.h) and the cuDNN probes (experiments/). Host-only header.
#include <cudnn.h>

#include <cstdint>
#include <vector>

#include "framework/core/dtype.h"

namespace tr::cudnn_graph {

// cuDNN's name for a tensor's element type: f32, f16 or bf16 (others throw).
cudnnDataType_t data_type(DType t);

void check(cudnnStatus_t s, const char* what);  // throws tr::Error naming `what`

// One backend descriptor, destroyed with its owner.
class Desc {
 public:
  explicit Desc(cudnnBackendDescriptorType_t t);
  ~Desc();
  Desc(Desc&& o) noexcept : d_(o.d_) { o.d_ = nullptr; }
  Desc(const Desc&) = delete;
  Desc& operator=(const Desc&) = delete;
  cudnnBackendDescriptor_t get() const { return d_; }
  Desc& set(cudnnBackendAttributeName_t a, cudnnBackendAttributeType_t t, int64_t n, const void* v);
  Desc& desc(cudnnBackendAttributeName_t a, const Desc& v);  // a descriptor-valued attribute
  bool try_finalize();  // false where cuDNN refuses (an engine that does not take the graph)
  Desc& finalize();     // throws where cuDNN refuses

 private:
  cudnnBackendDescriptor_t d_ = nullptr;
};

// A 4-d tensor in cuDNN's logical order (n, c, h, w) with NHWC strides.
Desc tensor(int64_t uid, int64_t n, int64_t c, int64_t h, int64_t w, cudnnDataType_t t, bool is_virtual);
// A 2-d cross-correlation, f32 accumulation, padding `pad`, stride `stride`.
Desc convolution(int64_t pad, int64_t stride = 1);

// The first `most` engine configs heuristic `mode` offers for `graph` (none
// where the heuristic refuses the graph).
std::vector<Desc> engine_configs(const Desc& graph, cudnnBackendHeurMode_t mode, int64_t most);

struct EngineInfo {
  int64_t index = -1;  // cuDNN's global engine index
  bool deterministic = true, runtime_compiled = false;
  bool tensor_cores = false;  // CUDNN_NUMERICAL_NOTE_TENSOR_CORE: TF32 where the tensors are f32
};
EngineInfo engine_info(const Desc& cfg);

}  // namespace tr::cudnn_graph
