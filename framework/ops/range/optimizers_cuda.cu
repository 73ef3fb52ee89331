// CUDA fused optimizers (see optimizers.h); per-element math shared with the
// CPU through range_util.h (Note [range op rounding]); launchers capturable
// (Note [range launchers are capturable]).
//
// SgdNesterov / AdamW: one launch per kMaxSegsPerLaunch segments, a grid-stride
// loop over the tiles of all segments (SegTable by value).
//
// Lars: one launch per group (kMaxSegsPerLaunch segments), one thread-block
// cluster per segment (16 blocks where the device allows non-portable clusters,
// else 8). The cluster computes the segment's |p| and |g| (squares summed in
// double, fixed order: per thread, warp shuffle tree, warps in order, then the
// cluster's blocks in rank order through distributed shared memory), every
// block derives the same trust ratio, then the cluster updates the segment.
// No global scratch and no atomics: LARS groups run concurrently on several
// streams (LARS_FC/FIRST_CONV/DEEP_CONV) without sharing a workspace. The cost:
// one segment is handled by one cluster, so the largest tensor of a group
// bounds its time (measured on H200: 31 us for a 590k-element conv weight in a
// 1.17M-element group, vs 5.6 us for SgdNesterov over the same region).
#include <cooperative_groups.h>
#include <cuda_fp16.h>

#include <array>
#include <atomic>

#include "framework/ops/kernels/range_util_cuda.h"
#include "framework/ops/range/optimizers.h"

namespace tr {
namespace {

namespace cg = cooperative_groups;
using range::kVec;

constexpr int kLarsMaxCluster = 16;  // blocks per segment where supported (else the portable 8)
constexpr int kLarsThreads = 512;

// ---- kernels ----

// BatchNorm's statistics on one piece: d = lerp(d, s, t), then f = lerp(f, d,
// ft) unless f is null (no EMA), as UPDATE_STATS's Lerp and then the EMA's
// would. f32, 16-byte aligned.
__device__ __forceinline__ void bn_stats_piece(float* __restrict__ d, const float* __restrict__ s,
                                               float* __restrict__ f, int64_t i, int count, float t, float ft) {
  float x[kVec], y[kVec], e[kVec];
  range::load_f32(d + i, count, x);
  range::load_f32(s + i, count, y);
  if (f) range::load_f32(f + i, count, e);
#pragma unroll
  for (int k = 0; k < kVec; ++k) {
    x[k] = range::lerp_elem(x[k], y[k], t);
    if (f) e[k] = range::lerp_elem(e[k], x[k], ft);
  }
  range::store_f32(d + i, count, x);
  if (f) range::store_f32(f + i, count, e);
}

// BatchNorm's statistics riding in SgdNesterov (attrs.bn_stats): the last
// `blocks` blocks of the grid move them (bn_stats_piece).
struct BnStatsJob {
  float* run = nullptr;
  const float* batch = nullptr;
  float* run_ema = nullptr;
  int64_t n = 0;
  float t = 0.f, ema_t = 0.f;
  int blocks = 0;
};

// p, v[, ema]: f32 regions with the segments of t, g the gradients (f32 or
// 16-bit: range::GradIn); p16: the compute copy (bf16 when p16_bf16, else f16), or null.
// ema == null: no EMA; unscale: g *= grad_unscale first (optimizers.h).
__global__ void __launch_bounds__(range::kThreads)
    sgd_nesterov_kernel(__grid_constant__ const range::SegTable t, float* __restrict__ p, const range::GradIn g,
                        float* __restrict__ v, float* __restrict__ ema, uint16_t* __restrict__ p16, bool p16_bf16,
                        const TrainScalars* s, float mu, float wd, bool unscale, float ema_t, BnStatsJob bn) {
  cuda::grid_dependency_begin();
  if (s->found_inf) return;
  const int sgd_blocks = int(gridDim.x) - bn.blocks;
  if (int(blockIdx.x) >= sgd_blocks) {
    range::for_each_piece(bn.n, int64_t(blockIdx.x) - sgd_blocks, bn.blocks, [&](int64_t i, int count) {
      bn_stats_piece(bn.run, bn.batch, bn.run_ema, i, count, bn.t, bn.ema_t);
    });
    return;
  }
  const float lr = s->lr;
  const float inv = s->grad_unscale;  // AdvanceStep's 1/loss_scale
  range::for_each_seg_piece(t, int(blockIdx.x), sgd_blocks, [&](int64_t i, int count, bool decay) {
    float P[kVec], G[kVec], V[kVec], E[kVec];
    range::load_f32(p + i, count, P);
    range::load_grad(g, i, count, G);
    range::load_f32(v + i, count, V);
    if (ema) range::load_f32(ema + i, count, E);
#pragma unroll
    for (int k = 0; k < kVec; ++k) {
      const float gk = unscale ? range::rn_mul(G[k], inv) : G[k];
      range::sgd_nesterov_elem(P[k], gk, V[k], lr, mu, wd, decay);
      if (ema) E[k] = range::lerp_elem(E[k], P[k], ema_t);
    }
    range::store_f32(p + i, count, P);
    range::store_f32(v + i, count, V);
    if (ema) range::store_f32(ema + i, count, E);
    if (p16) range::store_half_bits(p16 + i, count, P, p16_bf16);
  });
}

// AdamW's tail (Note [optimizer tail]): ema (f32) and p16 (the compute copy:
// bf16 when p16_bf16, else f16), each null when absent;
// unscale: g *= grad_unscale first, then clip: g *= clip_scale (optimizers.h).
struct AdamTail {
  float* ema = nullptr;
  uint16_t* p16 = nullptr;
  bool p16_bf16 = false;
  float ema_t = 0.f;
  bool unscale = false, clip = false;
};

// p, m, v: f32 regions with the segments of t, g the gradients (f32 or 16-bit:
// range::GradIn); t = scalars.step.
__global__ void __launch_bounds__(range::kThreads)
    adamw_kernel(__grid_constant__ const range::SegTable t, float* __restrict__ p, const range::GradIn g,
                 float* __restrict__ m, float* __restrict__ v, const TrainScalars* s, float wd, float b1, float b2,
                 float eps, AdamTail tail) {
  cuda::grid_dependency_begin();
  if (s->found_inf) return;
  const range::AdamCoef k = range::adam_coef(s->lr, wd, b1, b2, eps, s->step);
  const float inv = s->grad_unscale;  // AdvanceStep's 1/loss_scale, read when unscale
  const float scale = s->clip_scale;  // GradNorm's, read when clip (grad_norm.h)
  range::for_each_seg_piece(t, [&](int64_t i, int count, bool decay) {
    float P[kVec], G[kVec], M[kVec], V[kVec], E[kVec];
    range::load_f32(p + i, count, P);
    range::load_grad(g, i, count, G);
    range::load_f32(m + i, count, M);
    range::load_f32(v + i, count, V);
    if (tail.ema) range::load_f32(tail.ema + i, count, E);
#pragma unroll
    for (int j = 0; j < kVec; ++j) {
      float gj = tail.unscale ? range::rn_mul(G[j], inv) : G[j];
      if (tail.clip) gj = range::rn_mul(gj, scale);
      range::adamw_elem(P[j], gj, M[j], V[j], k, decay);
      if (tail.ema) E[j] = range::lerp_elem(E[j], P[j], tail.ema_t);
    }
    range::store_f32(p + i, count, P);
    range::store_f32(m + i, count, M);
    range::store_f32(v + i, count, V);
    if (tail.ema) range::store_f32(tail.ema + i, count, E);
    if (tail.p16) range::store_half_bits(tail.p16 + i, count, P, tail.p16_bf16);
  });
}

// grid (cluster, t.n), cluster = gridDim.x blocks: cluster blockIdx.y updates segment blockIdx.y.
__global__ void __launch_bounds__(kLarsThreads)
    lars_kernel(__grid_constant__ const range::SegTable t, float* __restrict__ p, const float* __restrict__ g,
                float* __restrict__ v, const TrainScalars* s, float mu, float wd, float trust_coef) {
  cuda::grid_dependency_begin();
  if (s->found_inf) return;  // uniform over the grid: no cluster barrier is left waiting
  cg::cluster_group cluster = cg::this_cluster();
  const int seg = blockIdx.y;
  const int64_t base = t.offset[seg];
  const int64_t n = t.elems[seg];
  const bool decay = ((t.decay[seg >> 5] >> (seg & 31)) & 1u) != 0;
  const unsigned blocks = cluster.num_blocks();
  const int64_t first = (int64_t(cluster.block_rank()) * kLarsThreads + threadIdx.x) * kVec;
  const int64_t stride = int64_t(blocks) * kLarsThreads * kVec;
  const float lr = s->lr;

  float trust = 1.f;
  if (decay) {  // uniform over the cluster
    constexpr int kWarps = kLarsThreads / 32;
    __shared__ double warp_sums[2][kWarps];
    __shared__ double block_sums[2];
    __shared__ float trust_s;
    double sp = 0, sg = 0;
    // Two pieces per iteration: more loads in flight (fixed order, so still deterministic).
    for (int64_t i = first; i < n; i += 2 * stride) {
      float P[2][kVec], G[2][kVec];
#pragma unroll
      for (int u = 0; u < 2; ++u) {
        const int64_t j = i + u * stride;
        const int count = j >= n ? 0 : (n - j < kVec ? int(n - j) : kVec);
        range::load_f32(p + base + j, count, P[u]);  // beyond count: zeros
        range::load_f32(g + base + j, count, G[u]);
      }
#pragma unroll
      for (int u = 0; u < 2; ++u)
#pragma unroll
        for (int k = 0; k < kVec; ++k) {
          sp = range::rn_dadd(sp, range::rn_dmul(P[u][k], P[u][k]));
          sg = range::rn_dadd(sg, range::rn_dmul(G[u][k], G[u][k]));
        }
    }
    for (int off = 16; off > 0; off >>= 1) {
      sp = range::rn_dadd(sp, __shfl_down_sync(0xffffffffu, sp, off));
      sg = range::rn_dadd(sg, __shfl_down_sync(0xffffffffu, sg, off));
    }
    const int warp = threadIdx.x / 32;
    if (threadIdx.x % 32 == 0) {
      warp_sums[0][warp] = sp;
      warp_sums[1][warp] = sg;
    }
    // Block barrier for warp_sums. A cluster barrier (a superset) rather than
    // __syncthreads: compute-sanitizer synccheck flags a bar.sync mixed with the
    // cluster barriers of this kernel; with cluster barriers only it is clean.
    __syncwarp();
    cluster.sync();
    if (threadIdx.x == 0) {
      double a = 0, b = 0;
      for (int w = 0; w < kWarps; ++w) {
        a = range::rn_dadd(a, warp_sums[0][w]);
        b = range::rn_dadd(b, warp_sums[1][w]);
      }
      block_sums[0] = a;
      block_sums[1] = b;
    }
    __syncwarp();    // converged warps at the (aligned) cluster barrier
    cluster.sync();  // every block's sums visible to the cluster
    if (threadIdx.x == 0) {
      double a = 0, b = 0;
      for (unsigned r = 0; r < blocks; ++r) {
        const double* remote = cluster.map_shared_rank(block_sums, r);
        a = range::rn_dadd(a, remote[0]);
        b = range::rn_dadd(b, remote[1]);
      }
      trust_s = range::lars_trust(a, b, trust_coef, wd);
    }
    __syncwarp();
    cluster.sync();  // remote reads done before any block moves on or exits; trust_s visible
    trust = trust_s;
  }

  for (int64_t i = first; i < n; i += stride) {
    const int count = n - i < kVec ? int(n - i) : kVec;
    float P[kVec], G[kVec], V[kVec];
    range::load_f32(p + base + i, count, P);
    range::load_f32(g + base + i, count, G);
    range::load_f32(v + base + i, count, V);
#pragma unroll
    for (int k = 0; k < kVec; ++k) range::lars_elem(P[k], G[k], V[k], lr, mu, wd, trust, decay);
    range::store_f32(p + base + i, count, P);
    range::store_f32(v + base + i, count, V);
  }
}

// Blocks per LARS cluster on the current device: kLarsMaxCluster when the device
// can co-schedule such (non-portable) clusters, else the portable 8. Decided once
// per device; the kernel attribute is set then, outside any per-step work.
int lars_cluster_size() {
  int dev = 0;
  TR_GPU_CHECK(cudaGetDevice(&dev));
  static std::array<std::atomic<int>, 64> cache{};
  TR_CHECK(dev >= 0 && dev < int(cache.size()), "Lars: device ordinal ", dev, " out of range");
  int size = cache[dev].load(std::memory_order_acquire);
  if (size != 0) return size;
  size = 8;
  if (kLarsMaxCluster > 8 &&
      cudaFuncSetAttribute(lars_kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1) == cudaSuccess) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(kLarsMaxCluster, 1);
    cfg.blockDim = dim3(kLarsThreads);
    cudaLaunchAttribute attr;
    attr.id = cudaLaunchAttributeClusterDimension;
    attr.val.clusterDim.x = kLarsMaxCluster;
    attr.val.clusterDim.y = 1;
    attr.val.clusterDim.z = 1;
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
    int clusters = 0;
    if (cudaOccupancyMaxActiveClusters(&clusters, lars_kernel, &cfg) == cudaSuccess && clusters > 0)
      size = kLarsMaxCluster;
  }
  (void)cudaGetLastError();  // a refused query above is not an error of a later launch
  cache[dev].store(size, std::memory_order_release);
  return size;
}

// ---- launchers ----

// The shared checks (range_util.h), and 16-byte alignment; returns the scalars.
const TrainScalars* check_optimizer(const RangeCall& c, int n, const char* op, bool half_grad = false) {
  range::check_optimizer_operands(c, n, op, half_grad);
  for (int k = 0; k < n; ++k) range::check_aligned16(c.ops[k].data, op);
  return c.env->scalars;
}

float* f32(const RangeOperand& o) { return static_cast<float*>(o.data); }

}  // namespace

void sgd_nesterov_cuda(const RangeCall& c) {
  const range::OptimizerOperands o = range::optimizer_operands(c, 1, "SgdNesterov");
  const TrainScalars* s = check_optimizer(c, o.f32, "SgdNesterov", true);
  const RangeAttrs& a = *c.attrs;
  const RangeOperand& P = c.ops[0];
  float* ema = o.ema >= 0 ? f32(c.ops[o.ema]) : nullptr;
  uint16_t* p16 = o.compute >= 0 ? static_cast<uint16_t*>(c.ops[o.compute].data) : nullptr;
  const bool p16_bf16 = o.compute >= 0 && c.ops[o.compute].dtype == DType::BF16;
  BnStatsJob bn;  // rides in the first launch
  if (o.bn >= 0 && c.ops[o.bn].elems > 0) {
    for (int k = o.bn; k < c.n_ops; ++k) range::check_aligned16(c.ops[k].data, "SgdNesterov");
    bn = {f32(c.ops[o.bn]),
          f32(c.ops[o.bn + 1]),
          a.ema ? f32(c.ops[o.bn + 2]) : nullptr,
          c.ops[o.bn].elems,
          a.t,
          a.ema_t,
          range::grid_for_tiles(c, range::tiles_of(c.ops[o.bn].elems))};
  }
  range::SegTable t;
  for (int k = 0; k < P.n_segs || bn.blocks > 0;) {
    k += range::fill_seg_table(P.segs, k, P.n_segs, t, "SgdNesterov");
    if (t.n == 0 && bn.blocks == 0) continue;
    const int grid = (t.n > 0 ? range::grid_for_tiles(c, t.tiles) : 0) + bn.blocks;
    cuda::launch_kernel(c.env, {dim3(grid), range::kThreads, 0}, sgd_nesterov_kernel, t, f32(P),
                        range::grad_in(c.ops[1]), f32(c.ops[2]), ema, p16, p16_bf16, s, a.momentum, a.weight_decay,
                        a.unscale, a.ema_t, bn);
    bn = BnStatsJob{};
  }
}

void adamw_cuda(const RangeCall& c) {
  const range::OptimizerOperands o = range::optimizer_operands(c, 2, "AdamW");
  TR_CHECK(o.bn < 0, "AdamW: takes no BatchNorm statistics");
  const TrainScalars* s = check_optimizer(c, o.f32, "AdamW", true);
  const RangeAttrs& a = *c.attrs;
  const RangeOperand& P = c.ops[0];
  AdamTail tail;
  tail.ema = o.ema >= 0 ? f32(c.ops[o.ema]) : nullptr;
  tail.p16 = o.compute >= 0 ? static_cast<uint16_t*>(c.ops[o.compute].data) : nullptr;
  tail.p16_bf16 = o.compute >= 0 && c.ops[o.compute].dtype == DType::BF16;
  tail.ema_t = a.ema_t;
  tail.unscale = a.unscale;
  tail.clip = a.clip;
  range::SegTable t;
  for (int k = 0; k < P.n_segs;) {
    k += range::fill_seg_table(P.segs, k, P.n_segs, t, "AdamW");
    if (t.n == 0) continue;
    cuda::launch_kernel(c.env, {dim3(range::grid_for_tiles(c, t.tiles)), range::kThreads, 0}, adamw_kernel, t, f32(P),
                        range::grad_in(c.ops[1]), f32(c.ops[2]), f32(c.ops[3]), s, a.weight_decay, a.beta1, a.beta2,
                        a.adam_eps, tail);
  }
}

void lars_cuda(const RangeCall& c) {
  const TrainScalars* s = check_optimizer(c, 3, "Lars");
  const RangeAttrs& a = *c.attrs;
  const RangeOperand& P = c.ops[0];
  const unsigned cluster = unsigned(lars_cluster_size());
  range::SegTable t;
  for (int k = 0; k < P.n_segs;) {
    k += range::fill_seg_table(P.segs, k, P.n_segs, t, "Lars");
    if (t.n == 0) continue;
    cuda::LaunchShape shape{dim3(cluster, t.n), dim3(kLarsThreads)};
    shape.cluster_x = cluster;
    cuda::launch_kernel(c.env, shape, lars_kernel, t, f32(P), static_cast<const float*>(c.ops[1].data), f32(c.ops[2]),
                        s, a.momentum, a.weight_decay, a.trust_coef);
  }
}

}  // namespace tr
