#pragma once
// Deterministic per-channel sums over the rows of an NHWC tensor (BatchNorm's
// statistics and gradients, a bias gradient, a filter gradient's splits). Each
// thread holds NACC accumulators for its VEC channels; block_sum_store() adds
// them over threadIdx.y in a fixed tree, then either stores per-block partials
// (gridDim.x > 1) or, with a single row block, the final sums directly. The
// partials are added in block order, in finalize_sums after the kernel or, in
// a kernel compiled with SYNC, behind a grid barrier by add_partials (Note
// [sums finished behind a grid barrier]). Only included from .cu files.
//
// Note [sums finished behind a grid barrier]
// Per-block partials need a second pass once every block has stored its own.
// finalize_sums is that pass as a kernel of its own: one more kernel per sum.
// With --grid-sync (GpuHandles::grid_sync_sums), when the whole grid fits on
// the GPU at once, the kernel compiled with SYNC is launched cooperatively
// instead (SumOut::grid_sync, launch_sums): its blocks wait at a grid barrier
// after storing their partials, then add them in add_partials. Both passes
// add in the same order per channel (lane l of 32 takes blocks l, l + 32, ...
// in order, then a fixed tree over the lanes), so they give the same bits
// (OpsGpuGridSync.*), one with a kernel fewer. It is not the default: on the
// H200 the barrier costs more than the kernel boundary it removes (Note [one
// kernel per BatchNorm], bn_train_cuda.h). The partials are read through L2
// (ld.cg): other blocks wrote them in this kernel.
#include <cooperative_groups.h>

#include "framework/ops/kernels/cuda_kernel_util_cuda.h"

namespace tr::cuda {

constexpr int kSumLanes = 32;  // lanes over the partials, per channel

template <typename T, int NACC>
struct SumOut {
  float* partial = nullptr;  // [gridDim.x, NACC, C] scratch when gridDim.x > 1
  float* f32 = nullptr;      // [NACC, C] final sums, or null
  T* t[NACC] = {};           // t[k][C]: sum k rounded to T, or null
  bool grid_sync = false;    // launched cooperatively: the kernel adds the partials itself
};

template <typename T, int NACC>
__device__ __forceinline__ void store_sum(const SumOut<T, NACC>& out, int k, int64_t C, int64_t ch, float v) {
  if (out.f32) out.f32[k * C + ch] = v;
  if (out.t[k]) out.t[k][ch] = from_f<T>(v);
}

// Adds nb per-block partials [nb, NACC, C] in block order, W channels at a time:
// the block's 32 * W threads are W channels x 32 lanes; lane l adds partials l,
// l + 32, ..., then a fixed tree adds the lanes. Channel groups group,
// group + groups, ... The order per channel depends neither on W nor on the
// block that takes the group. Block-uniform control flow (it synchronizes).
template <typename T, int NACC, int W>
__device__ void add_partials(const float* partial, int nb, int64_t C, const SumOut<T, NACC>& out, int64_t group,
                             int64_t groups) {
  __shared__ float sm[NACC][kSumLanes][W + 1];
  const int t = int(threadIdx.y * blockDim.x + threadIdx.x);
  const int tx = t % W, ty = t / W;
  for (int64_t c0 = group * W; c0 < C; c0 += groups * W) {
    const int64_t ch = c0 + tx;
    float a[NACC];
#pragma unroll
    for (int k = 0; k < NACC; ++k) a[k] = 0.f;
    if (ch < C)
      for (int b = ty; b < nb; b += kSumLanes)
#pragma unroll
        for (int k = 0; k < NACC; ++k) a[k] += __ldcg(partial + (int64_t(b) * NACC + k) * C + ch);
#pragma unroll
    for (int k = 0; k < NACC; ++k) sm[k][ty][tx] = a[k];
    __syncthreads();
    for (int s = kSumLanes / 2; s > 0; s >>= 1) {
      if (ty < s)
#pragma unroll
        for (int k = 0; k < NACC; ++k) sm[k][ty][tx] += sm[k][ty + s][tx];
      __syncthreads();
    }
    if (ty == 0 && ch < C)
#pragma unroll
      for (int k = 0; k < NACC; ++k) store_sum(out, k, C, ch, sm[k][0][tx]);
    __syncthreads();  // sm is reused by the next group
  }
}

// Shared memory of block_sum_store: CHUNK floats per thread (all NACC*VEC sums
// by default; a kernel with many sums reduces them CHUNK at a time).
template <int NACC, int VEC, int CHUNK = NACC* VEC>
constexpr size_t sum_smem_bytes() {
  return size_t(CHUNK < NACC * VEC ? CHUNK : NACC * VEC) * kChannelBlockThreads * sizeof(float);
}

// SYNC: the kernel may be launched cooperatively (launch_sums' `synced`
// kernel), and then adds the partials itself when out.grid_sync is set; the
// kernels launched apart are compiled without that code (its shared memory
// and registers cost the default path 1 % at cnn batch 256 on the H200).
template <typename T, int NACC, int VEC, int CHUNK = NACC* VEC, bool SYNC = false>
__device__ __forceinline__ void block_sum_store(const float (&acc)[NACC][VEC], int64_t c0, bool active, int64_t C,
                                                const SumOut<T, NACC>& out) {
  extern __shared__ float smem[];  // [CHUNK][by][bx]
  constexpr int kSums = NACC * VEC, kChunk = CHUNK < kSums ? CHUNK : kSums;
  const int tx = threadIdx.x, ty = threadIdx.y, bx = blockDim.x, by = blockDim.y;
  // Each sum j = k*VEC + i is added over threadIdx.y in the same fixed tree
  // whichever chunk carries it, so the chunk size changes no bit.
#pragma unroll
  for (int j0 = 0; j0 < kSums; j0 += kChunk) {
    if (j0 > 0) __syncthreads();  // the previous chunk's results are read
#pragma unroll
    for (int jj = 0; jj < kChunk; ++jj)
      if (j0 + jj < kSums) smem[(jj * by + ty) * bx + tx] = acc[(j0 + jj) / VEC][(j0 + jj) % VEC];
    __syncthreads();
    for (int s = by / 2; s > 0; s >>= 1) {
      if (ty < s) {
#pragma unroll
        for (int jj = 0; jj < kChunk; ++jj)
          if (j0 + jj < kSums) smem[(jj * by + ty) * bx + tx] += smem[(jj * by + ty + s) * bx + tx];
      }
      __syncthreads();
    }
    if (ty != 0 || !active) continue;
#pragma unroll
    for (int jj = 0; jj < kChunk; ++jj) {
      const int j = j0 + jj;
      if (j >= kSums) break;
      const int k = j / VEC;
      const float v = smem[(jj * by) * bx + tx];
      const int64_t ch = c0 + j % VEC;
      if (gridDim.x > 1) out.partial[(int64_t(blockIdx.x) * NACC + k) * C + ch] = v;
      else store_sum(out, k, C, ch, v);
    }
  }
  if constexpr (SYNC) {
    if (gridDim.x > 1 && out.grid_sync) {
      cooperative_groups::this_grid().sync();
      add_partials<T, NACC, kChannelBlockThreads / kSumLanes>(out.partial, int(gridDim.x), C, out,
                                                              int64_t(blockIdx.y) * gridDim.x + blockIdx.x,
                                                              int64_t(gridDim.x) * gridDim.y);
    }
  }
}

// The second pass as a kernel of its own: add_partials' order with W = 32
// (per-lane strided subsets of the blocks, then a fixed 32-lane tree), written
// out for the default path's registers. Block (32, 32), grid ceil(C/32).
template <typename T, int NACC>
__global__ void finalize_sums(const float* __restrict__ partial, int nb, int64_t C, SumOut<T, NACC> out) {
  grid_dependency_begin();
  __shared__ float sm[NACC][32][33];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int64_t ch = int64_t(blockIdx.x) * 32 + tx;
  float a[NACC];
#pragma unroll
  for (int k = 0; k < NACC; ++k) a[k] = 0.f;
  if (ch < C) {
    for (int b = ty; b < nb; b += 32) {
#pragma unroll
      for (int k = 0; k < NACC; ++k) a[k] += partial[(int64_t(b) * NACC + k) * C + ch];
    }
  }
#pragma unroll
  for (int k = 0; k < NACC; ++k) sm[k][ty][tx] = a[k];
  __syncthreads();
  for (int s = 16; s > 0; s >>= 1) {
    if (ty < s) {
#pragma unroll
      for (int k = 0; k < NACC; ++k) sm[k][ty][tx] += sm[k][ty + s][tx];
    }
    __syncthreads();
  }
  if (ty != 0 || ch >= C) return;
#pragma unroll
  for (int k = 0; k < NACC; ++k) store_sum(out, k, C, ch, sm[k][0][tx]);
}

// Scratch bytes a per-channel sum over grid g needs (0 with one row block).
template <int NACC>
inline size_t sum_partial_bytes(const ChannelGrid& g, int64_t C) {
  return g.grid.x > 1 ? size_t(g.grid.x) * NACC * size_t(C) * sizeof(float) : 0;
}

// finalize_sums after the kernel, unless the kernel added the partials itself.
template <typename T, int NACC>
inline void launch_finalize(const ChannelGrid& g, int64_t C, const SumOut<T, NACC>& out, const ExecEnv* env) {
  if (g.grid.x <= 1 || out.grid_sync) return;
  launch_kernel(env, {unsigned(ceil_div(C, 32)), dim3(32, 32), 0}, finalize_sums<T, NACC>, out.partial, int(g.grid.x),
                C, out);
}

// Launches a kernel over grid g that stores per-channel sums through `out`
// (its last argument), and adds the partials: with --grid-sync, when the grid
// fits on the GPU at once, `synced` (the kernel compiled with SYNC) adds them
// behind a grid barrier (Note [sums finished behind a grid barrier]); else
// `apart` runs, then finalize_sums.
template <typename T, int NACC, typename... Params, typename... Args>
void launch_sums(const ExecEnv* env, const GpuHandles& gh, const ChannelGrid& g, size_t smem, int64_t C,
                 SumOut<T, NACC> out, void (*apart)(Params...), void (*synced)(Params...), Args&&... args) {
  LaunchShape shape{g.grid, g.block, smem};
  out.grid_sync = g.grid.x > 1 && gh.grid_sync_sums && fits_at_once(synced, shape, sm_count(gh));
  shape.cooperative = out.grid_sync;
  launch_kernel(env, shape, out.grid_sync ? synced : apart, std::forward<Args>(args)..., out);
  launch_finalize<T, NACC>(g, C, out, env);
}

}  // namespace tr::cuda
