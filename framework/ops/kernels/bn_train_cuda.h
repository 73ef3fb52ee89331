#pragma once
// Note [one kernel per BatchNorm]
// A training BatchNorm + ReLU is three dependent passes: per-channel sums over
// the batch, the sum of their per-block partials, and the apply (the forward:
// statistics, then y; the backward: the gradient's two sums, then dx). Apart
// they are three kernels. When the grid fits on the GPU at once (fits_at_once),
// one cooperative kernel runs the three with grid barriers between them:
//   1. the sums on their own kernel's grid, in its order (channel_stats_rows,
//      bn_bwd_reduce_rows), into per-block partials;
//   2. behind a barrier, add_partials in finalize_sums' order
//      (Note [sums finished behind a grid barrier]);
//   3. behind a barrier, the apply's arithmetic (bn_apply_rows,
//      bn_bwd_apply_rows) on the same grid.
// Every value is the one the kernels apart compute, so the bits are theirs
// (OpsGpuGridSync.*). The fusion pass (Note [fusion]) makes the nodes that run
// them: BnStats + BnReluApply, the 2x2 max pool with its statistics +
// BnReluApply, and BnReluBwdReduce + BnReluBwdApply. Such a node launches the
// kernels apart unless --grid-sync asks for the cooperative kernel and its
// grid fits.
// Why it is not the default: on the H200 the cnn's step at batch 256 takes 58
// kernels with it and 85 without, but 6 % longer (0.597 against 0.565 ms;
// resnet18 at 128: 2.20 against 2.05 ms). Each grid barrier that replaces a
// finalize_sums kernel costs about 2.5 us more than the kernel boundary under
// programmatic launch (the H200 measurements' "One kernel per BatchNorm";
// docs/results.md, "Earlier measurements" says where they are kept).
// Phase 3 reads what other blocks wrote in phase 1 or 2 (the pooled x, the
// sums): nothing reads those addresses before the barrier, so no SM holds a
// stale copy, and the barrier orders the writes before the reads.
#include "framework/ops/kernels/bn_rows_cuda.h"
#include "framework/ops/kernels/channel_stats_cuda.h"

namespace tr::cuda {

// Statistics of src's rows (phase 1; with the pool's source it also stores the
// pooled x), then y = BatchNorm + ReLU of x. Grid: channel_grid with the
// statistics' blocks per SM, so at most 4 blocks of 256 threads per SM, which
// caps registers at 64: UNROLL rows in flight in phase 1 (2 for the pool's
// source, whose four loads per row spilled at 4).
template <typename T, int VEC, int UNROLL, typename Src>
__global__ void __launch_bounds__(kChannelBlockThreads, kStatsBlocksPerSm)
    bn_relu_train_kernel(Src src, const T* x, const T* gamma, const T* beta, T* y, float* batch, float* affine,
                         int64_t rows, int64_t C, double inv_count, float eps, bool relu, SumOut<float, 2> out) {
  grid_dependency_begin();
  channel_stats_rows<VEC, UNROLL, true>(src, rows, C, out);
  cooperative_groups::this_grid().sync();
  bn_apply_rows<T, VEC>(x, out.f32, gamma, beta, nullptr, y, batch, affine, rows, C, inv_count, eps, relu);
}

// BnStats (through src) then BnReluApply of x into y, batch, affine, with the
// sums in `sums` f32[2, C], as one cooperative kernel. Launches nothing and
// returns false without --grid-sync or when the grid does not fit: the caller
// then runs the ops apart. VEC: stats_vec's choice for every pointer src and
// the apply touch.
template <int VEC, int UNROLL, typename T, typename Src>
bool launch_bn_relu_train(const ExecEnv* env, const GpuHandles& gh, const Src& src, const T* x, int64_t rows, int64_t C,
                          float* sums, const T* gamma, const T* beta, T* y, float* batch, float* affine,
                          double inv_count, float eps, bool relu, const char* op) {
  if (!gh.grid_sync_sums) return false;
  const int sms = sm_count(gh);
  const ChannelGrid g = channel_grid(rows, C, VEC, sms, kStatsBlocksPerSm, kStatsMinRowsPerThread);
  SumOut<float, 2> out;
  out.partial = static_cast<float*>(workspace(gh, sum_partial_bytes<2>(g, C), op));
  out.f32 = sums;
  out.grid_sync = g.grid.x > 1;
  LaunchShape shape{g.grid, g.block, sum_smem_bytes<2, VEC>()};
  shape.cooperative = true;
  auto* kernel = bn_relu_train_kernel<T, VEC, UNROLL, Src>;
  if (!fits_at_once(kernel, shape, sms)) return false;
  launch_kernel(env, shape, kernel, src, x, gamma, beta, y, batch, affine, rows, C, inv_count, eps, relu, out);
  return true;
}

}  // namespace tr::cuda
