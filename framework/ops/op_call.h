#pragma once
// The calling convention shared by every op implementation, CPU and CUDA.
// A node is resolved once against a memory plan into an OpCall / RangeCall
// (pointers, shapes, attributes); the kernel functions never look anything up.
#include <cstdint>

#include "framework/core/dtype.h"
#include "framework/core/shape.h"
#include "framework/core/variant_dims.h"
#include "framework/ops/train_scalars.h"

namespace tr {

class Communicator;  // framework/comm/communicator.h

struct TensorRef {
  void* data = nullptr;
  DType dtype = DType::F32;
  Shape shape;
  template <typename T>
  T* as() const {
    return static_cast<T*>(data);
  }
};

// Attributes of COMPUTE ops: named fields, each op reads the ones it documents.
struct OpAttrs {
  float scale = 1.f;                  // FcFwd/FcBwd*: y = scale * x W^T (+ b)
  int kernel = 0;                     // Conv*: R of w[K,R,R,C]; MaxPool*/AvgPool*: the window side
  int stride = 1;                     // Conv*, MaxPool*, AvgPool*
  int pad = 0;                        // Conv*: zero padding; MaxPool*: padding that never wins the max
  float eps = 1e-5f;                  // BnReluApply / BnFold
  float label_smoothing = 0.f;        // SoftmaxXent
  bool relu = true;                   // BnRelu*: apply ReLU after the affine; Add: after the sum
  bool bn_rank_local = false;         // BnRelu*: statistics over this rank's samples (count = batch*H*W)
                                      // instead of every rank's (global_batch*H*W, synchronised BN)
  bool with_grad = true;              // SoftmaxXent: also write dlogits
  bool has_bias = false;              // FcFwd / FcBwdWeight
  bool fc_last_dim = false;           // Fc*: x is [.., K], its leading dims kept ([B,T,C] -> [B,T,M]);
                                      // false: x [N, K..] is flattened to [N, K] (fc.h)
  int heads = 0;                      // Attention*: heads; each owns C / heads channels (attention.h)
  float norm_mean[4] = {0, 0, 0, 0};  // InputPrep: x = (u8/255 - mean) / std, per channel
  float norm_std[4] = {1, 1, 1, 1};
  // InputPrep augmentation and flip-TTA (Note [augmentation], framework/ops/kernels/augment.h).
  bool aug_flip = false;  // mirror left-right with probability 1/2
  int aug_translate = 0;  // shift by up to this many pixels each way (zero padding)
  int aug_cutout = 0;     // side of a square set to the mean; 0 off
  uint64_t aug_seed = 0;  // the run's seed
  bool tta_flip = false;  // x holds 2N images: the N inputs, then their mirrors
};

// A host-side batch waiting in pinned (GPU) or plain (CPU) memory for CopyIn.
struct HostBatch {
  const uint8_t* images = nullptr;  // [Bmax, H0, W0, C]
  const int32_t* labels = nullptr;  // [Bmax]
};

// Per-rank execution environment: what every kernel may need besides tensors.
struct ExecEnv {
  TrainScalars* scalars = nullptr;     // in the arena (device memory on CUDA)
  void* stream = nullptr;              // cudaStream_t; null on the CPU
  const void* gpu = nullptr;           // const GpuHandles* (cuDNN, cuBLAS, workspace); null on the CPU
  Communicator* comm = nullptr;        // null with one rank
  const HostBatch* staging = nullptr;  // staging[0] = A, staging[1] = B
  int rank = 0;
  int ranks = 1;
};

struct OpCall {
  const TensorRef* in = nullptr;
  int n_in = 0;
  const TensorRef* out = nullptr;
  int n_out = 0;
  const OpAttrs* attrs = nullptr;
  const VariantDims* variant = nullptr;  // the variant this node was resolved for
  const ExecEnv* env = nullptr;
};
using OpFn = void (*)(const OpCall&);

// A tensor inside a region: element offset from the region's start. Offsets are
// multiples of kRegionAlignElems so parallel regions of f16 and f32 share them.
struct Segment {
  int64_t offset = 0;
  int64_t elems = 0;
  bool decay = false;  // weight decay / LARS adaptation applies (weights, not BN or bias)
};

struct RangeOperand {
  void* data = nullptr;
  DType dtype = DType::F32;
  int64_t elems = 0;              // whole region, padding included (padding stays zero)
  const Segment* segs = nullptr;  // tensors inside, in layout order
  int n_segs = 0;
};

struct RangeAttrs {
  int slot = 0;                                          // CopyIn: staging slot (0 = A, 1 = B)
  float t = 0.f;                                         // Lerp factor
  bool skip_on_inf = false;                              // Lerp: do nothing when scalars.found_inf
  bool average = false;                                  // AllReduceSum: divide by the number of ranks
  float momentum = 0.9f;                                 // SGD / LARS
  float weight_decay = 0.f;                              // applied to segments with decay=true
  float beta1 = 0.9f, beta2 = 0.999f, adam_eps = 1e-8f;  // AdamW
  bool clip = false;                                     // AdamW: g *= scalars.clip_scale first (GradNorm's)
  float max_norm = 0.f;                                  // GradNorm: the norm the gradients are clipped to
  float trust_coef = 0.001f;                             // LARS trust coefficient
  float growth_factor = 2.f, backoff_factor = 0.5f;      // UpdateLossScale
  int growth_interval = 2000;
  bool dynamic_scale = true;  // UpdateLossScale: false keeps the scale fixed
  bool update_scale = false;  // AdvanceStep: then UpdateLossScale's update, with the attributes above
  bool check_finite = false;  // Cast f16 -> f32, GradNorm: a NaN/Inf gradient sets scalars.pending_inf (CheckFinite)
  // SgdNesterov with the step's tail folded in (Note [optimizer tail] in
  // framework/graph/recipe_graphs.h):
  bool unscale = false;  // g *= scalars.grad_unscale before the update (AMP; UnscaleGrads' rounding)
  bool ema = false;      // an EMA operand follows the optimizer's states (and the statistics' EMA theirs)
  float ema_t = 0.f;     // with ema: ema += ema_t*(p - ema) after the update
  // More operands: BatchNorm's running and batch statistics [and, with ema,
  // their EMA], moved as UPDATE_STATS's Lerp and then the EMA's would (factor
  // t, then ema_t).
  bool bn_stats = false;
};

struct RangeCall {
  const RangeOperand* ops = nullptr;
  int n_ops = 0;
  const RangeAttrs* attrs = nullptr;
  const ExecEnv* env = nullptr;
};
using RangeFn = void (*)(const RangeCall&);

constexpr int64_t kRegionAlignElems = 128;  // 256 bytes of f16, 512 of f32
constexpr int64_t kArenaAlign = 256;

}  // namespace tr
