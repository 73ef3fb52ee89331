// BatchNorm (+ReLU) CUDA kernels. Semantics: framework/ops/compute/batchnorm.h.
// Reductions follow Note [deterministic kernels] (cuda_kernel_util_cuda.h):
// per-thread sums over a fixed row set, a fixed shared-memory tree, per-block
// partials in the workspace, then added in block order (channel_sums_cuda.h).
//   workspace: channel_grid(...).grid.x * 2 * C * 4 bytes for BnStats and
//   BnReluBwdReduce (<= 4 * SMs * 2 * C * 4), nothing for the others.
#include "framework/ops/compute/batchnorm.h"
#include "framework/ops/compute/relu.h"
#include "framework/ops/kernels/bn_train_cuda.h"
#include "framework/ops/op_signature.h"

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
                                     const T* __restrict__ residual, T* __restrict__ y, float* __restrict__ batch,
                                     float* __restrict__ affine, int64_t rows, int64_t C, double inv_count, float eps,
                                     bool relu) {
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

// The statistics of a BatchNorm on CUDA are f32 (bn_sums_dtype); the rest of
// its operands are checked by bn_operands (batchnorm.h), for both backends.
void require_f32_stats(const BnOperands& o, const char* op) {
  for (auto [t, what] : {std::pair{o.sums, "sums"}, {o.batch, "batch"}, {o.affine, "affine"}, {o.dsums, "dsums"}})
    if (t != nullptr) check_dtype(*t, DType::F32, op, what);
}

BnOperands cuda_operands(OpKind kind, const OpCall& c, const char* op) {
  const BnOperands o = bn_operands(kind, c);
  require_f32_stats(o, op);
  return o;
}

}  // namespace

// ---------------------------------------------------------------- launchers

namespace {

void stats_cuda(const OpCall& c, const BnOperands& o, const char* op) {
  const TensorRef& x = *o.x;
  const TensorRef& sums = *o.sums;
  const RowsC rc = rows_c(x, op);
  const GpuHandles& gh = handles_of(c, op);
  dispatch_float(x.dtype, op, [&](auto tag) {
    using T = decltype(tag);
    const RowSource<T> src{x.as<T>(), rc.c};
    if (stats_vec<T>(rc.c, {x.data}) == kVec16<T>)
      launch_channel_stats<kVec16<T>>(c.env, gh, src, rc.rows, rc.c, sums.as<float>(), op);
    else launch_channel_stats<1>(c.env, gh, src, rc.rows, rc.c, sums.as<float>(), op);
  });
}

// BnReluApply, and BnAddReluApply with its residual.
void apply_cuda(const OpCall& c, const BnOperands& o, const char* op) {
  const TensorRef &x = *o.x, &sums = *o.sums, &gamma = *o.gamma, &beta = *o.beta;
  const TensorRef &y = *o.y, &batch = *o.batch, &affine = *o.affine;
  const void* residual = o.residual != nullptr ? o.residual->data : nullptr;
  const RowsC rc = rows_c(x, op);
  const double inv_count = bn_inv_count(c, x, rc.rows, op);
  const GpuHandles& gh = handles_of(c, op);
  dispatch_float(x.dtype, op, [&](auto tag) {
    using T = decltype(tag);
    const int vec = pick_vec<T>(rc.c, {x.data, y.data, residual});
    const ChannelGrid g = channel_grid(rc.rows, rc.c, vec, sm_count(gh), kApplyBlocksPerSm, kApplyMinRowsPerThread);
    auto launch = [&](auto vtag) {
      constexpr int V = decltype(vtag)::value;
      launch_kernel(c.env, {g.grid, g.block, 0}, bn_relu_apply_kernel<T, V>, x.as<T>(), sums.as<float>(), gamma.as<T>(),
                    beta.as<T>(), static_cast<const T*>(residual), y.as<T>(), batch.as<float>(), affine.as<float>(),
                    rc.rows, rc.c, inv_count, attrs_of(c, op).eps, attrs_of(c, op).relu);
    };
    if (vec == kBnVec<T>) launch(std::integral_constant<int, kBnVec<T>>{});
    else launch(std::integral_constant<int, 1>{});
  });
}

}  // namespace

void bn_stats_cuda(const OpCall& c) { stats_cuda(c, cuda_operands(OpKind::BnStats, c, "BnStats"), "BnStats"); }

void bn_relu_apply_cuda(const OpCall& c) {
  apply_cuda(c, cuda_operands(OpKind::BnReluApply, c, "BnReluApply"), "BnReluApply");
}

void bn_add_relu_apply_cuda(const OpCall& c) {
  apply_cuda(c, cuda_operands(OpKind::BnAddReluApply, c, "BnAddReluApply"), "BnAddReluApply");
}

// The statistics inside: one cooperative kernel where it fits (Note [one
// kernel per BatchNorm]), else BnStats and BnReluApply apart.
void bn_stats_relu_apply_cuda(const OpCall& c) {
  const char* op = "BnStatsReluApply";
  const BnOperands o = cuda_operands(OpKind::BnStatsReluApply, c, op);
  const TensorRef &x = *o.x, &gamma = *o.gamma, &beta = *o.beta;
  const TensorRef &y = *o.y, &batch = *o.batch, &affine = *o.affine, &sums = *o.sums;
  const RowsC rc = rows_c(x, op);
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
                                        sums.as<float>(), gamma.as<T>(), beta.as<T>(), y.as<T>(), batch.as<float>(),
                                        affine.as<float>(), inv_count, eps, relu, op);
    };
    // BnStats's vector width (the sums' grid), which y must allow too.
    const int vec = stats_vec<T>(rc.c, {x.data});
    if (vec == kVec16<T> && aligned_to(y.data, 16)) one_kernel = launch(std::integral_constant<int, kVec16<T>>{});
    else if (vec == 1) one_kernel = launch(std::integral_constant<int, 1>{});
  });
  if (one_kernel) return;
  // The two ops apart: their own kernels, grids and vector widths.
  stats_cuda(c, o, op);
  apply_cuda(c, o, op);
}

namespace {

// The backward's reduce and apply as one cooperative kernel (Note [one kernel
// per BatchNorm]); false when it does not fit or is off, or when the apply's
// vector width would change the reduce's grid (the sums' bits).
bool bwd_in_one_kernel(const OpCall& c, const BnOperands& o, const char* op) {
  const GpuHandles& gh = handles_of(c, op);
  if (!gh.grid_sync_sums) return false;
  const TensorRef &dy = *o.dy, &affine = *o.affine, &x = *o.x, &batch = *o.batch;
  const TensorRef &gamma = *o.gamma, &dx = *o.dx;
  const TensorRef &dgamma = *o.dgamma, &dbeta = *o.dbeta, &dsums = *o.dsums;
  const RowsC rc = rows_c(x, op);
  const double inv_count = bn_inv_count(c, x, rc.rows, op);
  const float eps = attrs_of(c, op).eps;
  const bool relu = attrs_of(c, op).relu;
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
      launch_kernel(c.env, shape, kernel, dy.as<T>(), affine.as<float>(), x.as<T>(), batch.as<float>(), gamma.as<T>(),
                    dx.as<T>(), rc.rows, rc.c, inv_count, eps, relu, out);
      launched = true;
    };
    if (vec == kBnVec<T>) launch(std::integral_constant<int, kBnVec<T>>{});
    else launch(std::integral_constant<int, 1>{});
  });
  return launched;
}

// The reduce of dy, or with the ReLU's gradient in front (o.a set) of
// g = ReluBwd(a, y[, b]), which it also stores. False when the ReLU's tensors
// do not allow the reduce's vector width: nothing was launched.
bool reduce_cuda(const OpCall& c, const BnOperands& o, const char* op) {
  const bool relu_grad_in = o.a != nullptr;
  const TensorRef& dy = relu_grad_in ? *o.a : *o.dy;
  const TensorRef &affine = *o.affine, &x = *o.x, &batch = *o.batch;
  const TensorRef &dgamma = *o.dgamma, &dbeta = *o.dbeta, &dsums = *o.dsums;
  const void* y = relu_grad_in ? o.relu_y->data : nullptr;
  const void* b = o.b != nullptr ? o.b->data : nullptr;
  void* g_out = relu_grad_in ? o.g->data : nullptr;
  const RowsC rc = rows_c(x, op);
  const GpuHandles& gh = handles_of(c, op);
  const bool relu = attrs_of(c, op).relu;
  bool launched = false;
  dispatch_float(x.dtype, op, [&](auto tag) {
    using T = decltype(tag);
    // The reduce of g, as the ops apart run it: its vector width, so its grid
    // and the order of its sums; the ReLU's tensors must allow that width too.
    const int vec = pick_vec<T>(rc.c, {relu_grad_in ? g_out : dy.data, x.data});
    if (relu_grad_in && vec != pick_vec<T>(rc.c, {dy.data, x.data, y, b, g_out})) return;
    const ChannelGrid g = channel_grid(rc.rows, rc.c, vec, sm_count(gh), kReduceBlocksPerSm, kMinRowsPerThread);
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
  return launched;
}

// ReluBwdBnReduce and ReluBwdAddBnReduce (Note [the ReLU's gradient in the
// reduce]): one kernel, or where the ReLU's tensors do not allow the reduce's
// vector width, ReluBwd(Add) and then the reduce of g.
void reduce_with_relu_grad_cuda(const OpCall& c, const BnOperands& o, const char* op) {
  if (reduce_cuda(c, o, op)) return;
  const TensorRef relu_in[3] = {*o.a, *o.relu_y, o.b != nullptr ? *o.b : TensorRef{}};
  const OpCall relu{relu_in, o.b != nullptr ? 3 : 2, o.g, 1, c.attrs, c.variant, c.env};
  if (o.b != nullptr) relu_bwd_add_cuda(relu);
  else relu_bwd_cuda(relu);
  BnOperands reduce = o;
  reduce.dy = o.g;
  reduce.a = reduce.relu_y = reduce.b = reduce.g = nullptr;
  reduce_cuda(c, reduce, op);
}

void bwd_apply_cuda(const OpCall& c, const BnOperands& o, const char* op) {
  const TensorRef &dy = *o.dy, &affine = *o.affine, &x = *o.x, &batch = *o.batch;
  const TensorRef &gamma = *o.gamma, &dsums = *o.dsums, &dx = *o.dx;
  const RowsC rc = rows_c(x, op);
  const double inv_count = bn_inv_count(c, x, rc.rows, op);
  const GpuHandles& gh = handles_of(c, op);
  dispatch_float(x.dtype, op, [&](auto tag) {
    using T = decltype(tag);
    const int vec = pick_vec<T>(rc.c, {dy.data, x.data, dx.data});
    const ChannelGrid g = channel_grid(rc.rows, rc.c, vec, sm_count(gh), kApplyBlocksPerSm, kApplyMinRowsPerThread);
    auto launch = [&](auto vtag) {
      constexpr int V = decltype(vtag)::value;
      launch_kernel(c.env, {g.grid, g.block, 0}, bn_relu_bwd_apply_kernel<T, V>, dy.as<T>(), affine.as<float>(),
                    x.as<T>(), batch.as<float>(), gamma.as<T>(), dsums.as<float>(), dx.as<T>(), rc.rows, rc.c,
                    inv_count, attrs_of(c, op).eps, attrs_of(c, op).relu);
    };
    if (vec == kBnVec<T>) launch(std::integral_constant<int, kBnVec<T>>{});
    else launch(std::integral_constant<int, 1>{});
  });
}

}  // namespace

void bn_relu_bwd_reduce_cuda(const OpCall& c) {
  const char* op = "BnReluBwdReduce";
  const bool launched = reduce_cuda(c, cuda_operands(OpKind::BnReluBwdReduce, c, op), op);
  TR_CHECK(launched, op, ": the reduce launched nothing");
}

void relu_bwd_bn_reduce_cuda(const OpCall& c) {
  const char* op = "ReluBwdBnReduce";
  reduce_with_relu_grad_cuda(c, cuda_operands(OpKind::ReluBwdBnReduce, c, op), op);
}

void relu_bwd_add_bn_reduce_cuda(const OpCall& c) {
  const char* op = "ReluBwdAddBnReduce";
  reduce_with_relu_grad_cuda(c, cuda_operands(OpKind::ReluBwdAddBnReduce, c, op), op);
}

void bn_relu_bwd_apply_cuda(const OpCall& c) {
  const char* op = "BnReluBwdApply";
  bwd_apply_cuda(c, cuda_operands(OpKind::BnReluBwdApply, c, op), op);
}

// The reduce inside: one cooperative kernel where it fits, else the two apart.
void bn_relu_bwd_reduce_apply_cuda(const OpCall& c) {
  const char* op = "BnReluBwdReduceApply";
  const BnOperands o = cuda_operands(OpKind::BnReluBwdReduceApply, c, op);
  if (bwd_in_one_kernel(c, o, op)) return;
  const bool launched = reduce_cuda(c, o, op);
  TR_CHECK(launched, op, ": the reduce launched nothing");
  bwd_apply_cuda(c, o, op);
}

void bn_relu_infer_cuda(const OpCall& c) {
  const char* op = "BnReluInfer";
  const BnOperands o = cuda_operands(OpKind::BnReluInfer, c, op);
  const TensorRef &x = *o.x, &affine = *o.affine, &y = *o.y;
  const RowsC rc = rows_c(x, op);
  const GpuHandles& gh = handles_of(c, op);
  dispatch_float(x.dtype, op, [&](auto tag) {
    using T = decltype(tag);
    const int vec = pick_vec<T>(rc.c, {x.data, y.data});
    const ChannelGrid g = channel_grid(rc.rows, rc.c, vec, sm_count(gh), kApplyBlocksPerSm, kApplyMinRowsPerThread);
    auto launch = [&](auto vtag) {
      constexpr int V = decltype(vtag)::value;
      launch_kernel(c.env, {g.grid, g.block, 0}, bn_relu_infer_kernel<T, V>, x.as<T>(), affine.as<float>(), y.as<T>(),
                    rc.rows, rc.c, attrs_of(c, op).relu);
    };
    if (vec == kBnVec<T>) launch(std::integral_constant<int, kBnVec<T>>{});
    else launch(std::integral_constant<int, 1>{});
  });
}

void bn_fold_cuda(const OpCall& c) {
  const char* op = "BnFold";
  const OpOperands named(OpKind::BnFold, c);
  const TensorRef& gamma = c.in[0];
  const TensorRef& beta = c.in[1];
  const TensorRef& running = c.in[2];
  const TensorRef& affine = c.out[0];
  const int64_t C = gamma.shape.numel();
  for (const TensorRef* t : {&gamma, &beta, &running, &affine}) check_dtype(*t, DType::F32, op, "every tensor");
  check_numel(beta, C, op, "beta");
  check_numel(running, 2 * C, op, "running");
  check_numel(affine, 2 * C, op, "affine");
  launch_kernel(c.env, {unsigned(ceil_div(C, 256)), 256, 0}, bn_fold_kernel, gamma.as<float>(), beta.as<float>(),
                running.as<float>(), affine.as<float>(), C, attrs_of(c, op).eps);
}

}  // namespace tr
