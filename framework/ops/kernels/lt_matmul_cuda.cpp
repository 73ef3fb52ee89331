// One cuBLASLt GEMM with an epilogue (lt_matmul_cuda.h).
#include "framework/ops/kernels/lt_matmul_cuda.h"

#include <climits>
#include <utility>

#include "framework/core/error.h"

namespace tr::cuda {

cudaDataType_t cuda_data_type(DType t) {
  switch (t) {
    case DType::F16: return CUDA_R_16F;
    case DType::BF16: return CUDA_R_16BF;
    default: return CUDA_R_32F;
  }
}

namespace {

// Descriptors, destroyed with the call.
struct LtDescs {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  LtDescs() = default;
  LtDescs(const LtDescs&) = delete;
  LtDescs& operator=(const LtDescs&) = delete;
  ~LtDescs() {
    if (pref) TR_GPU_WARN(cublasLtMatmulPreferenceDestroy(pref));
    for (cublasLtMatrixLayout_t l : {a, b, d})
      if (l) TR_GPU_WARN(cublasLtMatrixLayoutDestroy(l));
    if (op) TR_GPU_WARN(cublasLtMatmulDescDestroy(op));
  }
};

// The largest power of two up to 256 dividing the address.
uint32_t alignment(const void* p) {
  uint32_t a = 256;
  while (a > 1 && reinterpret_cast<uintptr_t>(p) % a != 0) a /= 2;
  return a;
}

template <typename V>
void set(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t attr, const V& v) {
  TR_GPU_CHECK(cublasLtMatmulDescSetAttribute(d, attr, &v, sizeof(v)));
}

template <typename V>
void prefer(cublasLtMatmulPreference_t p, cublasLtMatmulPreferenceAttributes_t attr, const V& v) {
  TR_GPU_CHECK(cublasLtMatmulPreferenceSetAttribute(p, attr, &v, sizeof(v)));
}

}  // namespace

void lt_matmul(const GpuHandles& g, cudaStream_t s, const LtMatmul& mm, const char* op) {
  for (int64_t v : {mm.m, mm.n, mm.k, mm.lda, mm.ldb, mm.ldd, mm.aux_ld})
    TR_CHECK(v >= 0 && v <= INT_MAX, op, ": GEMM dimension ", v, " too large");
  TR_CHECK(g.cublaslt != nullptr, op, ": no cuBLASLt handle in GpuHandles");
  cublasLtHandle_t lt = static_cast<cublasLtHandle_t>(g.cublaslt);
  const cudaDataType_t dt = cuda_data_type(mm.t);
  LtDescs d;
  TR_GPU_CHECK(cublasLtMatmulDescCreate(&d.op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  set(d.op, CUBLASLT_MATMUL_DESC_TRANSA, mm.ta);
  set(d.op, CUBLASLT_MATMUL_DESC_TRANSB, mm.tb);
  set(d.op, CUBLASLT_MATMUL_DESC_EPILOGUE, mm.epilogue);
  if (mm.bias != nullptr) {
    set(d.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, mm.bias);
    set(d.op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, dt);
  }
  if (mm.aux != nullptr) {
    set(d.op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, mm.aux);
    set(d.op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, mm.aux_ld);
  }
  // Stored shapes: op(a) is m x k, so a is m x k (N) or k x m (T); likewise b.
  const bool at = mm.ta != CUBLAS_OP_N, bt = mm.tb != CUBLAS_OP_N;
  TR_GPU_CHECK(cublasLtMatrixLayoutCreate(&d.a, dt, uint64_t(at ? mm.k : mm.m), uint64_t(at ? mm.m : mm.k), mm.lda));
  TR_GPU_CHECK(cublasLtMatrixLayoutCreate(&d.b, dt, uint64_t(bt ? mm.n : mm.k), uint64_t(bt ? mm.k : mm.n), mm.ldb));
  TR_GPU_CHECK(cublasLtMatrixLayoutCreate(&d.d, dt, uint64_t(mm.m), uint64_t(mm.n), mm.ldd));
  const uint64_t ws_bytes = g.workspace != nullptr ? g.workspace_bytes : 0;
  const uint32_t reductions = CUBLASLT_REDUCTION_SCHEME_NONE | CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
  TR_GPU_CHECK(cublasLtMatmulPreferenceCreate(&d.pref));
  prefer(d.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, ws_bytes);
  prefer(d.pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, reductions);
  const std::pair<cublasLtMatmulPreferenceAttributes_t, const void*> aligned[] = {
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, mm.a},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, mm.b},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, mm.c != nullptr ? mm.c : mm.d},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, mm.d}};
  for (const auto& [attr, p] : aligned) prefer(d.pref, attr, alignment(p));
  cublasLtMatmulHeuristicResult_t best = {};
  int found = 0;
  TR_GPU_CHECK(cublasLtMatmulAlgoGetHeuristic(lt, d.op, d.a, d.b, d.d, d.d, d.pref, 1, &best, &found));
  TR_CHECK(found > 0, op, ": cuBLASLt has no algorithm for a ", dtype_name(mm.t), " [", mm.m, "x", mm.k, "] by [", mm.k,
           "x", mm.n, "] GEMM with epilogue ", int(mm.epilogue));
  // c shares d's layout (d.d): a residual of d's shape; without one, beta = 0 reads nothing.
  const void* c = mm.c != nullptr ? mm.c : mm.d;
  const float beta = mm.c != nullptr ? mm.beta : 0.f;
  TR_LIBRARY_LAUNCH(cublasLtMatmul(lt, d.op, &mm.alpha, mm.a, d.a, mm.b, d.b, &beta, c, d.d, mm.d, d.d, &best.algo,
                                   g.workspace, best.workspaceSize, s));
}

}  // namespace tr::cuda
