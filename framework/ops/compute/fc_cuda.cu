// Fully connected layer on cuBLAS. Semantics: framework/ops/compute/fc.h. With at most
// kSmallFcMaxOutputs outputs the forward and both gradients run on tr's own
// kernels instead (Note [small fc], fc_small_cuda.h).
//
// Row-major tensors seen by column-major cuBLAS: a row-major [R,C] buffer is a
// column-major [C,R] matrix, i.e. its transpose. So, with x[N,K], w[M,K], y[N,M]
// (N = the rows: numel(x) / K, fc.h):
//   FcFwd:       y^T[M,N]  = w[M,K](=T of the K x M buffer) * x^T[K,N]
//                -> gemm(T, N, m=M, n=N, k=K, A=w lda=K, B=x ldb=K, C=y ldc=M)
//   FcBwdData:   dx^T[K,N] = w^T[K,M] * dy^T[M,N]
//                -> gemm(N, N, m=K, n=N, k=M, A=w lda=K, B=dy ldb=M, C=dx ldc=K)
//   FcBwdWeight: dw^T[K,M] = x^T[K,N] * dy[N,M]
//                -> gemm(N, T, m=K, n=M, k=N, A=x lda=K, B=dy ldb=M, C=dw ldc=K)
// fp32, fp16 and bf16 storage, fp32 compute (CUBLAS_COMPUTE_32F: no TF32, and
// 16-bit split-K reductions kept in fp32). The bias is cuBLASLt's epilogue: fp32
// scale * x w^T + b rounded once to T, as the CPU reference adds it (the CPU
// rounds the f32 product first: one rounding more, in f32 only).
// db is a deterministic column sum (no atomics). (cuBLASLt's BGRADB epilogue,
// which would hand db out of the dw GEMM, runs on the H100 as a reduction
// kernel of its own after the GEMM, and was slower than this one at GPT-2's
// shapes: 0.375 ms a step against 0.356 ms at batch 4, 0.205 ms against 0.174 ms
// for the small GPT, without programmatic launch.) cuBLAS runs on the op's stream
// with the arena workspace set on every call, so it never allocates (launches
// may be captured) and picks the same kernels eagerly and under capture.
//   workspace: cuBLAS uses what GpuHandles offers beyond the op's own scratch
//   (NVIDIA recommends 32 MiB on Hopper; it runs with less). Own scratch:
//   FcBwdWeight with bias: channel_grid(N, M, ...).grid.x * M * 4 bytes
//   (<= 4 * SMs * M * 4), used after the GEMM on the same stream.
#include <climits>

#include "framework/ops/compute/fc.h"
#include "framework/ops/kernels/channel_sums_cuda.h"
#include "framework/ops/kernels/fc_small_cuda.h"
#include "framework/ops/kernels/lt_matmul_cuda.h"
#include "framework/ops/op_signature.h"

namespace tr {
namespace {

using namespace tr::cuda;

// Column-major cuBLAS GEMM, fp32 compute. a/b have dtype ab, c has dtype cdt;
// cuBLAS gets the workspace from ws_offset on (the op's scratch lies before it).
void gemm(const GpuHandles& g, cudaStream_t s, DType ab, DType cdt, cublasOperation_t ta, cublasOperation_t tb,
          int64_t m, int64_t n, int64_t k, float alpha, const void* a, int64_t lda, const void* b, int64_t ldb,
          float beta, void* c, int64_t ldc, size_t ws_offset = 0) {
  for (int64_t v : {m, n, k, lda, ldb, ldc}) TR_CHECK(v >= 0 && v <= INT_MAX, "fc: GEMM dimension ", v, " too large");
  TR_CHECK(g.cublas != nullptr, "fc: no cuBLAS handle in GpuHandles");
  cublasHandle_t h = static_cast<cublasHandle_t>(g.cublas);
  TR_GPU_CHECK(cublasSetStream(h, s));  // resets the workspace: set it after
  void* ws = nullptr;
  size_t ws_bytes = 0;
  if (g.workspace != nullptr && g.workspace_bytes > ws_offset) {
    ws = static_cast<char*>(g.workspace) + ws_offset;
    ws_bytes = g.workspace_bytes - ws_offset;
  }
  TR_GPU_CHECK(cublasSetWorkspace(h, ws, ws_bytes));
  TR_GPU_CHECK(
      cublasSetMathMode(h, cublasMath_t(CUBLAS_DEFAULT_MATH | CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)));
  TR_LIBRARY_LAUNCH(cublasGemmEx(h, ta, tb, int(m), int(n), int(k), &alpha, a, cuda_data_type(ab), int(lda), b,
                                 cuda_data_type(ab), int(ldb), &beta, c, cuda_data_type(cdt), int(ldc),
                                 CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

// y^T[M,N] = alpha * w[M,K] x^T[K,N] + bias[M] (per column of y^T), column-major
// as gemm() sees it, on cuBLASLt with the bias epilogue (lt_matmul_cuda.h).
void gemm_bias(const GpuHandles& g, cudaStream_t s, DType t, int64_t m, int64_t n, int64_t k, float alpha,
               const void* w, const void* x, const void* bias, void* y) {
  LtMatmul mm;
  mm.t = t;
  mm.ta = CUBLAS_OP_T, mm.tb = CUBLAS_OP_N;
  mm.m = m, mm.n = n, mm.k = k, mm.alpha = alpha;
  mm.a = w, mm.lda = k, mm.b = x, mm.ldb = k, mm.d = y, mm.ldd = m;
  mm.epilogue = CUBLASLT_EPILOGUE_BIAS;
  mm.bias = bias;
  lt_matmul(g, s, mm, "fc");
}

// db[M] = sum_n dy[n, :] (per-channel sum over rows, Note [deterministic kernels])
template <typename T, int VEC, bool SYNC = false>
__global__ void col_sum_kernel(const T* __restrict__ dy, int64_t rows, int64_t M, SumOut<T, 1> out) {
  grid_dependency_begin();
  const int64_t g = int64_t(blockIdx.y) * blockDim.x + threadIdx.x;
  const int64_t c0 = g * VEC;
  const bool active = c0 < M;
  float acc[1][VEC];
#pragma unroll
  for (int i = 0; i < VEC; ++i) acc[0][i] = 0.f;
  if (active) {
    const int64_t stride = int64_t(gridDim.x) * blockDim.y;
    for (int64_t r = int64_t(blockIdx.x) * blockDim.y + threadIdx.y; r < rows; r += stride) {
      float v[VEC];
      load_vec<T, VEC>(dy + r * M + c0, v);
#pragma unroll
      for (int i = 0; i < VEC; ++i) acc[0][i] += v[i];
    }
  }
  block_sum_store<T, 1, VEC, VEC, SYNC>(acc, c0, active, M, out);
}

template <typename T>
bool vec_ok(int64_t inner, std::initializer_list<const void*> ptrs) {
  if (inner % kVec16<T> != 0) return false;
  for (const void* p : ptrs)
    if (!aligned_to(p, 16)) return false;
  return true;
}

template <typename T>
void launch_col_sum(const GpuHandles& gh, const T* dy, T* db, int64_t N, int64_t M, const ExecEnv* env,
                    const char* op) {
  const int vec = vec_ok<T>(M, {dy}) ? kVec16<T> : 1;
  const ChannelGrid g = channel_grid(N, M, vec, sm_count(gh), 4, 4);
  SumOut<T, 1> out;
  out.partial = static_cast<float*>(workspace(gh, sum_partial_bytes<1>(g, M), op));
  out.t[0] = db;
  auto run = [&](auto vt) {
    constexpr int V = decltype(vt)::value;
    launch_sums(env, gh, g, sum_smem_bytes<1, V>(), M, out, col_sum_kernel<T, V>, col_sum_kernel<T, V, true>, dy, N, M);
  };
  if (vec == kVec16<T>) run(std::integral_constant<int, kVec16<T>>{});
  else run(std::integral_constant<int, 1>{});
}

struct FcDims {
  int64_t n, k, m;  // rows, features, outputs
};

// The rows of x (or dx) for w's K features (fc.h), checked against y (or dy).
FcDims dims_of(const TensorRef& x, const Shape& w, const TensorRef& y, const char* op) {
  TR_CHECK(w.rank == 2 && w[1] > 0 && x.shape.numel() % w[1] == 0, op, ": x ", x.shape.str(), " and w ", w.str(),
           " do not match");
  const FcDims d{x.shape.numel() / w[1], w[1], w[0]};
  check_numel(y, d.n * d.m, op, "y or dy");
  return d;
}

}  // namespace

void fc_fwd_cuda(const OpCall& c) {
  const char* op = "FcFwd";
  const OpAttrs& a = attrs_of(c, op);
  check_operands(OpKind::FcFwd, c);
  const TensorRef& x = c.in[0];
  const TensorRef& w = c.in[1];
  const TensorRef& y = c.out[0];
  const FcDims d = dims_of(x, w.shape, y, op);
  check_dtype(w, x.dtype, op, "w");
  check_dtype(y, x.dtype, op, "y");
  if (a.has_bias) {
    check_dtype(c.in[2], x.dtype, op, "b");
    check_numel(c.in[2], d.m, op, "b");
  }
  const GpuHandles& gh = handles_of(c, op);
  const cudaStream_t s = stream_of(c);
  if (d.n == 0) return;
  dispatch_float(x.dtype, op, [&](auto tag) {
    using T = decltype(tag);
    if (small_fc(d.m)) {
      launch_small_fc_fwd<T>(c.env, sm_count(gh), x.as<T>(), w.as<T>(), a.has_bias ? c.in[2].as<T>() : nullptr,
                             y.as<T>(), d.n, d.k, d.m, a.scale);
      return;
    }
    if (!a.has_bias) {
      gemm(gh, s, x.dtype, x.dtype, CUBLAS_OP_T, CUBLAS_OP_N, d.m, d.n, d.k, a.scale, w.data, d.k, x.data, d.k, 0.f,
           y.data, d.m);
      return;
    }
    gemm_bias(gh, s, x.dtype, d.m, d.n, d.k, a.scale, w.data, x.data, c.in[2].data, y.data);
  });
}

void fc_bwd_data_cuda(const OpCall& c) {
  const char* op = "FcBwdData";
  const OpAttrs& a = attrs_of(c, op);
  const OpOperands named(OpKind::FcBwdData, c);  // dy, w, x (dx's shape only) -> dx
  const TensorRef& dy = c.in[0];
  const TensorRef& w = c.in[1];
  const TensorRef& dx = c.out[0];
  const FcDims d = dims_of(dx, w.shape, dy, op);
  check_dtype(w, dy.dtype, op, "w");
  check_dtype(dx, dy.dtype, op, "dx");
  const GpuHandles& gh = handles_of(c, op);
  const cudaStream_t s = stream_of(c);
  if (d.n == 0) return;
  dispatch_float(dy.dtype, op, [&](auto tag) {
    using T = decltype(tag);
    if (small_fc(d.m)) {
      launch_small_fc_bwd_data<T>(c.env, sm_count(gh), dy.as<T>(), w.as<T>(), dx.as<T>(), d.n, d.k, d.m, a.scale);
      return;
    }
    gemm(gh, s, dy.dtype, dy.dtype, CUBLAS_OP_N, CUBLAS_OP_N, d.k, d.n, d.m, a.scale, w.data, d.k, dy.data, d.m, 0.f,
         dx.data, d.k);
  });
}

void fc_bwd_weight_cuda(const OpCall& c) {
  const char* op = "FcBwdWeight";
  const OpAttrs& a = attrs_of(c, op);
  check_operands(OpKind::FcBwdWeight, c);
  const TensorRef& x = c.in[0];
  const TensorRef& dy = c.in[1];
  const TensorRef& dw = c.out[0];
  const FcDims d = dims_of(x, dw.shape, dy, op);
  check_dtype(dy, x.dtype, op, "dy");
  check_dtype(dw, x.dtype, op, "dw");
  if (a.has_bias) {
    check_dtype(c.out[1], x.dtype, op, "db");
    check_numel(c.out[1], d.m, op, "db");
  }
  TR_CHECK(d.n > 0, op, ": empty batch");
  const GpuHandles& gh = handles_of(c, op);
  const cudaStream_t s = stream_of(c);
  dispatch_float(x.dtype, op, [&](auto tag) {
    using T = decltype(tag);
    if (small_fc(d.m)) launch_small_fc_bwd_weight<T>(c.env, x.as<T>(), dy.as<T>(), dw.as<T>(), d.n, d.k, d.m, a.scale);
    else
      gemm(gh, s, x.dtype, x.dtype, CUBLAS_OP_N, CUBLAS_OP_T, d.k, d.m, d.n, a.scale, x.data, d.k, dy.data, d.m, 0.f,
           dw.data, d.k);
    if (a.has_bias) launch_col_sum<T>(gh, dy.as<T>(), c.out[1].as<T>(), d.n, d.m, c.env, op);
  });
}

}  // namespace tr
