#pragma once
// Note [long softmax rows]
// A language model's rows hold a whole vocabulary (GPT-2: 50,304 logits, 100 KB
// in f16), too long for xent_row's warp: it reads a row three times with
// 2-byte loads, 1.1 ms of GPT-2's 7.3 ms step at batch 1 on an H100. Here one
// block of 1024 threads owns a row, in three passes:
//   1. the max, its first index and the sum of z;
//   2. the sum of exp(z - max): lse = max + log(sum);
//   3. dlogits = grad_scale * (exp(z - lse) - target);
// exp in base 2 on the special-function unit (ex2.approx, relative error
// 2^-22; the short rows' expf costs about ten instructions, and at GPT-2's
// batch 64 the rows are 3.3 billion logits: the passes were bound by it);
// each thread's sums in its elements' order, then a butterfly in each warp and
// the warps in order: the same bits on every run. Thread t owns the 16-byte
// pieces t, t + 1024, ... of the row. With 16-bit logits a row of up to
// kLongRowChunks * 1024 * 8 = 57,344 stays in the thread's registers (28 of
// its 64; GPT-2's 50,304 fit) from one load (up to kLongRowChunks loads in
// flight per thread) until its dlogits are written: the logits are read once
// and written once. Longer rows, and f32, read the row in each pass
// (RowInMemory) with the same arithmetic in the same order. SoftmaxXent uses
// this for rows of kLongRow logits or more; shorter rows (and the fused
// classifier head) keep xent_row. Formulas and the NaN of a label outside
// [0, M): softmax_xent_row_cuda.h.
#include <cstdint>
#include <type_traits>

#include "framework/ops/kernels/cuda_kernel_util_cuda.h"

namespace tr::cuda {

constexpr int64_t kLongRow = 2048;
constexpr int kLongRowThreads = 1024;
constexpr int kLongRowChunks = 7;  // 16-byte pieces a thread keeps in registers

// A row read from memory in every pass: f(j, count, z) for each of this
// thread's pieces (z[count] floats at elements j..), a 16-byte load when `vec`.
template <typename T>
struct RowInMemory {
  const T* row;
  int64_t M;
  bool vec;
  template <typename F>
  __device__ __forceinline__ void each(F&& f) const {
    constexpr int V = kVec16<T>;
    for (int64_t j = int64_t(threadIdx.x) * V; j < M; j += int64_t(blockDim.x) * V) {
      float z[V];
      const int count = M - j < V ? int(M - j) : V;
      if (vec && count == V) {
        load_vec<T, V>(row + j, z);
      } else {
#pragma unroll
        for (int e = 0; e < V; ++e) z[e] = e < count ? to_f(row[j + e]) : 0.f;
      }
      f(j, count, z);
    }
  }
};

// The same pieces, loaded once into registers (16-bit T, M <= kLongRowChunks *
// blockDim.x * 8).
template <typename T>
struct RowInRegisters {
  static constexpr int V = kVec16<T>;
  uint4 raw[kLongRowChunks];
  int64_t M;
  __device__ __forceinline__ RowInRegisters(const T* row, int64_t m, bool vec) : M(m) {
#pragma unroll
    for (int c = 0; c < kLongRowChunks; ++c) {
      const int64_t j = (int64_t(threadIdx.x) + int64_t(c) * blockDim.x) * V;
      if (j >= M) continue;
      if (vec && M - j >= V) {
        raw[c] = *reinterpret_cast<const uint4*>(row + j);
      } else {
        T* e = reinterpret_cast<T*>(&raw[c]);
#pragma unroll
        for (int k = 0; k < V; ++k)  // constant indices keep raw in registers
          if (j + k < M) e[k] = row[j + k];
      }
    }
  }
  template <typename F>
  __device__ __forceinline__ void each(F&& f) const {
#pragma unroll
    for (int c = 0; c < kLongRowChunks; ++c) {
      const int64_t j = (int64_t(threadIdx.x) + int64_t(c) * blockDim.x) * V;
      if (j >= M) continue;
      const T* e = reinterpret_cast<const T*>(&raw[c]);
      float z[V];
#pragma unroll
      for (int k = 0; k < V; ++k) z[k] = to_f(e[k]);
      f(j, M - j < V ? int(M - j) : V, z);
    }
  }
};

// The block's (max, first argmax, sum of z): a butterfly in each warp, then
// the warps in order; every thread gets the result.
struct RowMax {
  float m;
  int64_t arg;
  float zsum;
};
__device__ __forceinline__ RowMax max_of_rows(RowMax a, const RowMax& b, int64_t M) {
  if (b.arg < M && (a.arg == M || b.m > a.m || (b.m == a.m && b.arg < a.arg))) {
    a.m = b.m;
    a.arg = b.arg;
  }
  a.zsum += b.zsum;
  return a;
}
__device__ __forceinline__ RowMax block_row_max(RowMax p, int64_t M) {
  __shared__ RowMax warps[kLongRowThreads / 32];
  __shared__ RowMax all;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const RowMax q{__shfl_xor_sync(0xffffffffu, p.m, o), __shfl_xor_sync(0xffffffffu, p.arg, o),
                   __shfl_xor_sync(0xffffffffu, p.zsum, o)};
    // Both lanes of a pair must end equal: take the pair in index order.
    p = (int(threadIdx.x) & o) ? max_of_rows(q, p, M) : max_of_rows(p, q, M);
  }
  if (threadIdx.x % 32 == 0) warps[threadIdx.x / 32] = p;
  __syncthreads();
  if (threadIdx.x == 0) {
    RowMax r = warps[0];
    for (int w = 1; w < int(blockDim.x) / 32; ++w) r = max_of_rows(r, warps[w], M);
    all = r;
  }
  __syncthreads();
  return all;
}
__device__ __forceinline__ float block_sum(float v) {
  __shared__ float warps[kLongRowThreads / 32];
  __shared__ float all;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const float q = __shfl_xor_sync(0xffffffffu, v, o);
    v = (int(threadIdx.x) & o) ? q + v : v + q;
  }
  if (threadIdx.x % 32 == 0) warps[threadIdx.x / 32] = v;
  __syncthreads();
  if (threadIdx.x == 0) {
    float r = warps[0];
    for (int w = 1; w < int(blockDim.x) / 32; ++w) r += warps[w];
    all = r;
  }
  __syncthreads();
  return all;
}

// One row (blockIdx.x) from `src`: (loss, correct) to rows_out, dlogits to drow when not null.
// z_label: the row's logit at l (thread 0's; read before any dlogits are
// written, as they may overwrite the logits).
template <typename T, typename Src>
__device__ __forceinline__ void xent_long_row(const Src& src, float z_label, int64_t M, int32_t l, float smoothing,
                                              float grad_scale, T* drow, bool vec, float2* row_out) {
  RowMax p{-INFINITY, M, 0.f};
  // Loops over a piece run to V with a test, not to count: constant indices
  // keep the pieces in registers.
  constexpr int V = kVec16<T>;
  src.each([&](int64_t j, int count, const float* z) {
#pragma unroll
    for (int e = 0; e < V; ++e) {
      if (e >= count) continue;
      if (p.arg == M || z[e] > p.m) {  // strict: a thread keeps its first maximum
        p.m = z[e];
        p.arg = j + e;
      }
      p.zsum += z[e];
    }
  });
  const RowMax r = block_row_max(p, M);
  float s = 0.f;
  const float m2 = r.m * kLog2e;  // the max in base-2 units
  src.each([&](int64_t, int count, const float* z) {
#pragma unroll
    for (int e = 0; e < V; ++e)
      if (e < count) s += ex2(fmaf(z[e], kLog2e, -m2));
  });
  const float lse = r.m + log2f(block_sum(s)) * kLn2;
  const float lse2 = lse * kLog2e;
  const bool valid = l >= 0 && int64_t(l) < M;
  const float off = smoothing / float(M);
  if (threadIdx.x == 0) {
    const float loss = valid ? lse - (1.f - smoothing) * z_label - off * r.zsum : __int_as_float(0x7fc00000);
    *row_out = make_float2(loss, (valid && r.arg == l) ? 1.f : 0.f);
  }
  if (drow == nullptr) return;
  src.each([&](int64_t j, int count, const float* z) {
    float d[V];
#pragma unroll
    for (int e = 0; e < V; ++e)
      d[e] = grad_scale * (ex2(fmaf(z[e], kLog2e, -lse2)) - (off + (j + e == l ? 1.f - smoothing : 0.f)));
    if (vec && count == V) {
      store_vec<T, V>(drow + j, d);
    } else {
#pragma unroll
      for (int e = 0; e < V; ++e)
        if (e < count) drow[j + e] = from_f<T>(d[e]);
    }
  });
}

// (loss, correct) of row blockIdx.x to rows_out[blockIdx.x]; dlogits when not
// null. One block of kLongRowThreads per row; in registers when it fits.
template <typename T>
__global__ void __launch_bounds__(kLongRowThreads, 1)
    xent_long_rows_kernel(const T* __restrict__ logits, const int32_t* __restrict__ labels, T* __restrict__ dlogits,
                          const TrainScalars* __restrict__ scalars, float2* __restrict__ rows_out, int64_t M,
                          float smoothing, float inv_global_batch) {
  grid_dependency_begin();
  const int64_t n = blockIdx.x;
  const T* row = logits + n * M;
  T* drow = dlogits == nullptr ? nullptr : dlogits + n * M;
  const auto on16 = [](const void* q) { return (reinterpret_cast<uintptr_t>(q) & 15u) == 0; };
  const bool vec = on16(row) && (drow == nullptr || on16(drow));
  const float grad_scale = drow == nullptr ? 0.f : scalars->loss_scale * inv_global_batch;
  const int32_t l = labels[n];
  const float z_label = threadIdx.x == 0 && l >= 0 && int64_t(l) < M ? to_f(row[l]) : 0.f;
  if constexpr (sizeof(T) == 2) {
    if (M <= int64_t(kLongRowChunks) * blockDim.x * kVec16<T>) {
      const RowInRegisters<T> src(row, M, vec);
      xent_long_row(src, z_label, M, l, smoothing, grad_scale, drow, vec, rows_out + n);
      return;
    }
  }
  xent_long_row(RowInMemory<T>{row, M, vec}, z_label, M, l, smoothing, grad_scale, drow, vec, rows_out + n);
}

}  // namespace tr::cuda
