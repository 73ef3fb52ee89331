#pragma once
// What the pool kernels' launchers share (max, average and global pooling):
// their block and grid, and their vectors: every thread owns VEC channels of
// one NHWC position, 16-byte vectors where C and every pointer allow it, else
// one channel at a time. Only included from .cu files.
#include <initializer_list>
#include <type_traits>

#include "framework/ops/kernels/cuda_kernel_util_cuda.h"

namespace tr::cuda {

// The pool kernels' launch: 256 threads a block, a grid-stride loop over at
// most 8 blocks per SM.
constexpr int kPoolThreads = 256;
constexpr int kPoolBlocksPerSm = 8;
inline unsigned pool_grid(int64_t work, int sms) {
  return grid_stride_blocks(work, sms, kPoolThreads, kPoolBlocksPerSm);
}

// Whether 16-byte vectors fit: C a whole number of them and every pointer aligned.
template <typename T>
bool can_vec(int64_t C, std::initializer_list<const void*> ptrs) {
  if (C % kVec16<T> != 0) return false;
  for (const void* p : ptrs)
    if (!aligned_to(p, 16)) return false;
  return true;
}

// Calls f(std::integral_constant<int, VEC>) with the widest usable vector.
template <typename T, typename F>
void with_vec(bool vec, F&& f) {
  if (vec) f(std::integral_constant<int, kVec16<T>>{});
  else f(std::integral_constant<int, 1>{});
}

// An activation's dimensions, [N,H,W,C] checked.
struct Nhwc {
  int64_t n, h, w, c;
};
inline Nhwc nhwc(const TensorRef& t, const char* op, const char* what) {
  TR_CHECK(t.shape.rank == 4, op, ": ", what, " must be [N,H,W,C], got ", t.shape.str());
  return {t.shape[0], t.shape[1], t.shape[2], t.shape[3]};
}

// a must have b's dtype and shape (a gradient and what it is the gradient of).
inline void check_same(const TensorRef& a, const TensorRef& b, const char* op, const char* what) {
  TR_CHECK(a.dtype == b.dtype && a.shape == b.shape, op, ": ", what, " is ", dtype_name(a.dtype), a.shape.str(),
           ", expected ", dtype_name(b.dtype), b.shape.str());
}

}  // namespace tr::cuda
