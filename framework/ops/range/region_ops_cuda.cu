// CUDA region RANGE ops (see region_ops.h); math shared with the CPU through
// range_util.h, so results are bit-identical (Note [range op rounding]).
#include "framework/ops/kernels/range_util_cuda.h"
#include "framework/ops/range/region_ops.h"

namespace tr {
namespace {

struct LerpOp {
  float t;
  __device__ float operator()(float d, float s) const { return range::lerp_elem(d, s, t); }
};
struct AccumulateOp {
  __device__ float operator()(float d, float s) const { return range::accumulate_elem(d, s); }
};

// ---- kernels ----

// d[i] = op(d[i], s[i]) over n elements; does nothing when *skip_flag != 0.
// d, s: f32[n], 16-byte aligned.
template <class Op>
__global__ void __launch_bounds__(range::kThreads)
    binary_f32_kernel(float* __restrict__ d, const float* __restrict__ s, int64_t n, Op op, const int32_t* skip_flag) {
  cuda::grid_dependency_begin();
  if (skip_flag != nullptr && *skip_flag != 0) return;
  range::for_each_piece(n, blockIdx.x, gridDim.x, [&](int64_t i, int count) {
    float x[range::kVec], y[range::kVec];
    range::load_f32(d + i, count, x);
    range::load_f32(s + i, count, y);
#pragma unroll
    for (int k = 0; k < range::kVec; ++k) x[k] = op(x[k], y[k]);
    range::store_f32(d + i, count, x);
  });
}

// ---- launchers ----

template <class Op>
void launch_binary(const RangeCall& c, const range::BinaryOperands& o, const char* name, Op op,
                   const int32_t* skip_flag) {
  const RangeOperand &dst = *o.dst, &src = *o.src;
  if (dst.elems == 0) return;
  range::check_aligned16(dst.data, name);
  range::check_aligned16(src.data, name);
  const int grid = range::grid_for_tiles(c, range::tiles_of(dst.elems));
  cuda::launch_kernel(c.env, {dim3(grid), range::kThreads, 0}, binary_f32_kernel<Op>, static_cast<float*>(dst.data),
                      static_cast<const float*>(src.data), dst.elems, op, skip_flag);
}

}  // namespace

void copy_in_cuda(const RangeCall& c) {
  // The staging pointers are fixed for the run (pinned host buffers); a captured
  // copy reads whatever they hold at replay time.
  const std::array<const void*, 2> from = range::copy_in_sources(c);
  for (int i = 0; i < c.n_ops && i < 2; ++i) {
    const RangeOperand& d = c.ops[i];
    const size_t bytes = size_t(d.elems) * dtype_size(d.dtype);
    if (bytes == 0) continue;
    range::check_copy_in_source(c, from[size_t(i)], i);
    TR_GPU_CHECK(cudaMemcpyAsync(d.data, from[size_t(i)], bytes, cudaMemcpyHostToDevice, range::stream_of(c)));
    ++launch_tally().memcpys;  // Note [launch accounting]
  }
}

void clear_cuda(const RangeCall& c) {
  TR_CHECK(c.ops != nullptr || c.n_ops == 0, "Clear: operands missing");
  for (int i = 0; i < c.n_ops; ++i) {
    const RangeOperand& d = c.ops[i];
    if (d.elems == 0) continue;
    TR_GPU_CHECK(cudaMemsetAsync(d.data, 0, size_t(d.elems) * dtype_size(d.dtype), range::stream_of(c)));
    ++launch_tally().memsets;
  }
}

void lerp_cuda(const RangeCall& c) {
  const range::BinaryOperands o = range::lerp_operands(c);  // checked before the attributes are read
  launch_binary(c, o, "Lerp", LerpOp{c.attrs->t}, c.attrs->skip_on_inf ? &c.env->scalars->found_inf : nullptr);
}

void accumulate_cuda(const RangeCall& c) {
  launch_binary(c, range::binary_operands(c, "Accumulate"), "Accumulate", AccumulateOp{}, nullptr);
}

}  // namespace tr
