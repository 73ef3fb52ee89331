#pragma once
// The CPU all-reduces' arithmetic (Note [fixed summation order]): element i of
// the result is ((v_0 + v_1) + v_2) + ... over the ranks' values in global
// rank order, in the buffer's own type (f32 or f64), then divided by the rank
// count for an average. One function for SharedMemoryComm and ProcessComm, so
// threads and processes give the same bits.
#include <cstdint>
#include <cstring>

#include "framework/core/dtype.h"
#include "framework/core/error.h"

namespace tr {

// The element types the CPU all-reduces carry: f32 (gradients, metrics) and
// f64 (BatchNorm sums, Note [BatchNorm sums in double] in framework/ops/compute/batchnorm.h).
inline void check_cpu_allreduce_dtype(DType t) {
  TR_CHECK(t == DType::F32 || t == DType::F64, "CPU all-reduce supports f32 and f64 buffers, got ", dtype_name(t));
}

// out[i] for i in [lo, hi): the sum over ranks r = 0 .. ranks-1 of value(r, i),
// where value(r, i) reads rank r's element i (a T) from wherever the caller
// keeps it. `out` holds elements of T, unaligned access allowed.
template <class T, class Value>
void sum_in_rank_order(int ranks, int64_t lo, int64_t hi, bool average, Value value, void* out) {
  auto* o = static_cast<unsigned char*>(out);
  for (int64_t i = lo; i < hi; ++i) {
    T s = value(0, i);
    for (int r = 1; r < ranks; ++r) s += value(r, i);
    if (average) s /= static_cast<T>(ranks);
    std::memcpy(o + size_t(i) * sizeof(T), &s, sizeof(T));
  }
}

// Reads element i of a buffer of T (any alignment).
template <class T>
T element_at(const void* base, int64_t i) {
  T v;
  std::memcpy(&v, static_cast<const unsigned char*>(base) + size_t(i) * sizeof(T), sizeof(T));
  return v;
}

// Calls f(T{}) for the all-reduce's element type.
template <class F>
void dispatch_allreduce_dtype(DType t, F&& f) {
  check_cpu_allreduce_dtype(t);
  if (t == DType::F64) {
    f(double{});
  } else {
    f(float{});
  }
}

}  // namespace tr
