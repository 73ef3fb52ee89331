// CUDA AMP / step bookkeeping RANGE ops (see amp_ops.h). All per-step values are
// read and written in env.scalars on the device (Note [scalars in device memory]);
// the launchers are capturable (Note [range launchers are capturable]).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "framework/ops/kernels/range_util_cuda.h"
#include "framework/ops/range/amp_ops.h"

namespace tr {
namespace {

using range::kVec;

// ---- kernels ----

// dst f16|bf16[n] = round-to-nearest-even(src f32[n]); BF picks bf16.
template <bool BF>
__global__ void __launch_bounds__(range::kThreads)
    cast_f32_to_half_kernel(const float* __restrict__ src, uint16_t* __restrict__ dst, int64_t n) {
  cuda::grid_dependency_begin();
  for (int64_t tile = blockIdx.x; tile * range::kTile < n; tile += gridDim.x) {
    const int64_t i = tile * range::kTile + int64_t(threadIdx.x) * kVec;
    const int64_t left = n - i;
    if (left <= 0) continue;
    const int count = left < kVec ? int(left) : kVec;
    float x[kVec];
    range::load_f32(src + i, count, x);
    range::store_half_bits(dst + i, count, x, BF);  // i is a multiple of 4 and dst 16-byte aligned
  }
}

// dst f32[n] = src f16|bf16[n] (exact). pending_inf != null: a NaN/Inf in src
// sets it, as CheckFinite would (Note [the check's flag]).
template <bool BF>
__global__ void __launch_bounds__(range::kThreads)
    cast_half_to_f32_kernel(const uint16_t* __restrict__ src, float* __restrict__ dst, int64_t n,
                            int32_t* pending_inf) {
  cuda::grid_dependency_begin();
  int bad = 0;
  for (int64_t tile = blockIdx.x; tile * range::kTile < n; tile += gridDim.x) {
    const int64_t i = tile * range::kTile + int64_t(threadIdx.x) * kVec;
    const int64_t left = n - i;
    if (left <= 0) continue;
    const int count = left < kVec ? int(left) : kVec;
    uint16_t h[kVec];
    range::load_half_bits(src + i, count, h);
    float x[kVec];
#pragma unroll
    for (int k = 0; k < kVec; ++k) {
      x[k] = range::half_bits_to_f32<BF>(h[k]);
      bad |= !range::half_bits_finite(h[k], BF);  // the zero fill past count is finite
    }
    range::store_f32(dst + i, count, x);
  }
  if (pending_inf != nullptr && __syncthreads_or(bad) && threadIdx.x == 0) *pending_inf = 1;
}

// pending_inf = 1 when any element of any operand is NaN/Inf. Every writer
// stores the same 1, so the result does not depend on the order of blocks, and
// nothing clears the flag first (Note [the check's flag]).
__global__ void __launch_bounds__(range::kThreads)
    check_finite_kernel(__grid_constant__ const range::OperandTable t, int32_t* pending_inf) {
  cuda::grid_dependency_begin();
  int bad = 0;
  range::for_each_operand_piece(t, [&](int e, int64_t i, int count) {
    if (t.f16[e]) {
      const bool bf = t.bf16[e] != 0;
      uint16_t h[kVec];
      range::load_half_bits(static_cast<const uint16_t*>(t.data[e]) + i, count, h);
#pragma unroll
      for (int k = 0; k < kVec; ++k) bad |= !range::half_bits_finite(h[k], bf);
    } else {
      const uint32_t* p = static_cast<const uint32_t*>(t.data[e]) + i;
      if (count == kVec) {
        const uint4 v = *reinterpret_cast<const uint4*>(p);
        bad |= !range::f32_bits_finite(v.x) | !range::f32_bits_finite(v.y) | !range::f32_bits_finite(v.z) |
               !range::f32_bits_finite(v.w);
      } else {
        for (int k = 0; k < count; ++k) bad |= !range::f32_bits_finite(p[k]);
      }
    }
  });
  if (__syncthreads_or(bad) && threadIdx.x == 0) *pending_inf = 1;
}

// g *= 1/loss_scale over every operand (f32) unless found_inf.
__global__ void __launch_bounds__(range::kThreads)
    unscale_kernel(__grid_constant__ const range::OperandTable t, const TrainScalars* s) {
  cuda::grid_dependency_begin();
  if (s->found_inf) return;
  const float inv = range::unscale_factor(s->loss_scale);
  range::for_each_operand_piece(t, [&](int e, int64_t i, int count) {
    float* p = static_cast<float*>(t.data[e]) + i;
    float x[kVec];
    range::load_f32(p, count, x);
#pragma unroll
    for (int k = 0; k < kVec; ++k) x[k] = range::rn_mul(x[k], inv);
    range::store_f32(p, count, x);
  });
}

__global__ void update_loss_scale_kernel(TrainScalars* s, float growth, float backoff, int interval, bool dynamic) {
  cuda::grid_dependency_begin();
  range::update_loss_scale(*s, growth, backoff, interval, dynamic);
}

// acc_n > 0: acc_dst[acc_n] += acc_src (Accumulate); update_scale:
// UpdateLossScale's update follows (amp_ops.h). A handful of values: one thread.
__global__ void advance_step_kernel(TrainScalars* s, const float* table, int64_t table_elems, float* acc_dst,
                                    const float* acc_src, int64_t acc_n, bool update_scale, float growth, float backoff,
                                    int interval, bool dynamic) {
  cuda::grid_dependency_begin();
  range::advance_step(*s, table, table_elems);
  for (int64_t i = 0; i < acc_n; ++i) acc_dst[i] = range::accumulate_elem(acc_dst[i], acc_src[i]);
  if (update_scale) range::update_loss_scale(*s, growth, backoff, interval, dynamic);
}

TrainScalars* scalars_of(const RangeCall& c, const char* op) {
  TR_CHECK(c.env != nullptr && c.env->scalars != nullptr, op, ": no scalars");
  return c.env->scalars;
}

}  // namespace

// ---- launchers ----

void cast_cuda(const RangeCall& c) {
  range::check_n_ops(c, 2, "Cast");
  const RangeOperand& src = c.ops[0];
  const RangeOperand& dst = c.ops[1];
  TR_CHECK(src.elems == dst.elems, "Cast: operand sizes differ (", src.elems, " vs ", dst.elems, ")");
  const int64_t n = src.elems;
  range::cast_checks_finite(c);  // a bad attribute is an error whatever the operand sizes
  if (n == 0) return;
  cudaStream_t stream = range::stream_of(c);
  if (src.dtype == dst.dtype) {
    TR_CHECK(src.dtype == DType::F32 || is_half(src.dtype), "Cast: unsupported dtype");
    if (src.data != dst.data) {
      TR_GPU_CHECK(
          cudaMemcpyAsync(dst.data, src.data, size_t(n) * dtype_size(src.dtype), cudaMemcpyDeviceToDevice, stream));
      ++launch_tally().memcpys;  // Note [launch accounting]
    }
    return;
  }
  range::check_aligned16(src.data, "Cast");
  range::check_aligned16(dst.data, "Cast");
  const int grid = range::grid_for_tiles(c, range::tiles_of(n));
  if (src.dtype == DType::F32 && is_half(dst.dtype)) {
    cuda::launch_kernel(c.env, {dim3(grid), range::kThreads, 0},
                        dst.dtype == DType::BF16 ? cast_f32_to_half_kernel<true> : cast_f32_to_half_kernel<false>,
                        static_cast<const float*>(src.data), static_cast<uint16_t*>(dst.data), n);
  } else if (is_half(src.dtype) && dst.dtype == DType::F32) {
    int32_t* pending = range::cast_checks_finite(c) ? &c.env->scalars->pending_inf : nullptr;
    cuda::launch_kernel(c.env, {dim3(grid), range::kThreads, 0},
                        src.dtype == DType::BF16 ? cast_half_to_f32_kernel<true> : cast_half_to_f32_kernel<false>,
                        static_cast<const uint16_t*>(src.data), static_cast<float*>(dst.data), n, pending);
  } else {
    TR_CHECK(false, "Cast: unsupported ", dtype_name(src.dtype), " -> ", dtype_name(dst.dtype));
  }
}

void check_finite_cuda(const RangeCall& c) {
  TrainScalars* s = scalars_of(c, "CheckFinite");
  for (int k = 0; k < c.n_ops; ++k)
    TR_CHECK(c.ops[k].dtype == DType::F32 || is_half(c.ops[k].dtype), "CheckFinite: operand ", k,
             " must be f32, f16 or bf16, got ", dtype_name(c.ops[k].dtype));
  range::OperandTable t;
  for (int k = 0; k < c.n_ops;) {
    k += range::fill_operand_table(c.ops, k, c.n_ops, t, "CheckFinite");
    if (t.n == 0) continue;
    cuda::launch_kernel(c.env, {dim3(range::grid_for_tiles(c, t.tiles)), range::kThreads, 0}, check_finite_kernel, t,
                        &s->pending_inf);
  }
}

void unscale_grads_cuda(const RangeCall& c) {
  TrainScalars* s = scalars_of(c, "UnscaleGrads");
  for (int k = 0; k < c.n_ops; ++k) range::check_f32(c.ops[k], "UnscaleGrads");
  range::OperandTable t;
  for (int k = 0; k < c.n_ops;) {
    k += range::fill_operand_table(c.ops, k, c.n_ops, t, "UnscaleGrads");
    if (t.n == 0) continue;
    cuda::launch_kernel(c.env, {dim3(range::grid_for_tiles(c, t.tiles)), range::kThreads, 0}, unscale_kernel, t, s);
  }
}

void update_loss_scale_cuda(const RangeCall& c) {
  TrainScalars* s = scalars_of(c, "UpdateLossScale");
  TR_CHECK(c.attrs != nullptr, "UpdateLossScale: no attributes");
  const RangeAttrs& a = *c.attrs;
  cuda::launch_kernel(c.env, {1, 1, 0}, update_loss_scale_kernel, s, a.growth_factor, a.backoff_factor,
                      a.growth_interval, a.dynamic_scale);
}

void advance_step_cuda(const RangeCall& c) {
  const bool accumulate = range::advance_step_accumulates(c);
  const RangeAttrs a = c.attrs != nullptr ? *c.attrs : RangeAttrs{};
  cuda::launch_kernel(c.env, {1, 1, 0}, advance_step_kernel, c.env->scalars, static_cast<const float*>(c.ops[0].data),
                      c.ops[0].elems, accumulate ? static_cast<float*>(c.ops[1].data) : nullptr,
                      accumulate ? static_cast<const float*>(c.ops[2].data) : nullptr,
                      accumulate ? c.ops[1].elems : int64_t(0), a.update_scale, a.growth_factor, a.backoff_factor,
                      a.growth_interval, a.dynamic_scale);
}

}  // namespace tr
