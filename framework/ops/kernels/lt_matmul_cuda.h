#pragma once
// One cuBLASLt GEMM with an epilogue, column-major as cuBLAS sees it:
//   d[m,n] = epilogue(alpha * op(a) op(b) (+ beta * c[m,n]) (+ bias[m]))
// fp32 compute, split-K partial sums kept in fp32 (no reduction in the
// output's type), the operands' own alignment declared (a parameter packed in
// a region may sit at less than the 256 bytes cuBLASLt otherwise assumes), and
// the workspace GpuHandles offers, so it never allocates and may be captured.
// Epilogues used (fc_cuda.cu, fc_gelu_cuda.cu):
//   BIAS           d = acc + bias
//   GELU_AUX(_BIAS) aux = acc (+ bias), d = GELU(aux)          (aux: m x n, leading dim aux_ld)
//   DGELU          d = GELU'(aux) * acc                        (aux as the forward wrote it)
// a, b, c, d, bias and aux all have dtype t; c (when set) has d's shape and leading dimension.
#include <cstdint>

#include "framework/core/dtype.h"
#include "framework/core/gpu_check_cuda.h"
#include "framework/ops/gpu_handles.h"

namespace tr::cuda {

// cuBLAS's name for a tensor's storage type (f16, bf16, else f32).
cudaDataType_t cuda_data_type(DType t);

struct LtMatmul {
  DType t = DType::F32;
  cublasOperation_t ta = CUBLAS_OP_N, tb = CUBLAS_OP_N;
  int64_t m = 0, n = 0, k = 0;
  float alpha = 1.f;
  const void* a = nullptr;
  int64_t lda = 0;
  const void* b = nullptr;
  int64_t ldb = 0;
  void* d = nullptr;
  int64_t ldd = 0;
  const void* c = nullptr;  // beta * c added before the epilogue (a residual); nullptr: none
  float beta = 0.f;
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  const void* bias = nullptr;  // BIAS and *_BIAS epilogues
  void* aux = nullptr;         // GELU_AUX* (written) and DGELU (read)
  int64_t aux_ld = 0;
};

// Runs it on stream s; an Error naming `op` where cuBLASLt has no algorithm for it.
void lt_matmul(const GpuHandles& g, cudaStream_t s, const LtMatmul& mm, const char* op);

}  // namespace tr::cuda
