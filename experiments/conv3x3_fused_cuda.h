#pragma once
// A 3x3 / stride 1 / pad 1 convolution of our own (NHWC f16, mma.sync
// m16n8k16 with f32 sums) that takes the BatchNorm work on both sides of it,
// for the probes that ask whether it can replace tr's chains of BatchNorm
// kernels around cuDNN (conv_bn_fused_probe.cu: the forward,
// conv_bn_bwd_fused_probe.cu: the data gradient). Only included from .cu files.
//
// out[N,H,W,K] = conv3x3(pro(in)[N,H,W,C], w[K,3,3,C]); the data gradient is
// the same product with the filter flipped and transposed (w'[c,t,k] =
// w[k,8-t,c]). Two policies fill in the rest:
//   Pro  what happens to each input tile as it arrives in shared memory: a
//        BatchNorm + ReLU (forward) or the BatchNorm's backward apply
//        (gradient), with per-channel parameters computed once per block;
//        the blocks of the first output-channel tile store the result (the
//        weight gradient reads it). The padding is applied after Pro: a tap
//        outside the image reads zeros, not pro(0).
//   Epi  what the f16 output adds to per-channel sums: the BatchNorm
//        statistics of out (forward) or the next BatchNorm's backward sums
//        (gradient); SUMS says where they go: nowhere (0), per-block partials
//        for finalize_sums (1), or 64.64 fixed point with integer atomics (2,
//        probe_fixed_sums_cuda.h: no finalize kernel; block 0 zeroes the other
//        parity, which the next pass uses).
// Geometry (as the filter gradient's, framework/ops/conv_plans/conv_filter_tc_cuda.cu):
// a block takes R flattened image rows q = n*H + h (R*W <= 256 pixels) and 64
// output channels. Shared memory holds rows q0-1 .. q0+R of 32 input channels
// (the halo included) plus one zero pixel, and the 64 x 9 x 32 weights, in
// one or two stages filled by cp.async. Each warp owns 16-pixel chunks warp
// and warp + 8, all 64 channels (2 x 8 mma tiles); a tap is an address
// shift, and a tap outside the image reads the zero pixel. Rows of 40 halves
// put the 8 rows an ldmatrix reads in distinct banks. The block's sums are
// added over g by shuffles, then over the warps in order: the same bits on
// every run.
#include <cuda_fp16.h>

#include <cstdint>

#include "experiments/probe_fixed_sums_cuda.h"
#include "framework/core/gpu_check_cuda.h"
#include "framework/ops/kernels/bn_affine_cuda.h"
#include "framework/ops/kernels/bn_rows_cuda.h"
#include "framework/ops/kernels/kernel_launch_cuda.h"
#include "framework/ops/kernels/mma_sync_cuda.h"

namespace tr::cuda::fused3x3 {

constexpr int kThreads = 256;    // 8 warps
constexpr int kKT = 64;          // output channels per block
constexpr int kCT = 32;          // input channels per stage
constexpr int kRow = kCT + 8;    // halves per pixel (in tile) and per (k, tap) row (weights): 80 bytes
constexpr int kMaxPixels = 256;  // R*W <= this: 16 chunks of 16 pixels, two per warp
constexpr int kMaxC = 256;       // per-channel parameters live in shared memory
constexpr int kMaxParams = 7;    // of the prologue's channels, then the epilogue's

__host__ __device__ constexpr int in_tile_halves(int R, int W) { return ((R + 2) * W + 1) * kRow; }
constexpr int kWTileHalves = kKT * 9 * kRow;
__host__ __device__ constexpr int stage_halves(int R, int W) { return in_tile_halves(R, W) + kWTileHalves; }
// nst stages, the tap masks, and the parameters.
inline size_t smem_bytes(int R, int W, int nst) {
  return size_t(nst) * stage_halves(R, W) * sizeof(__half) + kMaxPixels * sizeof(int) +
         size_t(kMaxParams + 4) * kMaxC * sizeof(float);
}
// What the kernel takes: C % 32 == 0, C <= 256, K % 64 == 0, K <= 256, W <= 64.
inline bool supported(int W, int C, int K) {
  return C % kCT == 0 && C <= kMaxC && K % kKT == 0 && K <= kMaxC && W <= 64;
}

// Rows per block: the fewest waves (minb blocks per SM) times the chunks each
// warp runs, ties to the larger tile (fewer partial sums to add).
inline int rows_per_block(int64_t Q, int W, int K, int sms, int minb) {
  int best = 1;
  double best_cost = 1e300;
  for (int R = 1; R * W <= kMaxPixels; ++R) {
    const int64_t blocks = ceil_div(Q, R) * (K / kKT);
    const double per_warp = double(ceil_div(ceil_div(int64_t(R) * W, 16), 8));
    const double cost = double(ceil_div(blocks, int64_t(sms) * minb)) * (per_warp + 0.5);
    if (cost <= best_cost) {
      best_cost = cost;
      best = R;
    }
  }
  return best;
}

// ---- prologues: p holds kParams arrays of kMaxC floats --------------------

struct NoPrologue {
  static constexpr int kParams = 0;
  __device__ void setup(float*, int) const {}
  __device__ void apply(uint4&, int64_t, int, const float*, int) const {}
  __device__ void store(int64_t, int, const uint4&, int) const {}
};

// a = relu(scale * x + shift): bn_train_affine's (scale, shift) from f32
// sums, or from fixed-point ones (the same floats for sums one float made);
// rounded to f16 as bn_relu_apply stores it.
struct BnReluPrologue {
  static constexpr int kParams = 2;
  const float* sums = nullptr;             // f32[2, C], or
  const unsigned long long* fx = nullptr;  // fixed point [2][C][2]
  const __half* gamma = nullptr;
  const __half* beta = nullptr;
  double inv_count = 0;
  __half* a = nullptr;  // [rows, C]
  __device__ void setup(float* p, int C) const {
    for (int c = threadIdx.x; c < C; c += kThreads) {
      if (fx != nullptr) bn_affine_fixed(fx, gamma, beta, C, c, inv_count, 1e-5f, p[c], p[kMaxC + c]);
      else bn_train_affine(sums, gamma, beta, C, c, inv_count, 1e-5f, p[c], p[kMaxC + c], nullptr, nullptr);
    }
  }
  __device__ void apply(uint4& v, int64_t, int cb, const float* p, int) const {
    __half* hv = reinterpret_cast<__half*>(&v);
#pragma unroll
    for (int e = 0; e < 8; ++e)
      hv[e] = __float2half(bn_relu_value(p[cb + e], p[kMaxC + cb + e], __half2float(hv[e]), true));
  }
  __device__ void store(int64_t gp, int cb, const uint4& v, int C) const {
    *reinterpret_cast<uint4*>(a + gp * C + cb) = v;
  }
};

// What the backward reads of a BatchNorm's forward, for channel c: p[c]
// scale, p[kMaxC + c] shift (affine), then mean and rstd (stat_from_batch);
// returns rstd.
__device__ __forceinline__ float bn_saved_state(const float* affine, const float* batch, int C, int c, float* p) {
  const ChanStat s = stat_from_batch(batch, C, c, 1e-5f);
  p[c] = affine[c];
  p[kMaxC + c] = affine[C + c];
  p[2 * kMaxC + c] = s.mean;
  p[3 * kMaxC + c] = s.rstd;
  return s.rstd;
}

// The BatchNorm + ReLU backward's apply (bn_bwd_apply_rows, bn_rows_cuda.h):
// dx = k * (relu_grad(dy) - a - xhat * b) from the forward's x, affine and
// batch and the backward sums dsums (f32 or fixed point), the same floats.
struct BnBwdPrologue {
  static constexpr int kParams = 7;  // scale, shift, mean, rstd, k, a, b
  const __half* x = nullptr;         // the BatchNorm's input [rows, C]
  const float* affine = nullptr;
  const float* batch = nullptr;
  const __half* gamma = nullptr;
  const float* dsums = nullptr;
  const unsigned long long* fx = nullptr;
  double inv_count = 0;
  __half* dx = nullptr;
  __device__ void setup(float* p, int C) const {
    for (int c = threadIdx.x; c < C; c += kThreads) {
      const float rstd = bn_saved_state(affine, batch, C, c, p);
      p[4 * kMaxC + c] = __half2float(gamma[c]) * rstd;
      const double d0 = fx != nullptr ? fixed_value(fx + 2 * c) : double(dsums[c]);
      const double d1 = fx != nullptr ? fixed_value(fx + 2 * (C + c)) : double(dsums[C + c]);
      p[5 * kMaxC + c] = float(d0 * inv_count);
      p[6 * kMaxC + c] = float(d1 * inv_count);
    }
  }
  __device__ void apply(uint4& v, int64_t gp, int cb, const float* p, int C) const {
    const uint4 xr = *reinterpret_cast<const uint4*>(x + gp * C + cb);
    __half* hv = reinterpret_cast<__half*>(&v);
    const __half* xv = reinterpret_cast<const __half*>(&xr);
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      const int c = cb + e;
      const float xx = __half2float(xv[e]);
      const float gr = relu_grad(hv[e], p[c], p[kMaxC + c], xx, true);
      const float xhat = (xx - p[2 * kMaxC + c]) * p[3 * kMaxC + c];
      hv[e] = __float2half(p[4 * kMaxC + c] * (gr - p[5 * kMaxC + c] - xhat * p[6 * kMaxC + c]));
    }
  }
  __device__ void store(int64_t gp, int cb, const uint4& v, int C) const {
    *reinterpret_cast<uint4*>(dx + gp * C + cb) = v;
  }
};

// ---- epilogues: what an output pair (channels k, k+1 of pixel gp) adds ----

struct NoSums {
  static constexpr int kParams = 0;
  static constexpr bool kSums = false;
  __device__ void setup(float*, int) const {}
  __device__ void add(int64_t, int, __half2, const float*, int, float (&)[2], float (&)[2]) const {}
};

// The BatchNorm statistics of the output: (sum v, sum v^2).
struct OutputStats {
  static constexpr int kParams = 0;
  static constexpr bool kSums = true;
  __device__ void setup(float*, int) const {}
  __device__ void add(int64_t, int, __half2 v, const float*, int, float (&s1)[2], float (&s2)[2]) const {
    const float r[2] = {__low2float(v), __high2float(v)};
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      s1[e] += r[e];
      s2[e] = fmaf(r[e], r[e], s2[e]);
    }
  }
};

// The next BatchNorm + ReLU backward's sums over the output, a gradient dy
// (bn_bwd_reduce_rows): g = relu_grad(dy), (sum g, sum g * xhat), with that
// BatchNorm's x, affine and batch.
struct BnBwdReduceSums {
  static constexpr int kParams = 4;  // scale, shift, mean, rstd
  static constexpr bool kSums = true;
  const __half* x = nullptr;  // [rows, K]
  const float* affine = nullptr;
  const float* batch = nullptr;
  __device__ void setup(float* p, int K) const {
    for (int k = threadIdx.x; k < K; k += kThreads) bn_saved_state(affine, batch, K, k, p);
  }
  __device__ void add(int64_t gp, int k, __half2 v, const float* p, int K, float (&s1)[2], float (&s2)[2]) const {
    const __half2 xr = *reinterpret_cast<const __half2*>(x + gp * K + k);
    const __half dv[2] = {__low2half(v), __high2half(v)};
    const float xv[2] = {__low2float(xr), __high2float(xr)};
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      const int c = k + e;
      const float gr = relu_grad(dv[e], p[c], p[kMaxC + c], xv[e], true);
      s1[e] += gr;
      s2[e] = fmaf(gr, (xv[e] - p[2 * kMaxC + c]) * p[3 * kMaxC + c], s2[e]);
    }
  }
};

// Where the block's sums go (SUMS 1 or 2).
struct SumsOut {
  float* partial = nullptr;                // [gridDim.x][2][K]
  unsigned long long* fx = nullptr;        // fixed point [2][K][2], this pass's parity
  unsigned long long* fx_clear = nullptr;  // the other parity
};

// in[N,H,W,C], w[K,3,3,C] -> out[N,H,W,K]; Q = N*H rows; grid (ceil(Q / R),
// K / 64); nst stages: 2 loads the next 32 channels while the tensor cores
// take these, 1 (shared memory for MINB blocks per SM) loads them after.
template <class Pro, class Epi, int SUMS, int MINB>
__global__ void __launch_bounds__(kThreads, MINB)
    conv3x3_fused_kernel(const __half* __restrict__ in, const __half* __restrict__ w, __half* __restrict__ out, Pro pro,
                         Epi epi, SumsOut sums, int H, int W, int C, int K, int Q, int R, int nst) {
  static_assert(Pro::kParams + Epi::kParams <= kMaxParams + 4, "parameters");
  grid_dependency_begin();
  if (SUMS == 2 && blockIdx.x == 0 && blockIdx.y == 0)
    for (int i = threadIdx.x; i < 4 * K; i += kThreads) sums.fx_clear[i] = 0;
  extern __shared__ __align__(16) unsigned char smem[];
  const int SH = stage_halves(R, W), IH = in_tile_halves(R, W);
  __half* stages = reinterpret_cast<__half*>(smem);
  int* taps = reinterpret_cast<int*>(smem + size_t(nst) * SH * sizeof(__half));
  float* pro_p = reinterpret_cast<float*>(taps + kMaxPixels);
  float* epi_p = pro_p + Pro::kParams * kMaxC;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int k0 = int(blockIdx.y) * kKT;
  const int q0 = int(blockIdx.x) * R;
  const int P = R * W, nchunks = (P + 15) / 16;
  const int tile_pix = (R + 2) * W;       // tile pixels; the zero pixel is the next one
  const int64_t first = int64_t(q0) * W;  // tensor pixel of output pixel 0
  const int64_t end = int64_t(Q) * W;     // pixels in the tensor

  // Output pixel p's in-image taps: bit 3*(dr+1) + (ds+1) for tap (dr, ds);
  // none past the tile or the tensor.
  for (int p = threadIdx.x; p < kMaxPixels; p += kThreads) {
    int m = 0;
    if (p < P && first + p < end) {
      const int lr = p / W, col = p - lr * W, h = (q0 + lr) % H;
      const int cols = 2 | int(col > 0) | (int(col + 1 < W) << 2);
      m = (h > 0 ? cols : 0) | (cols << 3) | (h + 1 < H ? cols << 6 : 0);
    }
    taps[p] = m;
  }
  for (int i = threadIdx.x; i < nst * (kRow / 8); i += kThreads)
    *reinterpret_cast<uint4*>(stages + (i / (kRow / 8)) * SH + tile_pix * kRow + (i % (kRow / 8)) * 8) =
        make_uint4(0, 0, 0, 0);
  pro.setup(pro_p, C);
  epi.setup(epi_p, K);

  // Stage st <- in rows q0-1 .. q0+R and the weights, channels c0 .. c0+31.
  auto load = [&](int st, int c0) {
    __half* xs = stages + st * SH;
    __half* ws = xs + IH;
    for (int i = threadIdx.x; i < tile_pix * (kCT / 8); i += kThreads) {
      const int pix = i / (kCT / 8), part = i % (kCT / 8);
      const int64_t gp = first - W + pix;
      if (gp >= 0 && gp < end) cp_async_16(xs + pix * kRow + part * 8, in + gp * C + c0 + part * 8);
    }
    for (int i = threadIdx.x; i < kKT * 9 * (kCT / 8); i += kThreads) {
      const int row = i / (kCT / 8), part = i % (kCT / 8);  // row = k * 9 + tap
      cp_async_16(ws + row * kRow + part * 8, w + (int64_t(k0) * 9 + row) * C + c0 + part * 8);
    }
    cp_async_commit();
  };
  // Pro in place; the first channel tile's blocks store their output rows.
  auto prologue = [&](int st, int c0) {
    __half* xs = stages + st * SH;
    for (int i = threadIdx.x; i < tile_pix * (kCT / 8); i += kThreads) {
      const int pix = i / (kCT / 8), part = i % (kCT / 8);
      const int64_t gp = first - W + pix;
      if (gp < 0 || gp >= end) continue;
      uint4* p = reinterpret_cast<uint4*>(xs + pix * kRow + part * 8);
      uint4 v = *p;
      const int cb = c0 + part * 8;
      pro.apply(v, gp, cb, pro_p, C);
      *p = v;
      if (blockIdx.y == 0 && pix >= W && pix < W + P) pro.store(gp, cb, v, C);
    }
  };

  float acc[2][8][4];
#pragma unroll
  for (int s = 0; s < 2; ++s)
#pragma unroll
    for (int n = 0; n < 8; ++n)
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[s][n][i] = 0.f;
  // ldmatrix addressing. A (16 pixels x 16 channels): lane l gives row
  // (l & 7) + 8 * ((l >> 3) & 1), columns from 8 * (l >> 4): blocks a0..a3.
  // B (16 channels c x 8 channels k, two n8 tiles): lane l gives k row
  // (l & 7) + 8 * (l >> 4), c from 8 * ((l >> 3) & 1): b0, b1 of tile 2j, then of 2j+1.
  const int a_row = (lane & 7) + ((lane >> 3) & 1) * 8, a_col = (lane >> 4) * 8;
  const int b_row = (lane & 7) + (lane >> 4) * 8, b_col = ((lane >> 3) & 1) * 8;
  const bool has[2] = {warp < nchunks, warp + 8 < nchunks};
  const int nc = C / kCT;
  load(0, 0);
  __syncthreads();  // the masks and the parameters
  int mask[2];
#pragma unroll
  for (int s = 0; s < 2; ++s) mask[s] = has[s] ? taps[(warp + 8 * s) * 16 + a_row] : 0;
  for (int j = 0; j < nc; ++j) {
    const int st = j % nst;
    if (nst == 2 && j + 1 < nc) {
      load(st ^ 1, (j + 1) * kCT);
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();
    if (Pro::kParams > 0) {
      prologue(st, j * kCT);
      __syncthreads();
    }
    const __half* xs = stages + st * SH;
    const __half* ws = xs + IH;
#pragma unroll 1
    for (int tap = 0; tap < 9; ++tap) {
      const int shift = (tap / 3 - 1) * W + (tap % 3 - 1);
      int pix[2];
#pragma unroll
      for (int s = 0; s < 2; ++s) {
        const int p = (warp + 8 * s) * 16 + a_row;
        pix[s] = (mask[s] >> tap) & 1 ? p + W + shift : tile_pix;
      }
#pragma unroll
      for (int c16 = 0; c16 < kCT / 16; ++c16) {
        uint32_t bf[4][4];
#pragma unroll
        for (int jp = 0; jp < 4; ++jp)
          ldmatrix_x4(bf[jp], ws + ((jp * 16 + b_row) * 9 + tap) * kRow + c16 * 16 + b_col);
#pragma unroll
        for (int s = 0; s < 2; ++s) {
          if (!has[s]) continue;
          uint32_t af[4];
          ldmatrix_x4(af, xs + pix[s] * kRow + c16 * 16 + a_col);
#pragma unroll
          for (int jp = 0; jp < 4; ++jp) {
            const uint32_t b0[2] = {bf[jp][0], bf[jp][1]}, b1[2] = {bf[jp][2], bf[jp][3]};
            mma_16816(acc[s][2 * jp], af, b0);
            mma_16816(acc[s][2 * jp + 1], af, b1);
          }
        }
      }
    }
    __syncthreads();  // the next load overwrites this stage
    if (nst == 1 && j + 1 < nc) load(0, (j + 1) * kCT);
  }

  // out in f16, and Epi's sums of those values. Thread (g, t) holds pixels
  // chunk*16 + g (+8) and channels n*8 + 2t, +1 of each n8 tile n.
  float s1[8][2], s2[8][2];
#pragma unroll
  for (int n = 0; n < 8; ++n) s1[n][0] = s1[n][1] = s2[n][0] = s2[n][1] = 0.f;
#pragma unroll
  for (int s = 0; s < 2; ++s) {
    if (!has[s]) continue;
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int p = (warp + 8 * s) * 16 + g + 8 * half;
      if (p >= P || first + p >= end) continue;
      const int64_t gp = first + p;
#pragma unroll
      for (int n = 0; n < 8; ++n) {
        const int k = k0 + n * 8 + 2 * t;
        const __half2 hv = __floats2half2_rn(acc[s][n][2 * half], acc[s][n][2 * half + 1]);
        *reinterpret_cast<__half2*>(out + gp * K + k) = hv;
        if (Epi::kSums) epi.add(gp, k, hv, epi_p, K, s1[n], s2[n]);
      }
    }
  }
  if constexpr (Epi::kSums && SUMS != 0) {
    // Over the 8 lanes of a t (g = 0..7), then over the warps in order.
#pragma unroll
    for (int n = 0; n < 8; ++n)
#pragma unroll
      for (int e = 0; e < 2; ++e)
#pragma unroll
        for (int off = 4; off < 32; off <<= 1) {
          s1[n][e] += __shfl_xor_sync(0xffffffffu, s1[n][e], off);
          s2[n][e] += __shfl_xor_sync(0xffffffffu, s2[n][e], off);
        }
    float* red = reinterpret_cast<float*>(smem);  // [warp][2][64]; the stages are free now
    if (g == 0)
#pragma unroll
      for (int n = 0; n < 8; ++n)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          red[(warp * 2 + 0) * kKT + n * 8 + 2 * t + e] = s1[n][e];
          red[(warp * 2 + 1) * kKT + n * 8 + 2 * t + e] = s2[n][e];
        }
    __syncthreads();
    if (threadIdx.x < 2 * kKT) {
      const int which = threadIdx.x / kKT, k = threadIdx.x % kKT;
      float v = 0.f;
      for (int wv = 0; wv < kThreads / 32; ++wv) v += red[(wv * 2 + which) * kKT + k];
      if (SUMS == 1) sums.partial[(int64_t(blockIdx.x) * 2 + which) * K + k0 + k] = v;
      else fixed_add(sums.fx + 2 * (int64_t(which) * K + k0 + k), v);
    }
  }
}

// A launch of the kernel: its geometry for one shape on this GPU.
struct FusedShape {
  int N = 0, H = 0, C = 0, K = 0;  // in[N,H,H,C] -> out[N,H,H,K]
  int minb = 1;                    // blocks per SM it is built for
  int R = 1;                       // image rows per block
  int nst() const { return minb == 1 && C / kCT > 1 ? 2 : 1; }
  size_t smem() const { return smem_bytes(R, H, nst()); }
  int64_t rows() const { return int64_t(N) * H * H; }
  unsigned row_blocks() const { return unsigned(ceil_div(int64_t(N) * H, R)); }
};
inline FusedShape fused_shape(int N, int H, int C, int K, int sms, int minb) {
  return FusedShape{N, H, C, K, minb, rows_per_block(int64_t(N) * H, H, K, sms, minb)};
}

// Launches the kernel on env's stream (once per instantiation, first outside
// a capture: it lets the kernel take the GPU's opt-in shared memory).
template <class Pro, class Epi, int SUMS>
void launch_fused(const ExecEnv& env, const FusedShape& s, const __half* in, const __half* w, __half* out,
                  const Pro& pro, const Epi& epi, const SumsOut& sums) {
  auto* kernel = s.minb == 1 ? conv3x3_fused_kernel<Pro, Epi, SUMS, 1> : conv3x3_fused_kernel<Pro, Epi, SUMS, 2>;
  static bool allowed[2] = {false, false};
  if (!allowed[s.minb - 1]) {
    int dev = 0, optin = 0;
    TR_GPU_CHECK(cudaGetDevice(&dev));
    TR_GPU_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    TR_GPU_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, optin));
    allowed[s.minb - 1] = true;
  }
  const dim3 grid(s.row_blocks(), unsigned(s.K / kKT));
  launch_kernel(&env, {grid, dim3(kThreads), s.smem()}, kernel, in, w, out, pro, epi, sums, s.H, s.H, s.C, s.K,
                s.N * s.H, s.R, s.nst());
}

}  // namespace tr::cuda::fused3x3
