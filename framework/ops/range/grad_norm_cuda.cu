// GradNorm on CUDA (see grad_norm.h): kGradNormPartials blocks each sum the
// squares of a fixed grid-stride share of every region in double (a thread's
// elements in order, a shuffle tree, the warps in order), then one warp adds
// the blocks' sums in order and writes the scalars. Two launches, no atomics:
// the same bits on every run. Capturable (Note [range launchers are capturable]).
#include "framework/ops/kernels/range_util_cuda.h"
#include "framework/ops/range/grad_norm.h"

namespace tr {
namespace {

constexpr int kThreads = 256;
constexpr int kMaxRegions = 4;

struct GradRegions {
  const float* p[kMaxRegions] = {};
  int64_t n[kMaxRegions] = {};
  int count = 0;
};

__device__ double warp_sum(double v) {
  for (int off = 16; off > 0; off >>= 1) v = range::rn_dadd(v, __shfl_down_sync(0xffffffffu, v, off));
  return v;
}

// partials[blockIdx.x] = sum over this block's elements of g^2 (g times
// grad_unscale first, in f32, when unscale).
__global__ void __launch_bounds__(kThreads)
    grad_squares_kernel(GradRegions r, double* __restrict__ partials, const TrainScalars* s, bool unscale) {
  cuda::grid_dependency_begin();
  __shared__ double warp_sums[kThreads / 32];
  double acc = 0;
  const float inv = unscale ? s->grad_unscale : 1.f;
  const int64_t first = int64_t(blockIdx.x) * kThreads + threadIdx.x, stride = int64_t(gridDim.x) * kThreads;
  for (int k = 0; k < r.count; ++k)
    for (int64_t i = first; i < r.n[k]; i += stride) {
      const double g = unscale ? range::rn_mul(r.p[k][i], inv) : r.p[k][i];
      acc = range::rn_dadd(acc, range::rn_dmul(g, g));
    }
  acc = warp_sum(acc);
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = acc;
  __syncthreads();
  if (threadIdx.x != 0) return;
  double sum = 0;
  for (int w = 0; w < kThreads / 32; ++w) sum = range::rn_dadd(sum, warp_sums[w]);
  partials[blockIdx.x] = sum;
}

// One warp: lane l adds partials l, l+32, ... in order; then the shuffle tree.
__global__ void grad_norm_finish_kernel(const double* __restrict__ partials, TrainScalars* s, float max_norm) {
  cuda::grid_dependency_begin();
  double acc = 0;
  for (int i = int(threadIdx.x); i < kGradNormPartials; i += 32) acc = range::rn_dadd(acc, partials[i]);
  acc = warp_sum(acc);
  if (threadIdx.x != 0) return;
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
    r.p[k] = static_cast<const float*>(c.ops[k].data);
    r.n[k] = c.ops[k].elems;
  }
  r.count = c.n_ops - 1;
  double* partials = static_cast<double*>(c.ops[c.n_ops - 1].data);
  cuda::launch_kernel(c.env, {dim3(kGradNormPartials), dim3(kThreads), 0}, grad_squares_kernel, r, partials,
                      c.env->scalars, c.attrs->unscale);
  cuda::launch_kernel(c.env, {dim3(1), dim3(32), 0}, grad_norm_finish_kernel, partials, c.env->scalars,
                      c.attrs->max_norm);
}

}  // namespace tr
