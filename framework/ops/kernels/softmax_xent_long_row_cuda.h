#pragma once
// Note [long softmax rows]
// A language model's rows hold a whole vocabulary (GPT-2: 50,304 logits, 100 KB
// in f16), too long for xent_row's warp, which reads a row three times: at
// batch 64 x 1024 tokens the rows are 6.6 GB, read three times from HBM and
// written once, 9.4 ms of a 143 ms step on an H100. Here one block owns a row:
//   pass 1: each thread reads its elements (16-byte vectors where the row is
//           aligned; the same elements in the same order either way) and keeps
//           an online softmax (running max m and sum of exp(z - m)), the sum
//           of z and its first argmax; then a butterfly in each warp and the
//           warps in order;
//   pass 2: dlogits = grad_scale * (exp(z - lse) - target), the row read again.
// With 1024 threads a block, two blocks an SM keep about 26 MB of rows in
// flight on an H100 (L2 50 MB), so pass 2 reads L2, not HBM: one read and one
// write of the logits in all. Every sum runs in a fixed order: the same bits
// on every run. SoftmaxXent uses it for rows of kLongRow logits or more; the
// shorter rows (and the fused classifier head) keep xent_row. Formulas and
// the NaN of a label outside [0, M): softmax_xent_row_cuda.h.
#include <cstdint>

#include "framework/ops/kernels/cuda_kernel_util_cuda.h"

namespace tr::cuda {

constexpr int64_t kLongRow = 2048;
constexpr int kLongRowThreads = 1024;

// A part of a row's softmax: running max m, sum s of exp(z - m) (0 with no
// element yet), sum of z, first argmax (M when none).
struct RowPart {
  float m = -INFINITY, s = 0.f, zsum = 0.f;
  int64_t arg = 0;
};

__device__ __forceinline__ void add_logit(RowPart& p, float z, int64_t j, int64_t M) {
  if (p.arg == M || z > p.m) {  // strict: the first maximum stays
    p.s = (p.s == 0.f ? 0.f : p.s * expf(p.m - z)) + 1.f;
    p.m = z;
    p.arg = j;
  } else {
    p.s += expf(z - p.m);
  }
  p.zsum += z;
}

// a and b combined; commutative bit for bit, so both lanes of a butterfly agree.
__device__ __forceinline__ RowPart combine(const RowPart& a, const RowPart& b, int64_t M) {
  RowPart r;
  r.m = fmaxf(a.m, b.m);
  r.s = (a.s == 0.f ? 0.f : a.s * expf(a.m - r.m)) + (b.s == 0.f ? 0.f : b.s * expf(b.m - r.m));
  r.zsum = a.zsum + b.zsum;
  r.arg = a.arg;
  if (b.arg < M && (a.arg == M || b.m > a.m || (b.m == a.m && b.arg < a.arg))) r.arg = b.arg;
  return r;
}

// Calls f(j, count, z[]) for this thread's pieces of a row of M: piece k of V
// elements (k = threadIdx.x, + blockDim.x, ...), loaded as one 16-byte vector
// when `vec`, element by element otherwise; count < V only at the row's end.
template <typename T, typename F>
__device__ __forceinline__ void for_each_piece_of_row(const T* row, int64_t M, bool vec, F&& f) {
  constexpr int V = kVec16<T>;
  for (int64_t j = int64_t(threadIdx.x) * V; j < M; j += int64_t(blockDim.x) * V) {
    float z[V];
    const int count = M - j < V ? int(M - j) : V;
    if (vec && count == V) {
      load_vec<T, V>(row + j, z);
    } else {
      for (int e = 0; e < count; ++e) z[e] = to_f(row[j + e]);
    }
    f(j, count, z);
  }
}

// (loss, correct) of row blockIdx.x to rows_out; dlogits when not null. One
// block of kLongRowThreads per row.
template <typename T>
__global__ void __launch_bounds__(kLongRowThreads)
    xent_long_rows_kernel(const T* __restrict__ logits, const int32_t* __restrict__ labels, T* __restrict__ dlogits,
                          const TrainScalars* __restrict__ scalars, float2* __restrict__ rows_out, int64_t M,
                          float smoothing, float inv_global_batch) {
  grid_dependency_begin();
  __shared__ RowPart warps[kLongRowThreads / 32];
  __shared__ float lse_s;
  const int64_t n = blockIdx.x;
  const T* row = logits + n * M;
  T* drow = dlogits == nullptr ? nullptr : dlogits + n * M;
  const auto on16 = [](const void* q) { return (reinterpret_cast<uintptr_t>(q) & 15u) == 0; };
  const bool vec = on16(row) && (drow == nullptr || on16(drow));
  RowPart p;
  p.arg = M;
  for_each_piece_of_row(row, M, vec, [&](int64_t j, int count, const float* z) {
    for (int e = 0; e < count; ++e) add_logit(p, z[e], j + e, M);
  });
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    RowPart q;
    q.m = __shfl_xor_sync(0xffffffffu, p.m, o);
    q.s = __shfl_xor_sync(0xffffffffu, p.s, o);
    q.zsum = __shfl_xor_sync(0xffffffffu, p.zsum, o);
    q.arg = __shfl_xor_sync(0xffffffffu, p.arg, o);
    p = combine(p, q, M);
  }
  const int lane = int(threadIdx.x) % 32, warp = int(threadIdx.x) / 32;
  if (lane == 0) warps[warp] = p;
  __syncthreads();
  const int32_t l = labels[n];
  const bool valid = l >= 0 && int64_t(l) < M;
  const float off = smoothing / float(M);
  if (threadIdx.x == 0) {
    RowPart r = warps[0];
    for (int w = 1; w < int(blockDim.x) / 32; ++w) r = combine(r, warps[w], M);
    const float lse = r.m + logf(r.s);
    lse_s = lse;
    const float loss = valid ? lse - (1.f - smoothing) * to_f(row[l]) - off * r.zsum : __int_as_float(0x7fc00000);
    rows_out[n] = make_float2(loss, (valid && r.arg == l) ? 1.f : 0.f);
  }
  if (drow == nullptr) return;
  __syncthreads();
  const float lse = lse_s;
  const float grad_scale = scalars->loss_scale * inv_global_batch;
  for_each_piece_of_row(row, M, vec, [&](int64_t j, int count, const float* z) {
    constexpr int V = kVec16<T>;
    float d[V];
    for (int e = 0; e < V; ++e) {
      const float target = off + (j + e == l ? 1.f - smoothing : 0.f);
      d[e] = grad_scale * (expf(z[e] - lse) - target);
    }
    if (vec && count == V) {
      store_vec<T, V>(drow + j, d);
    } else {
      for (int e = 0; e < count; ++e) drow[j + e] = from_f<T>(d[e]);
    }
  });
}

}  // namespace tr::cuda
