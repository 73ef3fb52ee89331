#pragma once
// Helpers shared by the CUDA op launchers (*_cuda.cu): f32/f16/bf16 load-store,
// 16-byte vectors, dtype dispatch, launcher preconditions, the device's SM count
// and the scratch workspace. Only included from .cu files.
//
// Note [deterministic kernels]
// The equivalence tests compare eager and graph-captured training bit for bit,
// so every kernel here produces the same bits on every run: no float atomics,
// reductions in a fixed order (per-thread partial sums over a fixed row set,
// shared-memory trees of fixed shape, per-block partials summed in block order),
// and launch geometry that depends only on shapes and the device's SM count.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <array>
#include <cstdint>
#include <initializer_list>
#include <mutex>
#include <type_traits>

#include "framework/core/error.h"
#include "framework/core/gpu_check_cuda.h"
#include "framework/ops/gpu_handles.h"
#include "framework/ops/kernels/kernel_launch_cuda.h"
#include "framework/ops/op_call.h"

namespace tr::cuda {

// ---- scalar conversions (fp32 accumulation everywhere) ----
__device__ __forceinline__ float to_f(float v) { return v; }
__device__ __forceinline__ float to_f(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_f(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T>
__device__ __forceinline__ T from_f(float v);
template <>
__device__ __forceinline__ float from_f<float>(float v) {
  return v;
}
template <>
__device__ __forceinline__ __half from_f<__half>(float v) {
  return __float2half_rn(v);
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_f<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

// ---- base-2 exponentials on the special-function unit (softmaxes in base 2) ----
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;
// 2^x by ex2.approx (relative error 2^-22), subnormal results flushed to 0; 2^-inf = 0.
__device__ __forceinline__ float ex2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

// ---- vectors: VEC elements of T in one aligned load/store (16 bytes at most) ----
template <typename T, int VEC>
struct alignas(sizeof(T) * VEC) Vec {
  T v[VEC];
};

template <typename T, int VEC>
__device__ __forceinline__ void load_vec(const T* p, float (&out)[VEC]) {
  const Vec<T, VEC> v = *reinterpret_cast<const Vec<T, VEC>*>(p);
#pragma unroll
  for (int i = 0; i < VEC; ++i) out[i] = to_f(v.v[i]);
}

template <typename T, int VEC>
__device__ __forceinline__ void store_vec(T* p, const float (&in)[VEC]) {
  Vec<T, VEC> v;
#pragma unroll
  for (int i = 0; i < VEC; ++i) v.v[i] = from_f<T>(in[i]);
  *reinterpret_cast<Vec<T, VEC>*>(p) = v;
}

// Elements of T in 16 bytes: the widest vector a thread loads.
template <typename T>
constexpr int kVec16 = int(16 / sizeof(T));

inline bool aligned_to(const void* p, size_t bytes) { return (reinterpret_cast<uintptr_t>(p) % bytes) == 0; }

// ---- dtype dispatch: f(T{}) with T = float, __half or __nv_bfloat16; F64 and others throw ----
template <typename F>
void dispatch_float(DType t, const char* op, F&& f) {
  switch (t) {
    case DType::F32: f(float{}); return;
    case DType::F16: f(__half{}); return;
    case DType::BF16: f(__nv_bfloat16{}); return;
    default: throw Error(cat(op, ": dtype ", dtype_name(t), " is not supported on CUDA (f32, f16 or bf16 only)"));
  }
}

template <typename T>
constexpr DType dtype_of() {
  if constexpr (std::is_same_v<T, float>) return DType::F32;
  else if constexpr (std::is_same_v<T, __half>) return DType::F16;
  else return DType::BF16;
}

// ---- launcher preconditions ----
inline cudaStream_t stream_of(const OpCall& c) { return static_cast<cudaStream_t>(c.env->stream); }

inline const GpuHandles& handles_of(const OpCall& c, const char* op) {
  TR_CHECK(c.env != nullptr && c.env->gpu != nullptr, op, ": no GPU handles in the ExecEnv");
  return *static_cast<const GpuHandles*>(c.env->gpu);
}

inline const OpAttrs& attrs_of(const OpCall& c, const char* op) {
  TR_CHECK(c.attrs != nullptr, op, ": no attributes");
  return *c.attrs;
}

inline void check_dtype(const TensorRef& t, DType want, const char* op, const char* what) {
  TR_CHECK(t.dtype == want, op, ": ", what, " has dtype ", dtype_name(t.dtype), ", expected ", dtype_name(want));
}

inline void check_numel(const TensorRef& t, int64_t want, const char* op, const char* what) {
  TR_CHECK(t.shape.numel() == want, op, ": ", what, " has shape ", t.shape.str(), " (", t.shape.numel(),
           " elements), expected ", want, " elements");
}

// NHWC activation: rows = N*H*W pixels of C channels.
struct RowsC {
  int64_t rows = 0;
  int64_t c = 0;
};
inline RowsC rows_c(const TensorRef& t, const char* op) {
  TR_CHECK(t.shape.rank >= 2, op, ": expected an [N,...,C] tensor, got ", t.shape.str());
  const int64_t c = t.shape[t.shape.rank - 1];
  return {t.shape.numel() / c, c};
}

// ---- device properties ----
// Asked of the driver once, when a rank's GpuHandles are made
// (query_sm_count); kernels read that copy.
inline int sm_count(const GpuHandles& g) {
  TR_CHECK(g.sm_count > 0, "GpuHandles of device ", g.device, " carry no SM count");
  return g.sm_count;
}

// ---- scratch: the arena's workspace; launchers never allocate (they may be captured) ----
inline void* workspace(const GpuHandles& g, size_t bytes, const char* op) {
  if (bytes == 0) return nullptr;
  TR_CHECK(g.workspace != nullptr && g.workspace_bytes >= bytes, op, ": needs ", bytes,
           " bytes of workspace, the arena reserved ", g.workspace_bytes);
  return g.workspace;
}

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

inline int next_pow2(int v) {
  int p = 1;
  while (p < v) p <<= 1;
  return p;
}

// ---- per-channel work over NHWC rows ----
// A [rows, C] tensor is covered by blocks of (bx, by) threads: bx lanes over
// channel vectors (VEC channels each), by lanes over rows. Each thread keeps its
// channels for the whole kernel and walks the rows blockIdx.x*by + ty + k*stride,
// so per-channel parameters sit in registers and reductions have a fixed order.
// Blocks for a grid-stride loop over `work` items with `threads` per block,
// capped at blocks_per_sm per multiprocessor (the loop covers the rest).
inline unsigned grid_stride_blocks(int64_t work, int sms, int threads = 256, int blocks_per_sm = 8) {
  int64_t b = ceil_div(work, threads);
  const int64_t cap = int64_t(sms) * blocks_per_sm;
  if (b > cap) b = cap;
  return unsigned(b < 1 ? 1 : b);
}

// Grid for kernels that loop over images along y and over one image's
// `per_image` items along x (32-bit indices within an image): the blocks_per_sm
// cap shared among the images, at least one block per image row of the grid.
inline dim3 image_grid(int64_t per_image, int64_t images, int sms, int threads = 256, int blocks_per_sm = 8) {
  const int64_t blocks = int64_t(sms) * blocks_per_sm;
  const int64_t per_image_blocks = blocks / images > 1 ? blocks / images : 1;
  const int64_t gx = ceil_div(per_image, threads) < per_image_blocks ? ceil_div(per_image, threads) : per_image_blocks;
  return dim3(unsigned(gx), unsigned(images < 65535 ? images : 65535));
}

constexpr int kChannelBlockThreads = 256;

struct ChannelGrid {
  int vec = 1;         // channels per thread-vector
  int64_t groups = 0;  // C / vec
  dim3 block;          // (bx, by), bx*by = 256, both powers of two
  dim3 grid;           // (row blocks, channel blocks)
};

// blocks_per_sm: how many 256-thread blocks per SM to aim for; min_rows: rows each
// thread should at least get before another row block is worth it.
inline ChannelGrid channel_grid(int64_t rows, int64_t c, int vec, int sms, int blocks_per_sm, int64_t min_rows) {
  ChannelGrid g;
  g.vec = vec;
  g.groups = c / vec;
  const int bx = g.groups >= 32 ? 32 : next_pow2(int(g.groups));
  const int by = kChannelBlockThreads / bx;
  const int64_t chan_blocks = ceil_div(g.groups, bx);
  int64_t max_row_blocks = int64_t(sms) * blocks_per_sm / chan_blocks;
  if (max_row_blocks < 1) max_row_blocks = 1;
  int64_t row_blocks = ceil_div(rows, int64_t(by) * min_rows);
  if (row_blocks > max_row_blocks) row_blocks = max_row_blocks;
  if (row_blocks < 1) row_blocks = 1;
  g.block = dim3(unsigned(bx), unsigned(by));
  g.grid = dim3(unsigned(row_blocks), unsigned(chan_blocks));
  return g;
}

}  // namespace tr::cuda
