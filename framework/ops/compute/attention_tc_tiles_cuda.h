#pragma once
// What the 16-bit tensor-core attention kernels share (attention_tc_fwd_cuda.cu,
// attention_tc_bwd_cuda.cu): their geometry, the PTX of sm_80+ that feeds
// mma.sync.m16n8k16 (cp.async, ldmatrix), the fragment layouts, the tile
// loads and stores, and the one-time raise of a kernel's shared memory.
//
// Each warp owns 16-row slices (m tiles) of one side and streams the other
// side through shared memory in tiles of 64 rows (32 queries in the dk/dv
// kernel), double-buffered with cp.async; 4 warps a block (8 for the forward
// at d = 128), 128 queries a forward block, 64 rows a backward block:
//   forward (per query block): S = Q K^T, online softmax in f32, O += P V;
//   dq, delta (per query block): S = Q K^T, dP = dY V^T, dS = P (dP - delta), dQ += dS K;
//   dk, dv (per key block):      S^T = K Q^T, dP^T = V dY^T, dV += P^T dY, dK += dS^T Q.
// Element type E is __half or __nv_bfloat16 (f16 or bf16 storage, the same
// tiles; only the mma's operand type and the roundings to E differ).
// P and dS are rounded to E only as operands of the second product, as
// flash attention does; scores, softmax statistics, lse, delta and every
// accumulator stay f32. Every output element is summed by one thread (its mma
// accumulator) in key or query order: the same bits on every run, no atomics
// (Note [deterministic kernels]). Scores use base 2: x = s * log2(e) / sqrt(d).
//
// Shared-memory rows are padded by 8 halves (16 bytes), so the 8 rows one
// ldmatrix phase reads fall in different banks. Rows past T are zero-filled:
// their scores are finite and their P V terms are 0 * 0, never 0 * garbage.
// For a valid query the causal mask already hides every key past T.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>
#include <mutex>
#include <set>
#include <type_traits>
#include <utility>

#include "framework/ops/compute/attention_tc_cuda.h"
#include "framework/ops/kernels/cuda_kernel_util_cuda.h"

namespace tr::cuda::attention_tc {

constexpr int kPad = 8;  // halves after each shared-memory row

// Sizes every kernel shares. Row t of head h's q in sample b is at
// qkv + (b*T + t) * 3C + h*d, its k at + C, its v at + 2C; y and dy rows are C apart.
struct Geometry {
  int T = 0, H = 0, C = 0, BH = 0;
  int tiles = 0;           // blocks per (sample, head): ceil(T / rows a block owns)
  float scale = 0.f;       // 1 / sqrt(d)
  float scale_log2 = 0.f;  // log2(e) / sqrt(d): scores in base-2 units
};

// ---- PTX wrappers ----
__device__ __forceinline__ uint32_t smem_addr(const void* p) { return uint32_t(__cvta_generic_to_shared(p)); }

// 16 bytes global -> shared, bypassing L1; zeros when !valid (src is then not read).
__device__ __forceinline__ void cp_async16(void* dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src), "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void cp_async4(void* dst, const void* src, bool valid) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(smem_addr(dst)), "l"(src), "r"(valid ? 4 : 0));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

// Four 8x8 matrices of 16-bit elements; lane L addresses row L%8 of matrix L/8.
__device__ __forceinline__ void ldsm_x4(uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}
__device__ __forceinline__ void ldsm_x4_t(uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}

// c[16x8] += a[16x16] b[16x8], operands of type E. Lane L holds c rows L/4
// (c0, c1) and L/4 + 8 (c2, c3), columns 2(L%4) + {0, 1}.
template <typename E>
__device__ __forceinline__ void mma(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  if constexpr (std::is_same_v<E, __nv_bfloat16>) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

// Two floats rounded to E, lo in the low half.
template <typename E>
__device__ __forceinline__ uint32_t pack2(float lo, float hi) {
  if constexpr (std::is_same_v<E, __nv_bfloat16>) {
    const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&h);
  } else {
    const __half2 h = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&h);
  }
}

// A 16x16 block of a row-major tile with pitch P, at its top left corner:
// the lane's ldmatrix address offset.
//   off_a: matrices (r0-7, c0-7) (r8-15, c0-7) (r0-7, c8-15) (r8-15, c8-15): the
//     A operand of rows x k, or with .trans the B operand of a [k][n] tile
//     (registers 0,1 = n tile 0; 2,3 = n tile 1).
//   off_b: (r0-7, c0-7) (r0-7, c8-15) (r8-15, c0-7) (r8-15, c8-15): the B
//     operand of an [n][k] tile (K for Q K^T), registers 0,1 = n tile 0; 2,3 = n tile 1.
template <int P>
__device__ __forceinline__ int off_a(int lane) {
  return (lane & 15) * P + (lane >> 4) * 8;
}
template <int P>
__device__ __forceinline__ int off_b(int lane) {
  return ((lane & 7) + (lane >> 4) * 8) * P + ((lane >> 3) & 1) * 8;
}

// The A operand (16 rows x 16 k) made of two adjacent n tiles of an f32 accumulator (k = 16 kk ..).
// The two E in a 32-bit word as floats (lo in x).
template <typename E>
__device__ __forceinline__ float2 unpack2(uint32_t w) {
  if constexpr (std::is_same_v<E, __nv_bfloat16>)
    return __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&w));
  else return __half22float2(*reinterpret_cast<const __half2*>(&w));
}

template <typename E>
__device__ __forceinline__ void acc_to_a(uint32_t (&a)[4], const float (&lo)[4], const float (&hi)[4]) {
  a[0] = pack2<E>(lo[0], lo[1]);
  a[1] = pack2<E>(lo[2], lo[3]);
  a[2] = pack2<E>(hi[0], hi[1]);
  a[3] = pack2<E>(hi[2], hi[3]);
}

// A warp's A operands for its 16 rows over the head dim (D/16 blocks of 16 columns),
// kept in registers when KEEP (else the kernel reads them from shared memory at each use).
template <int D, bool KEEP>
struct RowFrags {
  uint32_t r[D / 16][4];
  template <int P, typename E>
  __device__ __forceinline__ void load(const E* rows, int lane) {
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) ldsm_x4(r[kk], rows + kk * 16 + off_a<P>(lane));
  }
  template <int P, typename E>
  __device__ __forceinline__ void get(uint32_t (&a)[4], const E*, int kk, int) const {
#pragma unroll
    for (int e = 0; e < 4; ++e) a[e] = r[kk][e];
  }
};
template <int D>
struct RowFrags<D, false> {
  template <int P, typename E>
  __device__ __forceinline__ void load(const E*, int) {}
  template <int P, typename E>
  __device__ __forceinline__ void get(uint32_t (&a)[4], const E* rows, int kk, int lane) const {
    ldsm_x4(a, rows + kk * 16 + off_a<P>(lane));
  }
};

// Rows first .. first+R-1 of a D-wide slice (rows `stride` apart) into a pitch-(D+kPad)
// tile with cp.async; rows at or past T are zeros.
template <int R, int D, int NT, typename E>
__device__ __forceinline__ void load_rows(E* dst, const E* src, int64_t stride, int first, int T) {
  constexpr int kChunks = D / 8;  // 16-byte pieces per row
#pragma unroll
  for (int idx = threadIdx.x; idx < R * kChunks; idx += NT) {
    const int r = idx / kChunks, c = idx % kChunks * 8;
    const bool valid = first + r < T;
    cp_async16(dst + r * (D + kPad) + c, src + (valid ? int64_t(first + r) * stride + c : 0), valid);
  }
}

// A warp's finished rows (staged in shared memory, pitch P) out to global rows
// `stride` apart, 16 bytes per lane; rows at or past T are dropped.
template <int ROWS, int D, int P, typename E>
__device__ __forceinline__ void store_rows(E* dst, int64_t stride, const E* src, int first, int T, int lane) {
#pragma unroll
  for (int idx = lane; idx < ROWS * (D / 8); idx += 32) {
    const int r = idx / (D / 8), c = idx % (D / 8) * 8;
    if (first + r < T)
      *reinterpret_cast<uint4*>(dst + int64_t(first + r) * stride + c) =
          *reinterpret_cast<const uint4*>(src + r * P + c);
  }
}

// A warp's f32 accumulator rows (16 per m tile, D columns) times mul, as E into its
// staging rows of shared memory (pitch P).
template <int D, int P, typename E>
__device__ __forceinline__ void stage_acc(E* dst, const float (&acc)[D / 8][4], float mul0, float mul1, int lane) {
  const int r = lane / 4, c = 2 * (lane % 4);
#pragma unroll
  for (int nt = 0; nt < D / 8; ++nt) {
    *reinterpret_cast<uint32_t*>(dst + r * P + nt * 8 + c) = pack2<E>(acc[nt][0] * mul0, acc[nt][1] * mul0);
    *reinterpret_cast<uint32_t*>(dst + (r + 8) * P + nt * 8 + c) = pack2<E>(acc[nt][2] * mul1, acc[nt][3] * mul1);
  }
}

// ---- launch ----
// Raises a kernel's dynamic shared-memory limit once per device (a host call, no
// stream work: safe while a stream is being captured).
template <typename... Params>
void allow_smem(void (*kernel)(Params...), size_t bytes) {
  static std::mutex mu;
  static std::set<std::pair<int, const void*>> done;
  int device = 0;
  TR_GPU_CHECK(cudaGetDevice(&device));
  std::lock_guard<std::mutex> lock(mu);
  const auto key = std::make_pair(device, reinterpret_cast<const void*>(kernel));
  if (done.count(key) != 0) return;
  TR_GPU_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)));
  done.insert(key);
}

inline Geometry geometry(const AttentionTcShape& s, int rows_per_block) {
  Geometry g;
  g.T = s.T;
  g.H = s.H;
  g.C = s.H * s.d;
  g.BH = s.B * s.H;
  g.tiles = int(ceil_div(s.T, rows_per_block));
  g.scale = float(1.0 / std::sqrt(double(s.d)));
  g.scale_log2 = float(1.4426950408889634 / std::sqrt(double(s.d)));
  return g;
}

}  // namespace tr::cuda::attention_tc
