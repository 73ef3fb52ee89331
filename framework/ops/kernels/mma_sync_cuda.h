#pragma once
// Warp-level tensor-core building blocks shared by the direct convolution
// kernels (*_cuda.cu only): mma.sync m16n8k16 (f16 products, f32 sums),
// ldmatrix from shared memory, and cp.async copies from global to shared memory.
//
// mma.sync m16n8k16 fragments (PTX ISA), lane = 4*g + t:
//   A 16x16 row-major: a0 (row g,   cols 2t..2t+1)  a1 (row g+8, cols 2t..2t+1)
//                      a2 (row g,   cols 2t+8..+9)  a3 (row g+8, cols 2t+8..+9)
//   B 16x8 (k x n):    b0 (k 2t..2t+1, col g)       b1 (k 2t+8..2t+9, col g)
//   C/D 16x8 f32:      d0,d1 (row g, cols 2t, 2t+1) d2,d3 (row g+8, cols 2t, 2t+1)
// each 32-bit register holds two f16, the lower index in the low half.
// ldmatrix.trans of an 8x8 block stored as 8 rows of 8 halves gives lane 4*g + t
// the elements (rows 2t, 2t+1; column g): an A or B fragment of a matrix whose
// reduction index runs down those rows (pixels, in the convolutions).
#include <cuda_fp16.h>

#include <cstdint>

namespace tr::cuda {

__device__ __forceinline__ void mma_16816(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#endif
}

__device__ __forceinline__ uint32_t pack2(__half lo, __half hi) {
  const __half2 h = __halves2half2(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&h);
}

__device__ __forceinline__ unsigned smem_addr(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// Four 8x8 blocks as stored; lane l addresses row l & 7 of block l >> 3, and
// lane 4*g + t receives (row g; columns 2t, 2t+1) of each: with rows = pixels
// and columns = channels, an A fragment of a matrix whose reduction index runs
// along those columns; with rows = output channels, a B fragment.
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const __half* smem_row) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(smem_row)));
#endif
}

// Four 8x8 blocks, transposed; lane l addresses row l & 7 of block l >> 3.
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const __half* smem_row) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(smem_row)));
#endif
}

// Two 8x8 blocks, transposed; lanes 0-15 address them (the others' addresses are ignored).
__device__ __forceinline__ void ldmatrix_x2_trans(uint32_t (&r)[2], const __half* smem_row) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];\n"
               : "=r"(r[0]), "=r"(r[1])
               : "r"(smem_addr(smem_row)));
#endif
}

// 16 bytes global -> shared without passing through registers (both 16-byte aligned).
__device__ __forceinline__ void cp_async_16(void* smem, const void* gmem) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_addr(smem)), "l"(gmem) : "memory");
#endif
}
__device__ __forceinline__ void cp_async_commit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}
// Waits until at most N of this thread's committed groups are still in flight.
template <int N>
__device__ __forceinline__ void cp_async_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
#endif
}

}  // namespace tr::cuda
