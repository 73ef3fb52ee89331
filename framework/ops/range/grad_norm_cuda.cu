// GradNorm on CUDA (see grad_norm.h): kGradNormPartials blocks each sum the
// squares of a fixed grid-stride share of every region in double (a thread's
// vectors in order, a shuffle tree, the warps in order), then one warp adds
// the blocks' sums in order and writes the scalars. Two launches, no atomics:
// the same bits on every run. Capturable (Note [range launchers are capturable]).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <type_traits>

#include "framework/ops/kernels/range_util_cuda.h"
#include "framework/ops/range/grad_norm.h"

namespace tr {
namespace {

constexpr int kThreads = 256;
constexpr int kMaxRegions = 4;

// Regions of one dtype: f32, or f16|bf16 read in place (Note [16-bit gradients
// in the optimizer], recipe_graphs.h).
struct GradRegions {
  const void* p[kMaxRegions] = {};
  int64_t n[kMaxRegions] = {};
  int count = 0;
};

// Four gradients from element 4*i of region p, widened exactly: a float4, or
// four 16-bit values (8 bytes). So the 16-bit regions are summed in the very
// order of the f32 ones, and give the same bits as their f32 casts.
template <typename G>
__device__ __forceinline__ float4 load4(const void* p, int64_t i) {
  if constexpr (std::is_same_v<G, float>) {
    return static_cast<const float4*>(p)[i];
  } else {
    uint16_t h[range::kVec];
    range::load_half_bits(static_cast<const uint16_t*>(p) + 4 * i, range::kVec, h);
    constexpr bool bf = std::is_same_v<G, __nv_bfloat16>;
    return make_float4(range::half_bits_to_f32<bf>(h[0]), range::half_bits_to_f32<bf>(h[1]),
                       range::half_bits_to_f32<bf>(h[2]), range::half_bits_to_f32<bf>(h[3]));
  }
}
template <typename G>
__device__ __forceinline__ float load1(const void* p, int64_t i) {
  if constexpr (std::is_same_v<G, float>) return static_cast<const float*>(p)[i];
  else return range::half_bits_to_f32<std::is_same_v<G, __nv_bfloat16>>(static_cast<const uint16_t*>(p)[i]);
}

__device__ double warp_sum(double v) {
  for (int off = 16; off > 0; off >>= 1) v = range::rn_dadd(v, __shfl_down_sync(0xffffffffu, v, off));
  return v;
}

// g^2 added to acc in double (g times grad_unscale first, in f32, when unscale).
__device__ __forceinline__ void add_square(double& acc, float x, bool unscale, float inv) {
  const double g = unscale ? range::rn_mul(x, inv) : x;
  acc = range::rn_dadd(acc, range::rn_dmul(g, g));
}

// partials[blockIdx.x] = sum over this block's elements of g^2 (G: the
// gradients' type). A thread reads vectors of four of each region in a
// grid-stride pattern (four loads in flight) and keeps one double sum per
// vector lane; a region's last n % 4 elements go to the first threads of the
// grid. The four sums are added (s0 + s1) + (s2 + s3), then the warp's shuffle
// tree, then the warps in order: a fixed order, the same bits on every run.
// check: GradNorm is the step's check, before AdvanceStep (grad_norm.h).
template <typename G>
__global__ void __launch_bounds__(kThreads)
    grad_squares_kernel(GradRegions r, double* __restrict__ partials, const TrainScalars* s, bool unscale, bool check) {
  cuda::grid_dependency_begin();
  __shared__ double warp_sums[kThreads / 32];
  double a[4] = {0, 0, 0, 0};
  const float inv = !unscale ? 1.f : check ? range::unscale_factor(s->loss_scale) : s->grad_unscale;
  const int64_t first = int64_t(blockIdx.x) * kThreads + threadIdx.x, stride = int64_t(gridDim.x) * kThreads;
  for (int k = 0; k < r.count; ++k) {
    const int64_t n4 = r.n[k] / 4;
#pragma unroll 4
    for (int64_t i = first; i < n4; i += stride) {
      const float4 v = load4<G>(r.p[k], i);
      add_square(a[0], v.x, unscale, inv);
      add_square(a[1], v.y, unscale, inv);
      add_square(a[2], v.z, unscale, inv);
      add_square(a[3], v.w, unscale, inv);
    }
    for (int64_t i = 4 * n4 + first; i < r.n[k]; i += stride) add_square(a[0], load1<G>(r.p[k], i), unscale, inv);
  }
  double acc = range::rn_dadd(range::rn_dadd(a[0], a[1]), range::rn_dadd(a[2], a[3]));
  acc = warp_sum(acc);
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = acc;
  __syncthreads();
  if (threadIdx.x != 0) return;
  double sum = 0;
  for (int w = 0; w < kThreads / 32; ++w) sum = range::rn_dadd(sum, warp_sums[w]);
  partials[blockIdx.x] = sum;
}

// One warp: lane l adds partials l, l+32, ... in order; then the shuffle tree.
// check: a sum that is not finite sets pending_inf (grad_norm.h).
__global__ void grad_norm_finish_kernel(const double* __restrict__ partials, TrainScalars* s, float max_norm,
                                        bool check) {
  cuda::grid_dependency_begin();
  double acc = 0;
  for (int i = int(threadIdx.x); i < kGradNormPartials; i += 32) acc = range::rn_dadd(acc, partials[i]);
  acc = warp_sum(acc);
  if (threadIdx.x != 0) return;
  if (check && !isfinite(acc)) s->pending_inf = 1;
  s->grad_norm = float(range::rn_dsqrt(acc));
  s->clip_scale = range::clip_scale_of(s->grad_norm, max_norm);
}

}  // namespace

void grad_norm_cuda(const RangeCall& c) {
  const char* op = "GradNorm";
  check_grad_norm_operands(c, op);
  GradRegions r;
  TR_CHECK(c.n_ops - 1 <= kMaxRegions, op, ": at most ", kMaxRegions, " gradient regions, got ", c.n_ops - 1);
  for (int k = 0; k + 1 < c.n_ops; ++k) {
    r.p[k] = c.ops[k].data;
    range::check_aligned16(r.p[k], op);  // vector loads of four (16 or 8 bytes)
    r.n[k] = c.ops[k].elems;
  }
  r.count = c.n_ops - 1;
  double* partials = static_cast<double*>(c.ops[c.n_ops - 1].data);
  const DType t = c.ops[0].dtype;
  auto kernel = t == DType::F32    ? grad_squares_kernel<float>
                : t == DType::BF16 ? grad_squares_kernel<__nv_bfloat16>
                                   : grad_squares_kernel<__half>;
  const bool check = c.attrs->check_finite;
  cuda::launch_kernel(c.env, {dim3(kGradNormPartials), dim3(kThreads), 0}, kernel, r, partials, c.env->scalars,
                      c.attrs->unscale, check);
  cuda::launch_kernel(c.env, {dim3(1), dim3(32), 0}, grad_norm_finish_kernel, partials, c.env->scalars,
                      c.attrs->max_norm, check);
}

}  // namespace tr
