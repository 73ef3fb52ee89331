// Causal self-attention for f16 and bf16 on the tensor cores, the forward (attention_tc_cuda.h;
// what the kernels share and how they lay out tiles: attention_tc_tiles_cuda.h).
// A block owns 128 queries of one (sample, head): 4 warps of 32 rows at d = 64, 8
// warps of 16 at d = 128; keys stream through shared memory in tiles of 64.
//   S = Q K^T, an online softmax in f32 (base 2), O += P V with P rounded to E.
#include "framework/ops/compute/attention_tc_tiles_cuda.h"

namespace tr::cuda {
namespace {

using namespace attention_tc;

// ---- forward ----
// W warps of MT m tiles each: a block owns W*16*MT queries. Keys in tiles of 64.
template <int D, int W, int MT>
struct FwdCfg {
  static constexpr int kThreads = W * 32, kRows = W * 16 * MT, kKeys = 64, kPitch = D + kPad;
  // Q [kRows], then K and V [2 buffers][kKeys], pitch kPitch
  static constexpr size_t kSmem = size_t(kRows + 4 * kKeys) * kPitch * 2;  // 16-bit elements
};

template <typename E, int D, int W, int MT>
__global__ void __launch_bounds__(W * 32)
    attention_tc_fwd_kernel(const E* __restrict__ qkv, E* __restrict__ y, float* __restrict__ lse, Geometry g) {
  grid_dependency_begin();
  using Cfg = FwdCfg<D, W, MT>;
  constexpr int P = Cfg::kPitch, Bc = Cfg::kKeys, NT = Cfg::kThreads;
  extern __shared__ __align__(16) unsigned char smem[];
  E* sq = reinterpret_cast<E*>(smem);
  E* sk = sq + Cfg::kRows * P;
  E* sv = sk + 2 * Bc * P;
  // Blocks with the most keys (the last queries) start first.
  const int bh = int(blockIdx.x % unsigned(g.BH));
  const int q0 = (g.tiles - 1 - int(blockIdx.x / unsigned(g.BH))) * Cfg::kRows;
  const int b = bh / g.H, h = bh % g.H;
  const int64_t stride = 3 * int64_t(g.C);
  const E* qb = qkv + int64_t(b) * g.T * stride + h * D;
  const int n_tiles = (min(q0 + Cfg::kRows, g.T) + Bc - 1) / Bc;
  load_rows<Cfg::kRows, D, NT>(sq, qb, stride, q0, g.T);
  load_rows<Bc, D, NT>(sk, qb + g.C, stride, 0, g.T);
  load_rows<Bc, D, NT>(sv, qb + 2 * g.C, stride, 0, g.T);
  cp_async_commit();

  const int warp = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32;
  const int wrow = warp * 16 * MT;  // the warp's first row in the block
  const int row_lo = q0 + wrow, row_hi = row_lo + 16 * MT - 1;
  uint32_t qf[MT][D / 16][4];
  float o[MT][D / 8][4];
  float m[MT][2], l[MT][2];  // rows lane/4 and lane/4 + 8 of each m tile; l: this lane's columns only
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
    for (int nt = 0; nt < D / 8; ++nt) o[mt][nt][0] = o[mt][nt][1] = o[mt][nt][2] = o[mt][nt][3] = 0.f;
    m[mt][0] = m[mt][1] = -INFINITY;
    l[mt][0] = l[mt][1] = 0.f;
  }

  for (int t = 0; t < n_tiles; ++t) {
    const int k0 = t * Bc;
    if (t + 1 < n_tiles) {  // the next tile loads while this one is used
      load_rows<Bc, D, NT>(sk + ((t + 1) & 1) * Bc * P, qb + g.C, stride, k0 + Bc, g.T);
      load_rows<Bc, D, NT>(sv + ((t + 1) & 1) * Bc * P, qb + 2 * g.C, stride, k0 + Bc, g.T);
      cp_async_commit();
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();
    if (t == 0) {
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int kk = 0; kk < D / 16; ++kk) ldsm_x4(qf[mt][kk], sq + (wrow + mt * 16) * P + kk * 16 + off_a<P>(lane));
    }
    if (k0 <= row_hi) {  // else every key of the tile is past the warp's queries
      const E* ks = sk + (t & 1) * Bc * P;
      const E* vs = sv + (t & 1) * Bc * P;
      float s[MT][Bc / 8][4];
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int nt = 0; nt < Bc / 8; ++nt) s[mt][nt][0] = s[mt][nt][1] = s[mt][nt][2] = s[mt][nt][3] = 0.f;
#pragma unroll
      for (int kk = 0; kk < D / 16; ++kk)
#pragma unroll
        for (int np = 0; np < Bc / 16; ++np) {
          uint32_t bk[4];
          ldsm_x4(bk, ks + np * 16 * P + kk * 16 + off_b<P>(lane));
#pragma unroll
          for (int mt = 0; mt < MT; ++mt) {
            mma<E>(s[mt][2 * np], qf[mt][kk], bk[0], bk[1]);
            mma<E>(s[mt][2 * np + 1], qf[mt][kk], bk[2], bk[3]);
          }
        }
      // Online softmax; the row max is shared by the 4 lanes of a quad (shuffles).
      // m is in base-2 units (the max raw score times scale_log2, which is > 0).
      const bool diagonal = k0 + Bc - 1 > row_lo;
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int hf = 0; hf < 2; ++hf) {
          const int i = row_lo + mt * 16 + lane / 4 + 8 * hf;
          float mx = -INFINITY;
#pragma unroll
          for (int nt = 0; nt < Bc / 8; ++nt)
#pragma unroll
            for (int e = 0; e < 2; ++e) {
              if (diagonal && k0 + nt * 8 + 2 * (lane % 4) + e > i) s[mt][nt][2 * hf + e] = -INFINITY;
              mx = fmaxf(mx, s[mt][nt][2 * hf + e]);
            }
          mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
          mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
          // Key 0 is in tile 0 and every row sees it, so m is finite from then on.
          const float m_new = fmaxf(m[mt][hf], mx * g.scale_log2), corr = ex2(m[mt][hf] - m_new);
          m[mt][hf] = m_new;
          float sum = 0.f;
#pragma unroll
          for (int nt = 0; nt < Bc / 8; ++nt)
#pragma unroll
            for (int e = 0; e < 2; ++e) {
              const float p = ex2(fmaf(s[mt][nt][2 * hf + e], g.scale_log2, -m_new));
              s[mt][nt][2 * hf + e] = p;
              sum += p;
            }
          l[mt][hf] = l[mt][hf] * corr + sum;
#pragma unroll
          for (int nt = 0; nt < D / 8; ++nt) o[mt][nt][2 * hf] *= corr, o[mt][nt][2 * hf + 1] *= corr;
        }
        // O += P V, P as E A operands straight from the score accumulators.
#pragma unroll
      for (int kk = 0; kk < Bc / 16; ++kk) {
        uint32_t pa[MT][4];
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) acc_to_a<E>(pa[mt], s[mt][2 * kk], s[mt][2 * kk + 1]);
#pragma unroll
        for (int dp = 0; dp < D / 16; ++dp) {
          uint32_t bv[4];
          ldsm_x4_t(bv, vs + kk * 16 * P + dp * 16 + off_a<P>(lane));
#pragma unroll
          for (int mt = 0; mt < MT; ++mt) {
            mma<E>(o[mt][2 * dp], pa[mt], bv[0], bv[1]);
            mma<E>(o[mt][2 * dp + 1], pa[mt], bv[2], bv[3]);
          }
        }
      }
    }
    __syncthreads();  // the buffer just used is the next iteration's load target
  }

  // y = O / l through the warp's own Q rows (no other warp reads them), then 16-byte stores.
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
    float inv[2];
#pragma unroll
    for (int hf = 0; hf < 2; ++hf) {
      float sum = l[mt][hf];
      sum += __shfl_xor_sync(0xffffffffu, sum, 1);
      sum += __shfl_xor_sync(0xffffffffu, sum, 2);
      inv[hf] = 1.f / sum;
      const int i = row_lo + mt * 16 + lane / 4 + 8 * hf;
      if (lane % 4 == 0 && i < g.T) lse[int64_t(bh) * g.T + i] = m[mt][hf] * kLn2 + logf(sum);
    }
    stage_acc<D, P>(sq + (wrow + mt * 16) * P, o[mt], inv[0], inv[1], lane);
  }
  __syncwarp();
  store_rows<16 * MT, D, P>(y + int64_t(b) * g.T * g.C + h * D, g.C, sq + wrow * P, row_lo, g.T, lane);
}

template <int D, int W, int MT, typename E>
void fwd(const ExecEnv* env, const AttentionTcShape& s, const E* qkv, E* y, float* lse) {
  using Cfg = FwdCfg<D, W, MT>;
  const Geometry g = geometry(s, Cfg::kRows);
  allow_smem(attention_tc_fwd_kernel<E, D, W, MT>, Cfg::kSmem);
  launch_kernel(env, LaunchShape{dim3(unsigned(int64_t(g.tiles) * g.BH)), Cfg::kThreads, Cfg::kSmem},
                attention_tc_fwd_kernel<E, D, W, MT>, qkv, y, lse, g);
}

}  // namespace

bool attention_tc_has_kernel(int64_t d, std::initializer_list<const void*> f16_tensors) {
  if (d != 64 && d != 128) return false;
  for (const void* p : f16_tensors)
    if (!aligned_to(p, 16)) return false;
  return true;
}

template <typename E>
void attention_tc_fwd(const ExecEnv* env, const AttentionTcShape& s, const E* qkv, E* y, float* lse) {
  // d = 64: 4 warps of 32 queries; d = 128: 8 warps of 16 (the registers hold Q
  // and O for the warp's rows). 128 queries a block either way.
  if (s.d == 64) fwd<64, 4, 2>(env, s, qkv, y, lse);
  else if (s.d == 128) fwd<128, 8, 1>(env, s, qkv, y, lse);
  else TR_CHECK(false, "AttentionFwd: no tensor-core kernel for head dim ", s.d);
}

template void attention_tc_fwd<__half>(const ExecEnv*, const AttentionTcShape&, const __half*, __half*, float*);
template void attention_tc_fwd<__nv_bfloat16>(const ExecEnv*, const AttentionTcShape&, const __nv_bfloat16*,
                                              __nv_bfloat16*, float*);

}  // namespace tr::cuda
