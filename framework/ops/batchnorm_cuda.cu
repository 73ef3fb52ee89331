// BatchNorm (+ReLU) CUDA kernels. Semantics: framework/ops/batchnorm.h.
// Reductions follow Note [deterministic kernels] (cuda_kernel_util_cuda.h):
// per-thread sums over a fixed row set, a fixed shared-memory tree, per-block
// partials in the workspace, then added in block order (channel_sums_cuda.h).
//   workspace: channel_grid(...).grid.x * 2 * C * 4 bytes for BnStats and
//   BnReluBwdReduce (<= 4 * SMs * 2 * C * 4), nothing for the others.
#include "framework/ops/batchnorm.h"
#include "framework/ops/bn_train_cuda.h"
#include "framework/ops/relu.h"

namespace tr {
namespace {

using namespace tr::cuda;

// BnReluBwdReduce's grid: that of the forward statistics (channel_stats_cuda.h).
constexpr int kReduceBlocksPerSm = kStatsBlocksPerSm;
constexpr int64_t kMinRowsPerThread = kStatsMinRowsPerThread;
constexpr int kApplyBlocksPerSm = 8;
// The elementwise apply kernels give each thread at least 8 rows: on the H200
// that was 1 % faster per step than 4 (resnet18 b128 2.316 vs 2.341 ms, cnn
// b256 0.737 vs 0.747; docs/results.md, "Earlier measurements"); 16 blocks per SM or 4
// instead of 8 changed nothing.
constexpr int64_t kApplyMinRowsPerThread = 8;

// ---------------------------------------------------------------- kernels
// (the phases they run: bn_rows_cuda.h)

template <typename T, int VEC>
__global__ void bn_relu_apply_kernel(const T* __restrict__ x, const float* __restrict__ sums,
                                     const T* __restrict__ gamma, const T* __restrict__ beta,
                                     const T* __restrict__ residual, T* __restrict__ y,
                                     float* __restrict__ batch, float* __restrict__ affine, int64_t rows, int64_t C,
                                     double inv_count, float eps, bool relu) {
  grid_dependency_begin();
  bn_apply_rows<T, VEC>(x, sums, gamma, beta, residual, y, batch, affine, rows, C, inv_count, eps, relu);
}

// RELU_GRAD: dy is made from (dy, in.y, in.b) and stored to in.g on the way
// (Note [the ReLU's gradient in the reduce], batchnorm.h).
template <typename T, int VEC, bool SYNC = false, bool RELU_GRAD = false>
__global__ void bn_relu_bwd_reduce_kernel(const T* __restrict__ dy, const float* __restrict__ affine,
                                          const T* __restrict__ x, const float* __restrict__ batch, int64_t rows,
                                          int64_t C, float eps, bool relu, ReluGradIn<T> in, SumOut<T, 2> out) {
  grid_dependency_begin();
  bn_bwd_reduce_rows<T, VEC, SYNC, RELU_GRAD>(dy, affine, x, batch, rows, C, eps, relu, out, in);
}

template <typename T, int VEC>
__global__ void __launch_bounds__(kChannelBlockThreads, 4)
    bn_relu_bwd_apply_kernel(const T* __restrict__ dy, const float* __restrict__ affine, const T* __restrict__ x,
                             const float* __restrict__ batch, const T* __restrict__ gamma,
                             const float* __restrict__ dsums, T* __restrict__ dx, int64_t rows, int64_t C,
                             double inv_count, float eps, bool relu) {
  grid_dependency_begin();
  bn_bwd_apply_rows<T, VEC>(dy, affine, x, batch, gamma, dsums, dx, rows, C, inv_count, eps, relu);
}

// The reduce, its partials added (block_sum_store with out.grid_sync), then the
// apply from the sums: one cooperative kernel (Note [one kernel per BatchNorm]).
template <typename T, int VEC>
__global__ void __launch_bounds__(kChannelBlockThreads, kReduceBlocksPerSm)
    bn_relu_bwd_kernel(const T* __restrict__ dy, const float* __restrict__ affine, const T* __restrict__ x,
                       const float* __restrict__ batch, const T* __restrict__ gamma, T* __restrict__ dx, int64_t rows,
                       int64_t C, double inv_count, float eps, bool relu, SumOut<T, 2> out) {
  grid_dependency_begin();
  bn_bwd_reduce_rows<T, VEC, true>(dy, affine, x, batch, rows, C, eps, relu, out);
  cooperative_groups::this_grid().sync();
  bn_bwd_apply_rows<T, VEC>(dy, affine, x, batch, gamma, out.f32, dx, rows, C, inv_count, eps, relu);
}

// y = relu(scale * x + shift)
template <typename T, int VEC>
__global__ void bn_relu_infer_kernel(const T* __restrict__ x, const float* __restrict__ affine, T* __restrict__ y,
                                     int64_t rows, int64_t C, bool relu) {
  grid_dependency_begin();
  const int64_t gi = int64_t(blockIdx.y) * blockDim.x + threadIdx.x;
  const int64_t c0 = gi * VEC;
  if (c0 >= C) return;
  float sc[VEC], sh[VEC];
  load_affine<VEC>(affine, C, c0, sc, sh);
  const int64_t stride = int64_t(gridDim.x) * blockDim.y;
  for (int64_t r = int64_t(blockIdx.x) * blockDim.y + threadIdx.y; r < rows; r += stride) {
    float v[VEC];
    load_vec<T, VEC>(x + r * C + c0, v);
#pragma unroll
    for (int i = 0; i < VEC; ++i) {
      const float o = fmaf(sc[i], v[i], sh[i]);
      v[i] = relu ? fmaxf(o, 0.f) : o;
    }
    store_vec<T, VEC>(y + r * C + c0, v);
  }
}

// affine = (gamma * rsqrt(var + eps), beta - mean * scale)
__global__ void bn_fold_kernel(const float* __restrict__ gamma, const float* __restrict__ beta,
                               const float* __restrict__ running, float* __restrict__ affine, int64_t C, float eps) {
  grid_dependency_begin();
  const int64_t ch = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (ch >= C) return;
  const double scale = double(gamma[ch]) / sqrt(double(running[C + ch]) + double(eps));
  affine[ch] = float(scale);
  affine[C + ch] = float(double(beta[ch]) - double(running[ch]) * scale);
}

// ---------------------------------------------------------------- launch helpers

// Note [BN vector width]: 8-byte vectors (4 halves, 2 floats) when C and every
// pointer allow it, else one element per thread. A thread keeps up to seven
// per-channel parameters for each of its channels in registers; with 16-byte
// vectors (8 halves) the backward kernels needed 80-96 registers, which left 2-3
// blocks per SM and too few loads in flight to reach HBM's bandwidth (about 60 %
// of it on the H200). Half the channels per thread, and four rows in flight per
// thread (kRowUnroll), keep more bytes moving.
template <typename T>
constexpr int kBnVec = int(8 / sizeof(T));

// (BnStats keeps 16-byte vectors: channel_stats_cuda.h's stats_vec.)
template <typename T, int v = kBnVec<T>>
int pick_vec(int64_t C, std::initializer_list<const void*> ptrs) {
  if (C % v != 0) return 1;
  for (const void* p : ptrs)
    if (p != nullptr && !aligned_to(p, 16)) return 1;
  return v;
}

void check_activation(const TensorRef& t, const TensorRef& like, const char* op, const char* what) {
  TR_CHECK(t.dtype == like.dtype && t.shape == like.shape, op, ": ", what, " is ", dtype_name(t.dtype),
           t.shape.str(), ", expected ", dtype_name(like.dtype), like.shape.str());
}

}  // namespace

// ---------------------------------------------------------------- launchers

void bn_stats_cuda(const OpCall& c) {
  const char* op = "BnStats";
  check_arity(c, 1, 1, op);
  const TensorRef& x = c.in[0];
  const TensorRef& sums = c.out[0];
  const RowsC rc = rows_c(x, op);
  check_dtype(sums, DType::F32, op, "sums");
  check_numel(sums, 2 * rc.c, op, "sums");
  const GpuHandles& gh = handles_of(c, op);
  dispatch_float(x.dtype, op, [&](auto tag) {
    using T = decltype(tag);
    const RowSource<T> src{x.as<T>(), rc.c};
    if (stats_vec<T>(rc.c, {x.data}) == kVec16<T>)
      launch_channel_stats<kVec16<T>>(c.env, gh, src, rc.rows, rc.c, sums.as<float>(), op);
    else
      launch_channel_stats<1>(c.env, gh, src, rc.rows, rc.c, sums.as<float>(), op);
  });
}

void bn_relu_apply_cuda(const OpCall& c) {
  const char* op = "BnReluApply";
  if (c.n_in == 3) {  // the statistics inside: x, gamma, beta -> y, batch, affine, sums
    check_arity(c, 3, 4, op);
    const TensorRef &x = c.in[0], &gamma = c.in[1], &beta = c.in[2];
    const TensorRef &y = c.out[0], &batch = c.out[1], &affine = c.out[2], &sums = c.out[3];
    const RowsC rc = rows_c(x, op);
    check_bn_train_operands(sums, gamma, beta, batch, affine, x.dtype, rc.c, op);
    check_activation(y, x, op, "y");
    const double inv_count = bn_inv_count(c, x, rc.rows, op);
    const GpuHandles& gh = handles_of(c, op);
    const float eps = attrs_of(c, op).eps;
    const bool relu = attrs_of(c, op).relu;
    bool one_kernel = false;
    dispatch_float(x.dtype, op, [&](auto tag) {
      using T = decltype(tag);
      auto launch = [&](auto vtag) {
        constexpr int V = decltype(vtag)::value;
        return launch_bn_relu_train<V, 4>(c.env, gh, RowSource<T>{x.as<T>(), rc.c}, x.as<T>(), rc.rows, rc.c,
                                          sums.as<float>(), gamma.as<T>(), beta.as<T>(), y.as<T>(),
                                          batch.as<float>(), affine.as<float>(), inv_count, eps, relu, op);
      };
      // BnStats's vector width (the sums' grid), which y must allow too.
      const int vec = stats_vec<T>(rc.c, {x.data});
      if (vec == kVec16<T> && aligned_to(y.data, 16)) one_kernel = launch(std::integral_constant<int, kVec16<T>>{});
      else if (vec == 1) one_kernel = launch(std::integral_constant<int, 1>{});
    });
    if (one_kernel) return;
    // The two ops apart: their own kernels, grids and vector widths.
    const OpCall stats{&x, 1, &sums, 1, c.attrs, c.variant, c.env};
    const TensorRef apply_in[4] = {x, sums, gamma, beta};
    bn_stats_cuda(stats);
    bn_relu_apply_cuda(OpCall{apply_in, 4, c.out, 3, c.attrs, c.variant, c.env});
    return;
  }
  TR_CHECK(c.n_in == 4 || c.n_in == 5, op, ": expected 3, 4 or 5 inputs, got ", c.n_in);
  check_arity(c, c.n_in, 3, op);
  const TensorRef& x = c.in[0];
  const TensorRef& sums = c.in[1];
  const TensorRef& gamma = c.in[2];
  const TensorRef& beta = c.in[3];
  const void* residual = c.n_in == 5 ? c.in[4].data : nullptr;
  if (residual != nullptr) check_activation(c.in[4], x, op, "residual");
  const TensorRef& y = c.out[0];
  const TensorRef& batch = c.out[1];
  const TensorRef& affine = c.out[2];
  const RowsC rc = rows_c(x, op);
  check_bn_train_operands(sums, gamma, beta, batch, affine, x.dtype, rc.c, op);
  check_activation(y, x, op, "y");
  const double inv_count = bn_inv_count(c, x, rc.rows, op);
  const GpuHandles& gh = handles_of(c, op);
  dispatch_float(x.dtype, op, [&](auto tag) {
    using T = decltype(tag);
    const int vec = pick_vec<T>(rc.c, {x.data, y.data, residual});
    const ChannelGrid g = channel_grid(rc.rows, rc.c, vec, sm_count(gh), kApplyBlocksPerSm, kApplyMinRowsPerThread);
    auto launch = [&](auto vtag) {
      constexpr int V = decltype(vtag)::value;
      launch_kernel(c.env, {g.grid, g.block, 0}, bn_relu_apply_kernel<T, V>,
          x.as<T>(), sums.as<float>(), gamma.as<T>(), beta.as<T>(), static_cast<const T*>(residual), y.as<T>(),
          batch.as<float>(), affine.as<float>(), rc.rows, rc.c, inv_count, attrs_of(c, op).eps, attrs_of(c, op).relu);
    };
    if (vec == kBnVec<T>) launch(std::integral_constant<int, kBnVec<T>>{});
    else launch(std::integral_constant<int, 1>{});
  });
}

namespace {

// The backward's inputs that reduce and apply share, checked: dy, affine and
// x at in[0..2], batch at in[3]; x's rows and channels.
RowsC check_bwd_inputs(const OpCall& c, const char* op) {
  const TensorRef& x = c.in[2];
  const RowsC rc = rows_c(x, op);
  check_activation(c.in[0], x, op, "dy");
  check_dtype(c.in[1], DType::F32, op, "affine");
  check_numel(c.in[1], 2 * rc.c, op, "affine");
  check_dtype(c.in[3], DType::F32, op, "batch");
  check_numel(c.in[3], 2 * rc.c, op, "batch");
  return rc;
}

// BnReluBwdReduce's operands (dy, affine, x, batch -> dgamma, dbeta, dsums), checked;
// with the ReLU's gradient in front also y[, b] -> g, all of x's dtype and shape.
RowsC check_bwd_reduce(const OpCall& c, const char* op) {
  TR_CHECK(c.n_in >= 4 && c.n_in <= 6, op, ": expected 4, 5 or 6 inputs, got ", c.n_in);
  check_arity(c, c.n_in, c.n_in == 4 ? 3 : 4, op);
  const RowsC rc = check_bwd_inputs(c, op);
  for (int i = 4; i < c.n_in; ++i) check_activation(c.in[i], c.in[2], op, i == 4 ? "y" : "b");
  if (c.n_in > 4) check_activation(c.out[3], c.in[2], op, "g");
  const DType dt = c.in[2].dtype;
  check_dtype(c.out[0], dt, op, "dgamma");
  check_dtype(c.out[1], dt, op, "dbeta");
  check_numel(c.out[0], rc.c, op, "dgamma");
  check_numel(c.out[1], rc.c, op, "dbeta");
  check_dtype(c.out[2], DType::F32, op, "dsums");
  check_numel(c.out[2], 2 * rc.c, op, "dsums");
  return rc;
}

// BnReluBwdApply's operands (dy, affine, x, batch, gamma, dsums -> dx), checked.
RowsC check_bwd_apply(const OpCall& c, const char* op) {
  check_arity(c, 6, 1, op);
  const RowsC rc = check_bwd_inputs(c, op);
  const TensorRef& x = c.in[2];
  check_activation(c.out[0], x, op, "dx");
  check_dtype(c.in[4], x.dtype, op, "gamma");
  check_numel(c.in[4], rc.c, op, "gamma");
  check_dtype(c.in[5], DType::F32, op, "dsums");
  check_numel(c.in[5], 2 * rc.c, op, "dsums");
  return rc;
}

// The backward's reduce and apply as one cooperative kernel (Note [one kernel
// per BatchNorm]); false when it does not fit or is off, or when the apply's
// vector width would change the reduce's grid (the sums' bits).
bool bwd_in_one_kernel(const OpCall& reduce, const OpCall& apply, const char* op) {
  const RowsC rc = check_bwd_reduce(reduce, op);
  check_bwd_apply(apply, op);
  const GpuHandles& gh = handles_of(apply, op);
  if (!gh.grid_sync_sums) return false;
  const TensorRef &dy = apply.in[0], &affine = apply.in[1], &x = apply.in[2], &batch = apply.in[3];
  const TensorRef &gamma = apply.in[4], &dx = apply.out[0];
  const TensorRef &dgamma = reduce.out[0], &dbeta = reduce.out[1], &dsums = reduce.out[2];
  const double inv_count = bn_inv_count(apply, x, rc.rows, op);
  const float eps = attrs_of(apply, op).eps;
  const bool relu = attrs_of(apply, op).relu;
  bool launched = false;
  dispatch_float(x.dtype, op, [&](auto tag) {
    using T = decltype(tag);
    const int vec = pick_vec<T>(rc.c, {dy.data, x.data});
    if (vec != pick_vec<T>(rc.c, {dy.data, x.data, dx.data})) return;
    const ChannelGrid g = channel_grid(rc.rows, rc.c, vec, sm_count(gh), kReduceBlocksPerSm, kMinRowsPerThread);
    SumOut<T, 2> out;
    out.partial = static_cast<float*>(workspace(gh, sum_partial_bytes<2>(g, rc.c), op));
    out.f32 = dsums.as<float>();
    out.t[0] = dbeta.as<T>();
    out.t[1] = dgamma.as<T>();
    out.grid_sync = g.grid.x > 1;
    auto launch = [&](auto vtag) {
      constexpr int V = decltype(vtag)::value;
      auto* kernel = bn_relu_bwd_kernel<T, V>;
      LaunchShape shape{g.grid, g.block, sum_smem_bytes<2, V>()};
      shape.cooperative = true;
      if (!fits_at_once(kernel, shape, sm_count(gh))) return;
      launch_kernel(apply.env, shape, kernel, dy.as<T>(), affine.as<float>(), x.as<T>(), batch.as<float>(),
                    gamma.as<T>(), dx.as<T>(), rc.rows, rc.c, inv_count, eps, relu, out);
      launched = true;
    };
    if (vec == kBnVec<T>) launch(std::integral_constant<int, kBnVec<T>>{});
    else launch(std::integral_constant<int, 1>{});
  });
  return launched;
}

}  // namespace

void bn_relu_bwd_reduce_cuda(const OpCall& c) {
  const char* op = "BnReluBwdReduce";
  const RowsC rc = check_bwd_reduce(c, op);
  const bool relu_grad_in = c.n_in > 4;
  const TensorRef& dy = c.in[0];
  const TensorRef& affine = c.in[1];
  const TensorRef& x = c.in[2];
  const TensorRef& batch = c.in[3];
  const TensorRef& dgamma = c.out[0];
  const TensorRef& dbeta = c.out[1];
  const TensorRef& dsums = c.out[2];
  const void* y = relu_grad_in ? c.in[4].data : nullptr;
  const void* b = c.n_in == 6 ? c.in[5].data : nullptr;
  void* g_out = relu_grad_in ? c.out[3].data : nullptr;
  const GpuHandles& gh = handles_of(c, op);
  const bool relu = attrs_of(c, op).relu;
  bool launched = false;
  dispatch_float(x.dtype, op, [&](auto tag) {
    using T = decltype(tag);
    // The reduce of g, as the ops apart run it: its vector width, so its grid
    // and the order of its sums; the ReLU's tensors must allow that width too.
    const int vec = pick_vec<T>(rc.c, {relu_grad_in ? g_out : dy.data, x.data});
    if (relu_grad_in && vec != pick_vec<T>(rc.c, {dy.data, x.data, y, b, g_out})) return;
    const ChannelGrid g =
        channel_grid(rc.rows, rc.c, vec, sm_count(gh), kReduceBlocksPerSm, kMinRowsPerThread);
    SumOut<T, 2> out;
    out.partial = static_cast<float*>(workspace(gh, sum_partial_bytes<2>(g, rc.c), op));
    out.f32 = dsums.as<float>();
    out.t[0] = dbeta.as<T>();   // dbeta  = sum g
    out.t[1] = dgamma.as<T>();  // dgamma = sum g * xhat
    ReluGradIn<T> in;
    in.y = static_cast<const T*>(y);
    in.b = static_cast<const T*>(b);
    in.g = static_cast<T*>(g_out);
    auto launch = [&](auto vtag, auto rtag) {
      constexpr int V = decltype(vtag)::value;
      constexpr bool R = decltype(rtag)::value;
      launch_sums(c.env, gh, g, sum_smem_bytes<2, V>(), rc.c, out, bn_relu_bwd_reduce_kernel<T, V, false, R>,
                  bn_relu_bwd_reduce_kernel<T, V, true, R>, dy.as<T>(), affine.as<float>(), x.as<T>(),
                  batch.as<float>(), rc.rows, rc.c, attrs_of(c, op).eps, relu, in);
    };
    auto with_vec = [&](auto rtag) {
      if (vec == kBnVec<T>) launch(std::integral_constant<int, kBnVec<T>>{}, rtag);
      else launch(std::integral_constant<int, 1>{}, rtag);
    };
    if (relu_grad_in) with_vec(std::true_type{});
    else with_vec(std::false_type{});
    launched = true;
  });
  if (launched) return;
  // A width the ReLU's tensors do not allow: ReluBwd, then the reduce of g.
  const TensorRef relu_in[3] = {c.in[0], c.in[4], c.n_in == 6 ? c.in[5] : TensorRef{}};
  relu_bwd_cuda(OpCall{relu_in, c.n_in - 3, &c.out[3], 1, c.attrs, c.variant, c.env});
  const TensorRef reduce_in[4] = {c.out[3], c.in[1], c.in[2], c.in[3]};
  bn_relu_bwd_reduce_cuda(OpCall{reduce_in, 4, c.out, 3, c.attrs, c.variant, c.env});
}

void bn_relu_bwd_apply_cuda(const OpCall& c) {
  const char* op = "BnReluBwdApply";
  if (c.n_in == 5) {  // the reduce inside: dy, affine, x, batch, gamma -> dx, dgamma, dbeta, dsums
    check_arity(c, 5, 4, op);
    const TensorRef reduce_in[4] = {c.in[0], c.in[1], c.in[2], c.in[3]};
    const TensorRef reduce_out[3] = {c.out[1], c.out[2], c.out[3]};
    const TensorRef apply_in[6] = {c.in[0], c.in[1], c.in[2], c.in[3], c.in[4], c.out[3]};
    const OpCall reduce{reduce_in, 4, reduce_out, 3, c.attrs, c.variant, c.env};
    const OpCall apply{apply_in, 6, c.out, 1, c.attrs, c.variant, c.env};
    if (bwd_in_one_kernel(reduce, apply, op)) return;
    bn_relu_bwd_reduce_cuda(reduce);
    bn_relu_bwd_apply_cuda(apply);
    return;
  }
  const RowsC rc = check_bwd_apply(c, op);
  const TensorRef& dy = c.in[0];
  const TensorRef& affine = c.in[1];
  const TensorRef& x = c.in[2];
  const TensorRef& batch = c.in[3];
  const TensorRef& gamma = c.in[4];
  const TensorRef& dsums = c.in[5];
  const TensorRef& dx = c.out[0];
  const double inv_count = bn_inv_count(c, x, rc.rows, op);
  const GpuHandles& gh = handles_of(c, op);
  dispatch_float(x.dtype, op, [&](auto tag) {
    using T = decltype(tag);
    const int vec = pick_vec<T>(rc.c, {dy.data, x.data, dx.data});
    const ChannelGrid g = channel_grid(rc.rows, rc.c, vec, sm_count(gh), kApplyBlocksPerSm, kApplyMinRowsPerThread);
    auto launch = [&](auto vtag) {
      constexpr int V = decltype(vtag)::value;
      launch_kernel(c.env, {g.grid, g.block, 0}, bn_relu_bwd_apply_kernel<T, V>,
          dy.as<T>(), affine.as<float>(), x.as<T>(), batch.as<float>(), gamma.as<T>(), dsums.as<float>(), dx.as<T>(),
          rc.rows, rc.c, inv_count, attrs_of(c, op).eps, attrs_of(c, op).relu);
    };
    if (vec == kBnVec<T>) launch(std::integral_constant<int, kBnVec<T>>{});
    else launch(std::integral_constant<int, 1>{});
  });
}

void bn_relu_infer_cuda(const OpCall& c) {
  const char* op = "BnReluInfer";
  check_arity(c, 2, 1, op);
  const TensorRef& x = c.in[0];
  const TensorRef& affine = c.in[1];
  const TensorRef& y = c.out[0];
  const RowsC rc = rows_c(x, op);
  check_dtype(affine, DType::F32, op, "affine");
  check_numel(affine, 2 * rc.c, op, "affine");
  check_activation(y, x, op, "y");
  const GpuHandles& gh = handles_of(c, op);
  dispatch_float(x.dtype, op, [&](auto tag) {
    using T = decltype(tag);
    const int vec = pick_vec<T>(rc.c, {x.data, y.data});
    const ChannelGrid g = channel_grid(rc.rows, rc.c, vec, sm_count(gh), kApplyBlocksPerSm, kApplyMinRowsPerThread);
    auto launch = [&](auto vtag) {
      constexpr int V = decltype(vtag)::value;
      launch_kernel(c.env, {g.grid, g.block, 0}, bn_relu_infer_kernel<T, V>,
          x.as<T>(), affine.as<float>(), y.as<T>(), rc.rows, rc.c, attrs_of(c, op).relu);
    };
    if (vec == kBnVec<T>) launch(std::integral_constant<int, kBnVec<T>>{});
    else launch(std::integral_constant<int, 1>{});
  });
}

void bn_fold_cuda(const OpCall& c) {
  const char* op = "BnFold";
  check_arity(c, 3, 1, op);
  const TensorRef& gamma = c.in[0];
  const TensorRef& beta = c.in[1];
  const TensorRef& running = c.in[2];
  const TensorRef& affine = c.out[0];
  const int64_t C = gamma.shape.numel();
  for (const TensorRef* t : {&gamma, &beta, &running, &affine}) check_dtype(*t, DType::F32, op, "every tensor");
  check_numel(beta, C, op, "beta");
  check_numel(running, 2 * C, op, "running");
  check_numel(affine, 2 * C, op, "affine");
  launch_kernel(c.env, {unsigned(ceil_div(C, 256)), 256, 0}, bn_fold_kernel,
      gamma.as<float>(), beta.as<float>(), running.as<float>(), affine.as<float>(), C, attrs_of(c, op).eps);
}

}  // namespace tr
