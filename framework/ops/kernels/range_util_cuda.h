#pragma once
// CUDA launch helpers shared by the RANGE op kernels (*_cuda.cu only).
//
// Note [range launchers are capturable]
// Every launcher here runs under CUDA Graph stream capture: it only enqueues
// work on env.stream (kernels, cudaMemsetAsync, cudaMemcpyAsync), never
// synchronises, allocates, or reads device memory from the host. Values that
// change per step (lr, loss scale, step, found_inf) are read by the kernels
// from env.scalars (Note [scalars in device memory]). Per-launch tables
// (segments, operands) travel by value in the kernel parameters (< 4 KB), so
// nothing is copied to the device at launch and no device scratch is needed.
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>

#include "framework/core/gpu_check_cuda.h"
#include "framework/ops/kernels/cuda_kernel_util_cuda.h"
#include "framework/ops/kernels/range_util.h"

namespace tr::range {

constexpr int kThreads = 256;           // threads per block of the elementwise kernels
constexpr int kVec = 4;                 // elements per thread per step (16 bytes of f32)
constexpr int kTile = kThreads * kVec;  // elements a block handles per step
constexpr int kBlocksPerSm = 8;         // 8 x 256 threads fill an sm_90 SM

inline cudaStream_t stream_of(const RangeCall& c) {
  TR_CHECK(c.env != nullptr, "RANGE op: no ExecEnv");
  return static_cast<cudaStream_t>(c.env->stream);
}

// SM count of the rank's device, from its GpuHandles (ExecEnv::gpu).
inline int sm_count(const RangeCall& c) {
  TR_CHECK(c.env != nullptr && c.env->gpu != nullptr, "RANGE op: no GPU handles in the ExecEnv");
  return cuda::sm_count(*static_cast<const GpuHandles*>(c.env->gpu));
}

// Blocks for a grid-stride loop over `tiles` tiles: enough to fill the GPU, no more.
inline int grid_for_tiles(const RangeCall& c, int64_t tiles) {
  const int64_t cap = int64_t(sm_count(c)) * kBlocksPerSm;
  return int(std::max<int64_t>(1, std::min(tiles, cap)));
}

inline int64_t tiles_of(int64_t elems) { return (elems + kTile - 1) / kTile; }

// ---- a 16-bit compute copy's bits (BF: bf16, else f16), rounded to nearest even ----
template <bool BF>
__device__ __forceinline__ uint16_t f32_to_half_bits(float x) {
  if constexpr (BF) return __bfloat16_as_ushort(__float2bfloat16_rn(x));
  else return __half_as_ushort(__float2half_rn(x));
}
// kVec 16-bit values at p: one 8-byte load when count == kVec (p 8-byte
// aligned), else element by element with zeros past count (zero is finite, so
// the tail never trips a check).
__device__ __forceinline__ void load_half_bits(const uint16_t* p, int count, uint16_t (&h)[kVec]) {
  if (count == kVec) {
    const uint2 v = *reinterpret_cast<const uint2*>(p);
    h[0] = uint16_t(v.x), h[1] = uint16_t(v.x >> 16), h[2] = uint16_t(v.y), h[3] = uint16_t(v.y >> 16);
  } else {
    for (int k = 0; k < kVec; ++k) h[k] = k < count ? p[k] : uint16_t(0);
  }
}
// count of the kVec 16-bit values h at p: one 8-byte store when count == kVec.
__device__ __forceinline__ void store_half_bits(uint16_t* p, int count, const uint16_t (&h)[kVec]) {
  if (count == kVec) {
    *reinterpret_cast<uint2*>(p) =
        make_uint2(uint32_t(h[0]) | (uint32_t(h[1]) << 16), uint32_t(h[2]) | (uint32_t(h[3]) << 16));
  } else {
    for (int k = 0; k < count; ++k) p[k] = h[k];
  }
}
// The compute copy's count elements at p from x (bf: bf16, else f16), p 8-byte
// aligned when count == kVec.
__device__ __forceinline__ void store_half_bits(uint16_t* p, int count, const float (&x)[kVec], bool bf) {
  uint16_t h[kVec];
#pragma unroll
  for (int k = 0; k < kVec; ++k) h[k] = bf ? f32_to_half_bits<true>(x[k]) : f32_to_half_bits<false>(x[k]);
  store_half_bits(p, count, h);
}
template <bool BF>
__device__ __forceinline__ float half_bits_to_f32(uint16_t h) {
  if constexpr (BF) return __uint_as_float(uint32_t(h) << 16);
  else return __half2float(__ushort_as_half(h));
}

inline void check_aligned16(const void* p, const char* op) {
  TR_CHECK((reinterpret_cast<uintptr_t>(p) & 15u) == 0, op, ": operand not 16-byte aligned");
}

// ---------------------------------------------------------------------------
// A segment table passed by value: the tensors of parallel regions, each cut in
// kTile tiles; block b takes tiles b, b+grid, ... and finds its segment by a
// binary search over tile_begin (uniform per block, served by the constant cache).
constexpr int kMaxSegsPerLaunch = 192;  // keeps the parameters < 4 KB; more segments -> more launches

struct SegTable {
  int n = 0;      // segments in this launch
  int tiles = 0;  // tile_begin[n]
  int tile_begin[kMaxSegsPerLaunch + 1];
  int64_t offset[kMaxSegsPerLaunch];  // element offset in the region (multiple of kVec)
  int32_t elems[kMaxSegsPerLaunch];
  uint32_t decay[kMaxSegsPerLaunch / 32];  // bit per segment
};

// Fills t with segs[first, first + count) (empty segments skipped); returns how many it consumed.
inline int fill_seg_table(const Segment* segs, int first, int n_segs, SegTable& t, const char* op) {
  t.n = 0;
  t.tiles = 0;
  for (uint32_t& w : t.decay) w = 0;
  int k = first;
  for (; k < n_segs && t.n < kMaxSegsPerLaunch; ++k) {
    const Segment& s = segs[k];
    if (s.elems == 0) continue;
    TR_CHECK(s.offset % kVec == 0, op, ": segment offset ", s.offset, " not a multiple of ", kVec);
    TR_CHECK(s.elems < (int64_t(1) << 31), op, ": segment too large");
    const int64_t tiles = tiles_of(s.elems);
    TR_CHECK(int64_t(t.tiles) + tiles < (int64_t(1) << 31), op, ": too many tiles");
    t.tile_begin[t.n] = t.tiles;
    t.offset[t.n] = s.offset;
    t.elems[t.n] = int32_t(s.elems);
    if (s.decay) t.decay[t.n / 32] |= 1u << (t.n % 32);
    t.tiles += int(tiles);
    ++t.n;
  }
  t.tile_begin[t.n] = t.tiles;
  return k - first;
}

// The last table entry whose first tile is <= tile.
__device__ __forceinline__ int find_entry(const int* tile_begin, int n, int tile) {
  int lo = 0, hi = n - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) >> 1;
    if (tile_begin[mid] <= tile) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

// Calls f(first_elem, count, decay) for this thread's kVec-element piece of
// every tile of the table owned by block `block` of `blocks` (count < kVec
// only at a segment's end).
template <class F>
__device__ __forceinline__ void for_each_seg_piece(const SegTable& t, int block, int blocks, F&& f) {
  for (int tile = block; tile < t.tiles; tile += blocks) {
    const int s = find_entry(t.tile_begin, t.n, tile);
    const int64_t local = int64_t(tile - t.tile_begin[s]) * kTile + int64_t(threadIdx.x) * kVec;
    const int64_t left = t.elems[s] - local;
    if (left <= 0) continue;
    f(t.offset[s] + local, left < kVec ? int(left) : kVec, ((t.decay[s >> 5] >> (s & 31)) & 1u) != 0);
  }
}
template <class F>
__device__ __forceinline__ void for_each_seg_piece(const SegTable& t, F&& f) {
  for_each_seg_piece(t, int(blockIdx.x), int(gridDim.x), f);
}

// Calls f(i, count) for this thread's kVec-element piece of every tile of a
// region of n elements owned by block `block` of `blocks`: elements
// [i, i + count) of n, count < kVec only at the end.
template <class F>
__device__ __forceinline__ void for_each_piece(int64_t n, int64_t block, int64_t blocks, F&& f) {
  for (int64_t tile = block; tile * kTile < n; tile += blocks) {
    const int64_t i = tile * kTile + int64_t(threadIdx.x) * kVec;
    const int64_t left = n - i;
    if (left > 0) f(i, left < kVec ? int(left) : kVec);
  }
}

// ---------------------------------------------------------------------------
// An operand table passed by value: several whole regions (CheckFinite, UnscaleGrads).
constexpr int kMaxOpsPerLaunch = 16;

struct OperandTable {
  int n = 0;
  int tiles = 0;
  int tile_begin[kMaxOpsPerLaunch + 1];
  void* data[kMaxOpsPerLaunch];
  int64_t elems[kMaxOpsPerLaunch];
  int f16[kMaxOpsPerLaunch];   // 1: a 16-bit type (f16 or bf16), 0: f32
  int bf16[kMaxOpsPerLaunch];  // 1: bf16
};

inline int fill_operand_table(const RangeOperand* ops, int first, int n_ops, OperandTable& t, const char* op) {
  t.n = 0;
  t.tiles = 0;
  int k = first;
  for (; k < n_ops && t.n < kMaxOpsPerLaunch; ++k) {
    const RangeOperand& o = ops[k];
    if (o.elems == 0) continue;
    check_aligned16(o.data, op);
    const int64_t tiles = tiles_of(o.elems);
    TR_CHECK(int64_t(t.tiles) + tiles < (int64_t(1) << 31), op, ": too many tiles");
    t.tile_begin[t.n] = t.tiles;
    t.data[t.n] = o.data;
    t.elems[t.n] = o.elems;
    t.f16[t.n] = is_half(o.dtype) ? 1 : 0;
    t.bf16[t.n] = o.dtype == DType::BF16 ? 1 : 0;
    t.tiles += int(tiles);
    ++t.n;
  }
  t.tile_begin[t.n] = t.tiles;
  return k - first;
}

// Calls f(entry, first_elem, count) for this thread's piece of each tile owned by this block.
template <class F>
__device__ __forceinline__ void for_each_operand_piece(const OperandTable& t, F&& f) {
  for (int tile = blockIdx.x; tile < t.tiles; tile += gridDim.x) {
    const int e = find_entry(t.tile_begin, t.n, tile);
    const int64_t local = int64_t(tile - t.tile_begin[e]) * kTile + int64_t(threadIdx.x) * kVec;
    const int64_t left = t.elems[e] - local;
    if (left <= 0) continue;
    f(e, local, left < kVec ? int(left) : kVec);
  }
}

// kVec floats at p (16-byte aligned when count == kVec); the tail goes element by element.
__device__ __forceinline__ void load_f32(const float* p, int count, float (&x)[kVec]) {
  if (count == kVec) {
    const float4 v = *reinterpret_cast<const float4*>(p);
    x[0] = v.x;
    x[1] = v.y;
    x[2] = v.z;
    x[3] = v.w;
  } else {
    for (int i = 0; i < kVec; ++i) x[i] = i < count ? p[i] : 0.f;
  }
}
// A gradient region as an optimizer reads it: f32, or f16|bf16 read in place
// and widened exactly (Note [16-bit gradients in the optimizer],
// recipe_graphs.h), so either gives the same bits.
struct GradIn {
  const void* p = nullptr;
  int kind = 0;  // 0: f32, 1: f16, 2: bf16
};
inline GradIn grad_in(const RangeOperand& o) {
  return {o.data, o.dtype == DType::F32 ? 0 : o.dtype == DType::BF16 ? 2 : 1};
}
// kVec gradients from element i (16- or 8-byte aligned when count == kVec).
__device__ __forceinline__ void load_grad(const GradIn& g, int64_t i, int count, float (&x)[kVec]) {
  if (g.kind == 0) {
    load_f32(static_cast<const float*>(g.p) + i, count, x);
    return;
  }
  uint16_t b[kVec];
  load_half_bits(static_cast<const uint16_t*>(g.p) + i, count, b);
#pragma unroll
  for (int k = 0; k < kVec; ++k) x[k] = g.kind == 2 ? half_bits_to_f32<true>(b[k]) : half_bits_to_f32<false>(b[k]);
}
__device__ __forceinline__ void store_f32(float* p, int count, const float (&x)[kVec]) {
  if (count == kVec) {
    *reinterpret_cast<float4*>(p) = make_float4(x[0], x[1], x[2], x[3]);
  } else {
    for (int i = 0; i < count; ++i) p[i] = x[i];
  }
}

}  // namespace tr::range
