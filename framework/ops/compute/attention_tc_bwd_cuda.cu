// Causal self-attention for f16 and bf16 on the tensor cores, the backward (attention_tc_cuda.h;
// what the kernels share and how they lay out tiles: attention_tc_tiles_cuda.h).
// Two kernels, so that no sum is shared between blocks (no atomics):
//   dq, delta (per block of 64 queries): S = Q K^T, dP = dY V^T, dS = P (dP - delta), dQ += dS K;
//   dk, dv (per block of 64 keys, queries from the diagonal on, 32 a step):
//     S^T = K Q^T, dP^T = V dY^T, dV += P^T dY, dK += dS^T Q.
// P and dS are rounded to E only as operands of the second products.
#include "framework/ops/compute/attention_tc_tiles_cuda.h"

namespace tr::cuda {
namespace {

using namespace attention_tc;

// ---- backward: dq and delta, per query block ----
// W warps of 16 queries; keys in tiles of 64. The kernel's AR: the warp's Q and dY
// operands in registers (else read from shared memory at each key tile).
template <int D, int W>
struct DqCfg {
  static constexpr int kThreads = W * 32, kRows = W * 16, kKeys = 64, kPitch = D + kPad;
  // Q, dY [kRows], K, V [2][kKeys] (pitch kPitch), then lse*log2(e) and delta f32 [kRows]
  static constexpr size_t kSmem =
      size_t(2 * kRows + 4 * kKeys) * kPitch * 2 /* 16-bit elements */ + 2 * kRows * sizeof(float);
};

template <typename E, int D, int W, bool AR>
__global__ void __launch_bounds__(W * 32)
    attention_tc_dq_kernel(const E* __restrict__ dy, const E* __restrict__ qkv, const E* __restrict__ y,
                           const float* __restrict__ lse, E* __restrict__ dqkv, float* __restrict__ delta, Geometry g) {
  grid_dependency_begin();
  using Cfg = DqCfg<D, W>;
  constexpr int P = Cfg::kPitch, Br = Cfg::kRows, Bc = Cfg::kKeys, NT = Cfg::kThreads;
  extern __shared__ __align__(16) unsigned char smem[];
  E* sq = reinterpret_cast<E*>(smem);
  E* sdy = sq + Br * P;
  E* sk = sdy + Br * P;
  E* sv = sk + 2 * Bc * P;
  float* slse = reinterpret_cast<float*>(sv + 2 * Bc * P);
  float* sdelta = slse + Br;
  const int bh = int(blockIdx.x % unsigned(g.BH));
  const int q0 = (g.tiles - 1 - int(blockIdx.x / unsigned(g.BH))) * Br;
  const int b = bh / g.H, h = bh % g.H;
  const int64_t stride = 3 * int64_t(g.C), y_off = int64_t(b) * g.T * g.C + h * D;
  const E* qb = qkv + int64_t(b) * g.T * stride + h * D;
  const int n_tiles = (min(q0 + Br, g.T) + Bc - 1) / Bc;
  load_rows<Br, D, NT>(sq, qb, stride, q0, g.T);
  load_rows<Br, D, NT>(sdy, dy + y_off, g.C, q0, g.T);
  load_rows<Bc, D, NT>(sk, qb + g.C, stride, 0, g.T);
  load_rows<Bc, D, NT>(sv, qb + 2 * g.C, stride, 0, g.T);
  cp_async_commit();

  {  // delta = dy . y: two threads per query, each half the head dim in order, then the pair's sum.
    const int r = int(threadIdx.x) / 2, part = int(threadIdx.x) % 2, i = q0 + r;
    float dl = 0.f;
    if (i < g.T) {
      const E* dyr = dy + y_off + int64_t(i) * g.C + part * (D / 2);
      const E* yr = y + y_off + int64_t(i) * g.C + part * (D / 2);
#pragma unroll
      for (int c = 0; c < D / 2; c += 8) {
        const uint4 a = *reinterpret_cast<const uint4*>(dyr + c), w = *reinterpret_cast<const uint4*>(yr + c);
        const uint32_t* a2 = reinterpret_cast<const uint32_t*>(&a);
        const uint32_t* w2 = reinterpret_cast<const uint32_t*>(&w);
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const float2 fa = unpack2<E>(a2[e]), fw = unpack2<E>(w2[e]);
          dl += fa.x * fw.x;
          dl += fa.y * fw.y;
        }
      }
    }
    dl += __shfl_xor_sync(0xffffffffu, dl, 1);
    if (part == 0) {
      sdelta[r] = dl;
      slse[r] = i < g.T ? lse[int64_t(bh) * g.T + i] * kLog2e : 0.f;
      if (i < g.T) delta[int64_t(bh) * g.T + i] = dl;
    }
  }

  const int warp = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32;
  const int wrow = warp * 16;
  const int row_lo = q0 + wrow, row_hi = row_lo + 15;
  float lse2[2] = {0.f, 0.f}, dl[2] = {0.f, 0.f};  // rows lane/4 and lane/4 + 8
  RowFrags<D, AR> qf, df;
  float dq[D / 8][4];
#pragma unroll
  for (int nt = 0; nt < D / 8; ++nt) dq[nt][0] = dq[nt][1] = dq[nt][2] = dq[nt][3] = 0.f;

  for (int t = 0; t < n_tiles; ++t) {
    const int k0 = t * Bc;
    if (t + 1 < n_tiles) {
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
      for (int hf = 0; hf < 2; ++hf)
        lse2[hf] = slse[wrow + lane / 4 + 8 * hf], dl[hf] = sdelta[wrow + lane / 4 + 8 * hf];
      qf.template load<P>(sq + wrow * P, lane);
      df.template load<P>(sdy + wrow * P, lane);
    }
    if (k0 <= row_hi) {
      const E* ks = sk + (t & 1) * Bc * P;
      const E* vs = sv + (t & 1) * Bc * P;
      float s[Bc / 8][4], dp[Bc / 8][4];
#pragma unroll
      for (int nt = 0; nt < Bc / 8; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) s[nt][e] = dp[nt][e] = 0.f;
#pragma unroll
      for (int kk = 0; kk < D / 16; ++kk) {
        uint32_t qa[4], da[4];
        qf.template get<P>(qa, sq + wrow * P, kk, lane);
        df.template get<P>(da, sdy + wrow * P, kk, lane);
#pragma unroll
        for (int np = 0; np < Bc / 16; ++np) {
          uint32_t bk[4], bv[4];
          ldsm_x4(bk, ks + np * 16 * P + kk * 16 + off_b<P>(lane));
          ldsm_x4(bv, vs + np * 16 * P + kk * 16 + off_b<P>(lane));
          mma<E>(s[2 * np], qa, bk[0], bk[1]);
          mma<E>(s[2 * np + 1], qa, bk[2], bk[3]);
          mma<E>(dp[2 * np], da, bv[0], bv[1]);
          mma<E>(dp[2 * np + 1], da, bv[2], bv[3]);
        }
      }
      // ds = p (dp - delta), with p = exp(s - lse) and 0 past the diagonal; kept in s.
      const bool diagonal = k0 + Bc - 1 > row_lo;
#pragma unroll
      for (int nt = 0; nt < Bc / 8; ++nt)
#pragma unroll
        for (int hf = 0; hf < 2; ++hf)
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            const int i = row_lo + lane / 4 + 8 * hf, j = k0 + nt * 8 + 2 * (lane % 4) + e;
            const float p = diagonal && j > i ? 0.f : ex2(fmaf(s[nt][2 * hf + e], g.scale_log2, -lse2[hf]));
            s[nt][2 * hf + e] = p * (dp[nt][2 * hf + e] - dl[hf]);
          }
          // dQ += dS K: K as the B operand [key][dim], transposed by ldmatrix.
#pragma unroll
      for (int kk = 0; kk < Bc / 16; ++kk) {
        uint32_t a[4];
        acc_to_a<E>(a, s[2 * kk], s[2 * kk + 1]);
#pragma unroll
        for (int dd = 0; dd < D / 16; ++dd) {
          uint32_t bk[4];
          ldsm_x4_t(bk, ks + kk * 16 * P + dd * 16 + off_a<P>(lane));
          mma<E>(dq[2 * dd], a, bk[0], bk[1]);
          mma<E>(dq[2 * dd + 1], a, bk[2], bk[3]);
        }
      }
    }
    __syncthreads();
  }
  // dq / sqrt(d) through the warp's own Q rows.
  stage_acc<D, P>(sq + wrow * P, dq, g.scale, g.scale, lane);
  __syncwarp();
  store_rows<16, D, P>(dqkv + int64_t(b) * g.T * stride + h * D, stride, sq + wrow * P, row_lo, g.T, lane);
}

// ---- backward: dk and dv, per key block ----
// W warps of 16 keys; queries from the diagonal on, in tiles of BQ (32 keeps two d-wide
// accumulators and two score tiles within the registers at d = 128). The kernel's AR:
// the warp's K and V operands in registers.
template <int D, int W, int BQ>
struct DkvCfg {
  static constexpr int kThreads = W * 32, kKeys = W * 16, kQ = BQ, kPitch = D + kPad;
  static_assert(2 * kQ <= kThreads && kKeys % kQ == 0, "lse and delta take one thread each; tiles align");
  // K, V [kKeys], Q, dY [2][kQ] (pitch kPitch), then lse and delta f32 [2][kQ]
  static constexpr size_t kSmem =
      size_t(2 * kKeys + 4 * kQ) * kPitch * 2 /* 16-bit elements */ + 4 * kQ * sizeof(float);
};

template <typename E, int D, int W, int BQ, bool AR>
__global__ void __launch_bounds__(W * 32)
    attention_tc_dkv_kernel(const E* __restrict__ dy, const E* __restrict__ qkv, const float* __restrict__ lse,
                            const float* __restrict__ delta, E* __restrict__ dqkv, Geometry g) {
  grid_dependency_begin();
  using Cfg = DkvCfg<D, W, BQ>;
  constexpr int P = Cfg::kPitch, Bk = Cfg::kKeys, Bq = Cfg::kQ, NT = Cfg::kThreads;
  extern __shared__ __align__(16) unsigned char smem[];
  E* sk = reinterpret_cast<E*>(smem);
  E* sv = sk + Bk * P;
  E* sq = sv + Bk * P;                                       // [2][Bq]
  E* sdy = sq + 2 * Bq * P;                                  // [2][Bq]
  float* slse = reinterpret_cast<float*>(sdy + 2 * Bq * P);  // [2][Bq]
  float* sdelta = slse + 2 * Bq;                             // [2][Bq]
  // Blocks with the most queries (the first keys) start first.
  const int bh = int(blockIdx.x % unsigned(g.BH));
  const int k0 = int(blockIdx.x / unsigned(g.BH)) * Bk;
  const int b = bh / g.H, h = bh % g.H;
  const int64_t stride = 3 * int64_t(g.C), row = int64_t(bh) * g.T;
  const E* qb = qkv + int64_t(b) * g.T * stride + h * D;
  const E* dyb = dy + int64_t(b) * g.T * g.C + h * D;
  const int n_tiles = (g.T - k0 + Bq - 1) / Bq;
  // Query tile t (first query k0 + t*Bq) into buffer t % 2, with its lse and delta.
  auto load_queries = [&](int t) {
    const int first = k0 + t * Bq, buf = t & 1;
    load_rows<Bq, D, NT>(sq + buf * Bq * P, qb, stride, first, g.T);
    load_rows<Bq, D, NT>(sdy + buf * Bq * P, dyb, g.C, first, g.T);
    const int x = int(threadIdx.x);
    if (x < 2 * Bq) {
      const int r = x % Bq, i = first + r;
      const float* src = x < Bq ? lse : delta;
      float* dst = (x < Bq ? slse : sdelta) + buf * Bq + r;
      cp_async4(dst, src + (i < g.T ? row + i : 0), i < g.T);
    }
  };
  load_rows<Bk, D, NT>(sk, qb + g.C, stride, k0, g.T);
  load_rows<Bk, D, NT>(sv, qb + 2 * g.C, stride, k0, g.T);
  load_queries(0);
  cp_async_commit();

  const int warp = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32;
  const int wrow = warp * 16;
  const int key_lo = k0 + wrow, key_hi = key_lo + 15;
  float dk[D / 8][4], dv[D / 8][4];
  RowFrags<D, AR> kf, vf;
#pragma unroll
  for (int nt = 0; nt < D / 8; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e) dk[nt][e] = dv[nt][e] = 0.f;

  for (int t = 0; t < n_tiles; ++t) {
    const int qt0 = k0 + t * Bq;
    if (t + 1 < n_tiles) {
      load_queries(t + 1);
      cp_async_commit();
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();
    if (t == 0) kf.template load<P>(sk + wrow * P, lane), vf.template load<P>(sv + wrow * P, lane);
    if (qt0 + Bq - 1 >= key_lo) {  // else every query of the tile is before the warp's keys
      const int buf = t & 1;
      const E* qs = sq + buf * Bq * P;
      const E* dys = sdy + buf * Bq * P;
      float s[Bq / 8][4], dp[Bq / 8][4];
#pragma unroll
      for (int nt = 0; nt < Bq / 8; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) s[nt][e] = dp[nt][e] = 0.f;
#pragma unroll
      for (int kk = 0; kk < D / 16; ++kk) {
        uint32_t ka[4], va[4];
        kf.template get<P>(ka, sk + wrow * P, kk, lane);
        vf.template get<P>(va, sv + wrow * P, kk, lane);
#pragma unroll
        for (int np = 0; np < Bq / 16; ++np) {
          uint32_t bq[4], bd[4];
          ldsm_x4(bq, qs + np * 16 * P + kk * 16 + off_b<P>(lane));
          ldsm_x4(bd, dys + np * 16 * P + kk * 16 + off_b<P>(lane));
          mma<E>(s[2 * np], ka, bq[0], bq[1]);
          mma<E>(s[2 * np + 1], ka, bq[2], bq[3]);
          mma<E>(dp[2 * np], va, bd[0], bd[1]);
          mma<E>(dp[2 * np + 1], va, bd[2], bd[3]);
        }
      }
      // Row = key j, column = query i: p = exp(s - lse_i), 0 where i < j or i >= T;
      // p stays in s (for dV), ds = p (dp - delta_i) replaces dp (for dK).
      const bool edge = qt0 < key_hi || qt0 + Bq > g.T;
      const float* ls = slse + buf * Bq;
      const float* ds_ = sdelta + buf * Bq;
#pragma unroll
      for (int nt = 0; nt < Bq / 8; ++nt)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int c = nt * 8 + 2 * (lane % 4) + e, i = qt0 + c;
          const float lse2 = ls[c] * kLog2e, dl = ds_[c];
#pragma unroll
          for (int hf = 0; hf < 2; ++hf) {
            const int j = key_lo + lane / 4 + 8 * hf;
            const float p = edge && (i < j || i >= g.T) ? 0.f : ex2(fmaf(s[nt][2 * hf + e], g.scale_log2, -lse2));
            s[nt][2 * hf + e] = p;
            dp[nt][2 * hf + e] = p * (dp[nt][2 * hf + e] - dl);
          }
        }
        // dV += P^T dY and dK += dS^T Q: dY and Q as B operands [query][dim], transposed by ldmatrix.
#pragma unroll
      for (int kk = 0; kk < Bq / 16; ++kk) {
        uint32_t pa[4], sa[4];
        acc_to_a<E>(pa, s[2 * kk], s[2 * kk + 1]);
        acc_to_a<E>(sa, dp[2 * kk], dp[2 * kk + 1]);
#pragma unroll
        for (int dd = 0; dd < D / 16; ++dd) {
          uint32_t bd[4], bq[4];
          ldsm_x4_t(bd, dys + kk * 16 * P + dd * 16 + off_a<P>(lane));
          ldsm_x4_t(bq, qs + kk * 16 * P + dd * 16 + off_a<P>(lane));
          mma<E>(dv[2 * dd], pa, bd[0], bd[1]);
          mma<E>(dv[2 * dd + 1], pa, bd[2], bd[3]);
          mma<E>(dk[2 * dd], sa, bq[0], bq[1]);
          mma<E>(dk[2 * dd + 1], sa, bq[2], bq[3]);
        }
      }
    }
    __syncthreads();
  }
  // dk / sqrt(d) and dv through the warp's own K and V rows.
  stage_acc<D, P>(sk + wrow * P, dk, g.scale, g.scale, lane);
  stage_acc<D, P>(sv + wrow * P, dv, 1.f, 1.f, lane);
  __syncwarp();
  E* out = dqkv + int64_t(b) * g.T * stride + h * D;
  store_rows<16, D, P>(out + g.C, stride, sk + wrow * P, key_lo, g.T, lane);
  store_rows<16, D, P>(out + 2 * g.C, stride, sv + wrow * P, key_lo, g.T, lane);
}

template <int D, int WQ, bool AR, typename E>
void bwd_dq(const ExecEnv* env, const AttentionTcShape& s, const E* dy, const E* qkv, const E* y, const float* lse,
            E* dqkv, float* delta) {
  using Cfg = DqCfg<D, WQ>;
  const Geometry g = geometry(s, Cfg::kRows);
  allow_smem(attention_tc_dq_kernel<E, D, WQ, AR>, Cfg::kSmem);
  launch_kernel(env, LaunchShape{dim3(unsigned(int64_t(g.tiles) * g.BH)), Cfg::kThreads, Cfg::kSmem},
                attention_tc_dq_kernel<E, D, WQ, AR>, dy, qkv, y, lse, dqkv, delta, g);
}

template <int D, int WK, int BQ, bool AR, typename E>
void bwd_dkv(const ExecEnv* env, const AttentionTcShape& s, const E* dy, const E* qkv, const float* lse,
             const float* delta, E* dqkv) {
  using Cfg = DkvCfg<D, WK, BQ>;
  const Geometry g = geometry(s, Cfg::kKeys);
  allow_smem(attention_tc_dkv_kernel<E, D, WK, BQ, AR>, Cfg::kSmem);
  launch_kernel(env, LaunchShape{dim3(unsigned(int64_t(g.tiles) * g.BH)), Cfg::kThreads, Cfg::kSmem},
                attention_tc_dkv_kernel<E, D, WK, BQ, AR>, dy, qkv, lse, delta, dqkv, g);
}

}  // namespace

template <typename E>
void attention_tc_bwd(const ExecEnv* env, const AttentionTcShape& s, const E* dy, const E* qkv, const E* y,
                      const float* lse, E* dqkv, float* delta) {
  // 4 warps of 16 rows in both kernels, 32 queries a step in the dk/dv kernel. The
  // warp's own operands (Q and dY; K and V) stay in registers where they fit
  // (measured on an H100 by experiments/attention_f16_probe.cu).
  if (s.d == 64) {
    bwd_dq<64, 4, true>(env, s, dy, qkv, y, lse, dqkv, delta);
    bwd_dkv<64, 4, 32, true>(env, s, dy, qkv, lse, delta, dqkv);
  } else if (s.d == 128) {
    bwd_dq<128, 4, true>(env, s, dy, qkv, y, lse, dqkv, delta);
    bwd_dkv<128, 4, 32, false>(env, s, dy, qkv, lse, delta, dqkv);
  } else {
    TR_CHECK(false, "AttentionBwd: no tensor-core kernel for head dim ", s.d);
  }
}

template void attention_tc_bwd<__half>(const ExecEnv*, const AttentionTcShape&, const __half*, const __half*,
                                       const __half*, const float*, __half*, float*);
template void attention_tc_bwd<__nv_bfloat16>(const ExecEnv*, const AttentionTcShape&, const __nv_bfloat16*,
                                              const __nv_bfloat16*, const __nv_bfloat16*, const float*, __nv_bfloat16*,
                                              float*);

}  // namespace tr::cuda
