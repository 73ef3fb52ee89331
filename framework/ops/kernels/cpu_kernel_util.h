#pragma once
// Helpers shared by the CPU reference kernels (framework/ops/*_cpu.cpp):
// storage-dtype dispatch, element load/store, per-thread scratch and GEMM.
//
// Note [CPU storage and accumulation types]
//   Storage S is float (F32), half_t (F16), bf16_t (BF16) or double (F64, tests
//   only). Element arithmetic runs in A = acc_t<S>: double for F64, float
//   otherwise (16-bit types are converted to float on load and rounded once on
//   store). Long reductions
//   (BN sums, bias gradients, loss sums) accumulate in double for every S: the
//   CPU path is the oracle, so it should be the more accurate side.
//   "f32" statistics tensors (BN sums/batch/affine/dsums, metrics) may be F32 or
//   F64 whatever S is; they are tiny, so they go through double buffers.
#include <cblas.h>

#include <cstdint>
#include <type_traits>
#include <vector>

#include "framework/core/bf16.h"
#include "framework/core/error.h"
#include "framework/core/half.h"
#include "framework/ops/op_call.h"

namespace tr::cpu {

template <class S>
using acc_t = std::conditional_t<std::is_same_v<S, double>, double, float>;

template <class S>
struct StorageTag {
  using type = S;
};

// Calls f(StorageTag<S>{}) for the storage type of a float tensor.
template <class F>
void dispatch_float(DType t, const char* op, F&& f) {
  switch (t) {
    case DType::F32: f(StorageTag<float>{}); return;
    case DType::F16: f(StorageTag<half_t>{}); return;
    case DType::BF16: f(StorageTag<bf16_t>{}); return;
    case DType::F64: f(StorageTag<double>{}); return;
    default: break;
  }
  throw_internal(__FILE__, __LINE__, cat(op, ": unsupported dtype ", dtype_name(t)));
}

template <class A, class S>
inline A load(S v) {
  if constexpr (std::is_same_v<S, half_t>) {
    return A(half_to_float(v));
  } else if constexpr (std::is_same_v<S, bf16_t>) {
    return A(bf16_to_float(v));
  } else {
    return A(v);
  }
}

template <class S, class A>
inline S store(A v) {
  if constexpr (std::is_same_v<S, half_t>) {
    return float_to_half(float(v));
  } else if constexpr (std::is_same_v<S, bf16_t>) {
    return float_to_bf16(float(v));
  } else {
    return S(v);
  }
}

template <class S>
constexpr DType dtype_of() {
  if constexpr (std::is_same_v<S, float>) return DType::F32;
  else if constexpr (std::is_same_v<S, half_t>) return DType::F16;
  else if constexpr (std::is_same_v<S, bf16_t>) return DType::BF16;
  else return DType::F64;
}

// Dtype and size checks: a mismatch is a bug in the graph builder (internal).
// Operand counts: check_operands (op_signature.h), from the op table.
inline void check_dtype(const TensorRef& t, DType want, const char* op, const char* what) {
  TR_CHECK(t.dtype == want, op, ": ", what, " is ", dtype_name(t.dtype), ", expected ", dtype_name(want));
}
inline void check_numel(const TensorRef& t, int64_t want, const char* op, const char* what) {
  TR_CHECK(t.shape.numel() == want, op, ": ", what, " has shape ", t.shape.str(), ", expected ", want, " elements");
}

// Per-thread scratch that only grows: no allocation churn on the hot path, and
// ranks running in parallel threads never share it. Slots let one kernel hold
// several buffers at once; a kernel must not use the same (type, slot) twice.
// Convention: slots 0..2 hold compute-type (A) buffers and kDoubleSlot.. hold
// double ones (statistics, reductions). A is double for F64, so keeping the
// ranges apart stops an F64 run from aliasing the two.
constexpr int kDoubleSlot = 3;
template <class A>
A* scratch(int slot, size_t n) {
  constexpr int kSlots = 6;
  thread_local std::vector<A> bufs[kSlots];
  TR_CHECK(slot >= 0 && slot < kSlots, "scratch slot ", slot);
  std::vector<A>& b = bufs[slot];
  if (b.size() < n) b.resize(n);
  return b.data();
}

// Small "f32" tensors (statistics, metrics): F32 or F64 storage, read/written as double.
inline void read_stats(const TensorRef& t, int64_t n, double* dst, const char* op, const char* what) {
  check_numel(t, n, op, what);
  if (t.dtype == DType::F32) {
    const float* p = t.as<float>();
    for (int64_t i = 0; i < n; ++i) dst[i] = p[i];
  } else if (t.dtype == DType::F64) {
    const double* p = t.as<double>();
    for (int64_t i = 0; i < n; ++i) dst[i] = p[i];
  } else {
    throw_internal(__FILE__, __LINE__, cat(op, ": ", what, " must be f32 or f64, got ", dtype_name(t.dtype)));
  }
}
inline void write_stats(const TensorRef& t, int64_t n, const double* src, const char* op, const char* what) {
  check_numel(t, n, op, what);
  if (t.dtype == DType::F32) {
    float* p = t.as<float>();
    for (int64_t i = 0; i < n; ++i) p[i] = float(src[i]);
  } else if (t.dtype == DType::F64) {
    double* p = t.as<double>();
    for (int64_t i = 0; i < n; ++i) p[i] = src[i];
  } else {
    throw_internal(__FILE__, __LINE__, cat(op, ": ", what, " must be f32 or f64, got ", dtype_name(t.dtype)));
  }
}

// Note [batch-invariant CPU GEMMs]
// A BLAS may round a row of C differently with the call's M and the row's place
// in it: OpenBLAS has edge kernels for the rows left over from its tiles, a
// small-matrix path chosen by M*N*K (SkylakeX), and splits M between threads.
// A sample's forward would then depend on the batch around it: 1 rank x B and
// N ranks x B/N (or one batch and the same batch reversed) would differ before
// any reduction, enough to flip a ReLU or a max near a tie. So every GEMM whose
// rows belong to samples (the forward and data gradient of conv and fc) is one
// call per sample (gemm_per_sample; conv_cpu.cpp by its pixel chunks): a
// sample's outputs are the same bits in any batch, at any place, with any
// split over ranks. Only the reductions over samples (weight, bias and
// BatchNorm gradient sums, Note [BatchNorm sums in double]) see the split.

// Row-major C[m,n] = alpha * op(A) op(B) + beta * C. With beta == 0, C is not read.
inline void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
                 const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, int(m), int(n), int(k),
              alpha, a, int(lda), b, int(ldb), beta, c, int(ldc));
}
inline void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, const double* a, int64_t lda,
                 const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, int(m), int(n), int(k),
              alpha, a, int(lda), b, int(ldb), beta, c, int(ldc));
}

// C[N,n] = alpha * A[N,k] op(B) (beta 0), one GEMM call per row of A and C:
// their rows are samples (Note [batch-invariant CPU GEMMs]).
template <class A>
void gemm_per_sample(bool tb, int64_t samples, int64_t n, int64_t k, A alpha, const A* a, int64_t lda, const A* b,
                     int64_t ldb, A* c, int64_t ldc) {
  for (int64_t i = 0; i < samples; ++i)
    gemm(false, tb, 1, n, k, alpha, a + i * lda, lda, b, ldb, A(0), c + i * ldc, ldc);
}

// Converts n stored elements to the compute type. When S == A the source is
// returned as is; otherwise the values land in scratch(slot).
template <class A, class S>
const A* as_compute(const S* src, int64_t n, int slot) {
  if constexpr (std::is_same_v<S, A>) {
    (void)n;
    (void)slot;
    return src;
  } else {
    A* dst = scratch<A>(slot, size_t(n));
    for (int64_t i = 0; i < n; ++i) dst[i] = load<A>(src[i]);
    return dst;
  }
}

template <class S, class A>
void store_n(const A* src, int64_t n, S* dst) {
  for (int64_t i = 0; i < n; ++i) dst[i] = store<S>(src[i]);
}

}  // namespace tr::cpu
