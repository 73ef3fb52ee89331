// Probe: can a 3x3 convolution of our own take the BatchNorm work around it?
// The cnn's last unmet target is at most 58 kernels per step at batch 256;
// 41 of its 85 are BatchNorm kernels on either side of cuDNN's convolutions,
// and cuDNN's runtime fusion has no deterministic engine for the pattern
// (cudnn_fusion_probe.cu). The kernel here does, in one pass:
//   prologue  the BatchNorm + ReLU before the convolution, applied to each
//             input tile in shared memory as it arrives: a = relu(scale * x +
//             shift), (scale, shift) from the statistics by bn_train_affine,
//             the same floats as bn_relu_apply; the blocks of the first
//             output-channel tile also store a (the backward reads it);
//   product   y[N,H,W,K] = conv3x3(a, w[K,3,3,C]), stride 1, pad 1, NHWC f16,
//             mma.sync m16n8k16 with f32 sums;
//   epilogue  y in f16, and per-block partial (sum y, sum y^2) per channel of
//             the f16 values, added in a fixed order; finalize_sums adds the
//             blocks, as it does for channel_stats.
// Geometry (the filter gradient's, conv_filter_tc_cuda.cu): a block takes R
// flattened image rows q = n*H + h (R*W <= 256 pixels) and 64 output
// channels; shared memory holds rows q0-1 .. q0+R of 32 input channels (the
// halo included) plus one zero pixel, and the 64 x 9 x 32 weights, in two
// stages filled by cp.async. Each warp owns 16-pixel chunks warp and warp + 8
// and all 64 channels (2 x 8 mma tiles); a tap is an address shift, and a tap
// outside the image reads the zero pixel (the padding of a, not of x).
//
// BM_ConvBnFused/<shape>/<batch>/<path>/<minb>, shapes the cnn's six deep
// convolutions (H, C -> K): 28,32->64  14,64->64  14,64->128  7,128->128
// 7,128->256  3,256->256:
//   path 0  tr's chain today: apply kernel, cuDNN's legacy convolution (its
//           heuristic's first deterministic algorithm), channel_stats and
//           finalize_sums;
//   path 1  the fused kernel and finalize_sums;
//   path 2  cuDNN's convolution alone;
//   path 3  the fused kernel without prologue or statistics (the raw
//           convolution, against path 2);
//   path 4  the fused kernel alone: the statistics in and out in 64.64 fixed
//           point (fixed_add), added by every block with integer atomics,
//           which give the same bits in any order, so no finalize kernel;
//           two parities, each kernel clearing the one the next uses;
// paths 1 and 3 with minb 1 (launch bounds for one block per SM, two
// shared-memory stages when C > 32) and minb 2 (at most 128 registers, one
// stage, two blocks per SM: one block's loads beside the other's products).
// Each path is captured 8 times over in one graph (programmatic launch on, as
// in a step) and timed by CUDA events. Counters: us (per chain), nodes (graph
// nodes per chain), rows_per_block, blocks. Before timing, paths 1 and 3 are
// checked against 0 and 2: a must be the same bits, y and the sums within
// f16 rounding (rel_err_y, rel_err_sums, relative L2); the '[ conv bn fused ]'
// line says so, and a mismatch fails the case (path 0 checks path 1, path 2
// checks path 3).
//   ./tr_bench_ops --benchmark_filter=BM_ConvBnFused
#include <benchmark/benchmark.h>

#ifdef TR_HAVE_CUDA
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "framework/ops/bn_affine_cuda.h"
#include "framework/ops/channel_stats_cuda.h"
#include "framework/ops/mma_sync_cuda.h"
#include "framework/ops/op_call.h"
#include "tests/bench/cudnn_probe_env.h"
#include "tests/bench/device_fill.h"
#include "tests/bench/probe_bn_apply_cuda.h"
#include "tests/bench/probe_fixed_sums_cuda.h"

namespace tr {
namespace {

using namespace tr::cuda;
using cudnn_graph::check_cuda;
using cudnn_graph::DeviceBuf;

constexpr int kThreads = 256;   // 8 warps
constexpr int kKT = 64;         // output channels per block
constexpr int kCT = 32;         // input channels per stage
constexpr int kRow = kCT + 8;   // halves per pixel (x tile) and per (k, tap) row (weights): 80 bytes,
                                // so the 8 rows an ldmatrix reads fall in distinct banks
constexpr int kMaxPixels = 256; // R*W <= this: 16 chunks of 16 pixels, two per warp
constexpr int kMaxC = 256;      // the prologue's (scale, shift) live in shared memory
constexpr int kChainsPerGraph = 8;

__host__ __device__ constexpr int x_tile_halves(int R, int W) { return ((R + 2) * W + 1) * kRow; }
constexpr int kWTileHalves = kKT * 9 * kRow;
__host__ __device__ constexpr int stage_halves(int R, int W) { return x_tile_halves(R, W) + kWTileHalves; }
// nst stages, the tap masks, and (scale, shift) for up to kMaxC channels.
size_t fused_smem_bytes(int R, int W, int nst) {
  return size_t(nst) * stage_halves(R, W) * sizeof(__half) + kMaxPixels * sizeof(int) + 2 * kMaxC * sizeof(float);
}


// fx <- sums f32[n] (fx zeroed first): inputs in fixed point.
__global__ void to_fixed_kernel(const float* sums, int n, unsigned long long* fx) {
  const int i = int(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) fixed_add(fx + 2 * i, sums[i]);
}

// x[N,H,W,C], w[K,3,3,C] -> y[N,H,W,K] (and a, partial): see the top of the file.
// Q = N*H rows; grid (ceil(Q / R), K / 64); partial[gridDim.x][2][K]. nst
// stages: 2 loads the next 32 channels while the tensor cores take these; 1
// (shared memory for MINB blocks per SM) loads them after.
// PRO: no prologue (0), or the BatchNorm's statistics as f32 sums (1) or in
// 64.64 fixed point (2). ST: no statistics (0), per-block partials (1), or
// added in fixed point to fx_out (2), whose other parity fx_clear block 0 zeroes.
template <int PRO, int ST, int MINB>
__global__ void __launch_bounds__(kThreads, MINB)
    conv3x3_bn_fused_kernel(const __half* __restrict__ x, const __half* __restrict__ w,
                            const float* __restrict__ sums_in, const unsigned long long* __restrict__ fx_in,
                            const __half* __restrict__ gamma, const __half* __restrict__ beta, double inv_count,
                            __half* __restrict__ a, __half* __restrict__ y, float* __restrict__ partial,
                            unsigned long long* __restrict__ fx_out, unsigned long long* __restrict__ fx_clear,
                            int H, int W, int C, int K, int Q, int R, int nst) {
  grid_dependency_begin();
  if (ST == 2 && blockIdx.x == 0 && blockIdx.y == 0)
    for (int i = threadIdx.x; i < 4 * K; i += kThreads) fx_clear[i] = 0;
  extern __shared__ __align__(16) unsigned char smem[];
  const int SH = stage_halves(R, W), XH = x_tile_halves(R, W);
  __half* stages = reinterpret_cast<__half*>(smem);
  int* taps = reinterpret_cast<int*>(smem + size_t(nst) * SH * sizeof(__half));
  float* scs = reinterpret_cast<float*>(taps + kMaxPixels);
  float* shs = scs + kMaxC;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int k0 = int(blockIdx.y) * kKT;
  const int q0 = int(blockIdx.x) * R;
  const int P = R * W, nchunks = (P + 15) / 16;
  const int tile_pix = (R + 2) * W;                   // x tile pixels; the zero pixel is the next one
  const int64_t first = int64_t(q0) * W;              // tensor pixel of output pixel 0
  const int64_t end = int64_t(Q) * W;                 // pixels in the tensor

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
  if (PRO == 1)
    for (int c = threadIdx.x; c < C; c += kThreads)
      bn_train_affine(sums_in, gamma, beta, C, c, inv_count, 1e-5f, scs[c], shs[c], nullptr, nullptr);
  if (PRO == 2)
    for (int c = threadIdx.x; c < C; c += kThreads)
      bn_affine_fixed(fx_in, gamma, beta, C, c, inv_count, 1e-5f, scs[c], shs[c]);

  // Stage st <- x rows q0-1 .. q0+R and the weights, channels c0 .. c0+31.
  auto load = [&](int st, int c0) {
    __half* xs = stages + st * SH;
    __half* ws = xs + XH;
    for (int i = threadIdx.x; i < tile_pix * (kCT / 8); i += kThreads) {
      const int pix = i / (kCT / 8), part = i % (kCT / 8);
      const int64_t gp = first - W + pix;
      if (gp >= 0 && gp < end) cp_async_16(xs + pix * kRow + part * 8, x + gp * C + c0 + part * 8);
    }
    for (int i = threadIdx.x; i < kKT * 9 * (kCT / 8); i += kThreads) {
      const int row = i / (kCT / 8), part = i % (kCT / 8);  // row = k * 9 + tap
      cp_async_16(ws + row * kRow + part * 8, w + (int64_t(k0) * 9 + row) * C + c0 + part * 8);
    }
    cp_async_commit();
  };
  // a = relu(scale * x + shift) in place, rounded to f16 as bn_relu_apply
  // stores it; the first channel tile's blocks store their output rows of a.
  auto prologue = [&](int st, int c0) {
    __half* xs = stages + st * SH;
    for (int i = threadIdx.x; i < tile_pix * (kCT / 8); i += kThreads) {
      const int pix = i / (kCT / 8), part = i % (kCT / 8);
      const int64_t gp = first - W + pix;
      if (gp < 0 || gp >= end) continue;
      uint4* p = reinterpret_cast<uint4*>(xs + pix * kRow + part * 8);
      uint4 v = *p;
      __half* hv = reinterpret_cast<__half*>(&v);
      const int cb = c0 + part * 8;
#pragma unroll
      for (int e = 0; e < 8; ++e)
        hv[e] = __float2half(bn_relu_value(scs[cb + e], shs[cb + e], __half2float(hv[e]), true));
      *p = v;
      if (blockIdx.y == 0 && pix >= W && pix < W + P) *reinterpret_cast<uint4*>(a + gp * C + cb) = v;
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
  int mask[2];
#pragma unroll
  for (int s = 0; s < 2; ++s) mask[s] = 0;

  const int nc = C / kCT;
  load(0, 0);
  __syncthreads();  // the masks
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
    if (PRO != 0) {
      prologue(st, j * kCT);
      __syncthreads();
    }
    const __half* xs = stages + st * SH;
    const __half* ws = xs + XH;
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
        for (int jp = 0; jp < 4; ++jp) ldmatrix_x4(bf[jp], ws + ((jp * 16 + b_row) * 9 + tap) * kRow + c16 * 16 + b_col);
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

  // y, and the statistics of its f16 values. Thread (g, t) holds pixels
  // chunk*16 + g (+8) and channels nt*8 + 2t, +1 of each n8 tile nt.
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
      __half* yp = y + (first + p) * K + k0 + 2 * t;
#pragma unroll
      for (int n = 0; n < 8; ++n) {
        const __half2 hv = __floats2half2_rn(acc[s][n][2 * half], acc[s][n][2 * half + 1]);
        *reinterpret_cast<__half2*>(yp + n * 8) = hv;
        if (ST != 0) {
          const float r0 = __low2float(hv), r1 = __high2float(hv);
          s1[n][0] += r0;
          s1[n][1] += r1;
          s2[n][0] = fmaf(r0, r0, s2[n][0]);
          s2[n][1] = fmaf(r1, r1, s2[n][1]);
        }
      }
    }
  }
  if (ST != 0) {
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
      if (ST == 1) partial[(int64_t(blockIdx.x) * 2 + which) * K + k0 + k] = v;
      else fixed_add(fx_out + 2 * (int64_t(which) * K + k0 + k), v);
    }
  }
}

struct Shape {
  int h, c, k;
};
const Shape kShapes[] = {{28, 32, 64}, {14, 64, 64}, {14, 64, 128}, {7, 128, 128}, {7, 128, 256}, {3, 256, 256}};

// Rows per block: the fewest waves (minb blocks per SM) times the chunks each
// warp runs, ties to the larger tile (fewer partials to add).
int rows_per_block(int64_t Q, int W, int K, int sms, int minb) {
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

struct Case {
  int N, H, C, K;
  int minb = 1;  // blocks per SM the fused kernel is built for (1: two stages; 2: one)
  int R = 1;
  int nst() const { return minb == 1 && C / kCT > 1 ? 2 : 1; }
  size_t smem() const { return fused_smem_bytes(R, H, nst()); }
  int64_t rows() const { return int64_t(N) * H * H; }
  unsigned blocks() const { return unsigned(ceil_div(int64_t(N) * H, R)); }
};

// Every buffer of a case; a and y per path family so the check can compare them.
struct Buffers {
  DeviceBuf<__half> x, w, gamma, beta, a_ref, a_fused, y_ref, y_fused;
  DeviceBuf<float> sums_in, sums_ref, sums_fused, partial;
  DeviceBuf<unsigned long long> fx_in, fx_acc;  // fixed point: sums_in's; the output's two parities
  explicit Buffers(const Case& c)
      : x(size_t(c.rows() * c.C)), w(size_t(c.K) * 9 * c.C), gamma(size_t(c.C)), beta(size_t(c.C)),
        a_ref(size_t(c.rows() * c.C)), a_fused(size_t(c.rows() * c.C)), y_ref(size_t(c.rows() * c.K)),
        y_fused(size_t(c.rows() * c.K)), sums_in(size_t(2 * c.C)), sums_ref(size_t(2 * c.K)),
        sums_fused(size_t(2 * c.K)), partial(size_t(c.blocks()) * 2 * c.K), fx_in(size_t(4) * c.C),
        fx_acc(size_t(8) * c.K) {}
};

// cuDNN's legacy forward with its heuristic's first deterministic algorithm
// (as tr's plan cache picks by default), descriptors and workspace made once.
struct CudnnConv {
  cudnnTensorDescriptor_t xd = nullptr, yd = nullptr;
  cudnnFilterDescriptor_t wd = nullptr;
  cudnnConvolutionDescriptor_t cd = nullptr;
  cudnnConvolutionFwdAlgo_t algo{};
  size_t ws_bytes = 0;
  void* ws = nullptr;
  CudnnConv(cudnnHandle_t h, const Case& c) {
    using cudnn_graph::check;
    check(cudnnCreateTensorDescriptor(&xd), "x");
    check(cudnnCreateTensorDescriptor(&yd), "y");
    check(cudnnCreateFilterDescriptor(&wd), "w");
    check(cudnnCreateConvolutionDescriptor(&cd), "conv");
    check(cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NHWC, CUDNN_DATA_HALF, c.N, c.C, c.H, c.H), "x");
    check(cudnnSetTensor4dDescriptor(yd, CUDNN_TENSOR_NHWC, CUDNN_DATA_HALF, c.N, c.K, c.H, c.H), "y");
    check(cudnnSetFilter4dDescriptor(wd, CUDNN_DATA_HALF, CUDNN_TENSOR_NHWC, c.K, c.C, 3, 3), "w");
    check(cudnnSetConvolution2dDescriptor(cd, 1, 1, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT), "conv");
    check(cudnnSetConvolutionMathType(cd, CUDNN_TENSOR_OP_MATH), "math");
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int got = 0;
    check(cudnnGetConvolutionForwardAlgorithm_v7(h, xd, wd, cd, yd, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &got, perf),
          "forward algorithms");
    const auto* pick = std::find_if(perf, perf + got, [](const auto& p) {
      return p.status == CUDNN_STATUS_SUCCESS && p.determinism == CUDNN_DETERMINISTIC;
    });
    if (pick == perf + got) throw Error("no deterministic legacy convolution");
    algo = pick->algo;
    check(cudnnGetConvolutionForwardWorkspaceSize(h, xd, wd, cd, yd, algo, &ws_bytes), "workspace");
    check_cuda(cudaMalloc(&ws, std::max<size_t>(ws_bytes, 16)), "workspace");
  }
  ~CudnnConv() {
    cudaFree(ws);
    if (xd) cudnnDestroyTensorDescriptor(xd);
    if (yd) cudnnDestroyTensorDescriptor(yd);
    if (wd) cudnnDestroyFilterDescriptor(wd);
    if (cd) cudnnDestroyConvolutionDescriptor(cd);
  }
  CudnnConv(const CudnnConv&) = delete;
  CudnnConv& operator=(const CudnnConv&) = delete;
  void run(cudnnHandle_t h, const __half* in, const __half* w, __half* out) const {
    const float one = 1.f, zero = 0.f;
    cudnn_graph::check(cudnnConvolutionForward(h, &one, xd, in, wd, w, cd, algo, ws, ws_bytes, &zero, yd, out),
                       "legacy convolution");
  }
};

using FusedKernel = decltype(&conv3x3_bn_fused_kernel<0, 0, 1>);
// Path 1: f32 statistics in and partials out; 3: neither; 4: fixed point in and out.
FusedKernel fused_kernel(int path, int minb) {
  if (path == 1) return minb == 1 ? conv3x3_bn_fused_kernel<1, 1, 1> : conv3x3_bn_fused_kernel<1, 1, 2>;
  if (path == 3) return minb == 1 ? conv3x3_bn_fused_kernel<0, 0, 1> : conv3x3_bn_fused_kernel<0, 0, 2>;
  return minb == 1 ? conv3x3_bn_fused_kernel<2, 2, 1> : conv3x3_bn_fused_kernel<2, 2, 2>;
}

// One chain of `path` on env's stream (see the top of the file); path 4 adds
// its statistics into fixed-point parity `parity` and clears the other.
void launch_path(int path, int parity, const Case& c, Buffers& b, const CudnnConv& conv, cudnnHandle_t h,
                 const ExecEnv& env, const GpuHandles& gh) {
  const double inv = 1.0 / double(c.rows());
  if (path == 0 || path == 2) {
    if (path == 0) {
      const ChannelGrid ga = channel_grid(c.rows(), c.C, 4, gh.sm_count, 8, 8);
      launch_kernel(&env, {ga.grid, ga.block, 0}, apply_kernel<4>, (const __half*)b.x.p, (const float*)b.sums_in.p,
                    (const __half*)b.gamma.p, (const __half*)b.beta.p, b.a_ref.p, c.rows(), int64_t(c.C), inv);
    }
    conv.run(h, path == 0 ? b.a_ref.p : b.x.p, b.w.p, b.y_ref.p);
    if (path == 0)
      launch_channel_stats<8>(&env, gh, RowSource<__half>{b.y_ref.p, c.K}, c.rows(), c.K, b.sums_ref.p, "probe");
    return;
  }
  const dim3 grid(c.blocks(), unsigned(c.K / kKT));
  const int Q = c.N * c.H;
  const size_t fx_words = size_t(4) * c.K;  // one parity: [2 sums][K][lo, hi]
  launch_kernel(&env, {grid, dim3(kThreads), c.smem()}, fused_kernel(path, c.minb), (const __half*)b.x.p,
                (const __half*)b.w.p, (const float*)b.sums_in.p, (const unsigned long long*)b.fx_in.p,
                (const __half*)b.gamma.p, (const __half*)b.beta.p, inv, b.a_fused.p, b.y_fused.p, b.partial.p,
                b.fx_acc.p + parity * fx_words, b.fx_acc.p + (1 - parity) * fx_words, c.H, c.H, c.C, c.K, Q, c.R,
                c.nst());
  if (path == 1) {
    SumOut<float, 2> out;
    out.partial = b.partial.p;
    out.f32 = b.sums_fused.p;
    launch_kernel(&env, {unsigned(ceil_div(c.K, 32)), dim3(32, 32), 0}, finalize_sums<float, 2>,
                  (const float*)b.partial.p, int(c.blocks()), int64_t(c.K), out);
  }
}

template <class T>
std::vector<T> download(const DeviceBuf<T>& d, size_t n) {
  std::vector<T> h(n);
  check_cuda(cudaMemcpy(h.data(), d.p, n * sizeof(T), cudaMemcpyDeviceToHost), "download");
  return h;
}

// Relative L2 distance of got from ref.
template <class T, class U>
double rel_l2(const std::vector<T>& got, const std::vector<U>& ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double r = double(float(ref[i])), d = double(float(got[i])) - r;
    num += d * d;
    den += r * r;
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

bool have_gpu() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return n > 0;
}

void BM_ConvBnFused(benchmark::State& state) {
  if (!have_gpu()) {
    state.SkipWithError("no CUDA device");
    return;
  }
  const Shape& sh = kShapes[state.range(0)];
  const int path = int(state.range(2));
  GpuHandles gh;
  gh.sm_count = query_sm_count(0);
  Case c{int(state.range(1)), sh.h, sh.c, sh.k};
  c.minb = int(state.range(3));
  c.R = rows_per_block(int64_t(c.N) * c.H, c.H, c.K, gh.sm_count, c.minb);
  try {
    cudnn_graph::ProbeEnv pe;
    Buffers b(c);
    DeviceBuf<char> stats_ws(size_t(16) << 20);
    gh.workspace = stats_ws.p;
    gh.workspace_bytes = size_t(16) << 20;
    ExecEnv env;
    env.stream = pe.stream;
    env.gpu = &gh;
    CudnnConv conv(pe.h, c);
    for (int p : {1, 3, 4})
      check_cuda(cudaFuncSetAttribute(fused_kernel(p, c.minb), cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      int(c.smem())),
                 "shared memory");
    // Inputs: x around a shifted mean, weights of a He-like scale, and the
    // statistics of x itself (what the BatchNorm before the convolution uses).
    bench::device_fill(b.x.p, DType::F16, c.rows() * c.C, -1.0, 3.0, 11);
    bench::device_fill(b.w.p, DType::F16, int64_t(c.K) * 9 * c.C, -0.06, 0.06, 12);
    bench::device_fill(b.gamma.p, DType::F16, c.C, 0.5, 1.5, 13);
    bench::device_fill(b.beta.p, DType::F16, c.C, -0.5, 0.5, 14);
    launch_channel_stats<8>(&env, gh, RowSource<__half>{b.x.p, c.C}, c.rows(), c.C, b.sums_in.p, "probe");
    check_cuda(cudaMemsetAsync(b.fx_in.p, 0, size_t(4) * c.C * 8, pe.stream), "zero");
    check_cuda(cudaMemsetAsync(b.fx_acc.p, 0, size_t(8) * c.K * 8, pe.stream), "zero");
    to_fixed_kernel<<<unsigned(ceil_div(2 * c.C, 256)), 256, 0, pe.stream>>>(b.sums_in.p, 2 * c.C, b.fx_in.p);
    check_cuda(cudaStreamSynchronize(pe.stream), "inputs");

    // The check: the fused paths against the chains they replace.
    const int ref_path = path == 3 || path == 2 ? 2 : 0;
    const int fused_path = path == 0 ? 1 : path == 2 ? 3 : path;
    launch_path(ref_path, 0, c, b, conv, pe.h, env, gh);
    launch_path(fused_path, 0, c, b, conv, pe.h, env, gh);
    check_cuda(cudaStreamSynchronize(pe.stream), "check run");
    const size_t ny = size_t(c.rows() * c.K), na = size_t(c.rows() * c.C);
    const double err_y = rel_l2(download(b.y_fused, ny), download(b.y_ref, ny));
    bool a_same = true;
    double err_sums = 0;
    if (fused_path != 3) {
      const auto af = download(b.a_fused, na), ar = download(b.a_ref, na);
      for (size_t i = 0; i < na && a_same; ++i)
        a_same = reinterpret_cast<const unsigned short&>(af[i]) == reinterpret_cast<const unsigned short&>(ar[i]);
      const auto ref = download(b.sums_ref, size_t(2 * c.K));
      if (fused_path == 1) {
        err_sums = rel_l2(download(b.sums_fused, size_t(2 * c.K)), ref);
      } else {  // parity 0 of the fixed-point sums, as doubles
        const auto fx = download(b.fx_acc, size_t(4) * c.K);
        std::vector<double> got(size_t(2 * c.K));
        for (size_t i = 0; i < got.size(); ++i)
          got[i] = double(static_cast<long long>(fx[2 * i + 1])) + std::ldexp(double(fx[2 * i]), -64);
        err_sums = rel_l2(got, ref);
      }
    }
    const bool ok = a_same && err_y < 2e-3 && err_sums < 1e-3;
    std::printf(
        "[ conv bn fused ] %dx%dx%d->%d batch %d path %d, %d block(s) per SM, R %d, %u blocks: %s (a %s, rel_err_y "
        "%.2e, rel_err_sums %.2e)\n",
        c.H, c.H, c.C, c.K, c.N, path, c.minb, c.R, c.blocks() * unsigned(c.K / kKT), ok ? "matches" : "MISMATCH",
        fused_path != 3 ? (a_same ? "same bits" : "DIFFERS") : "not made", err_y, err_sums);
    state.counters["rel_err_y"] = err_y;
    state.counters["rel_err_sums"] = err_sums;
    state.counters["rows_per_block"] = c.R;
    state.counters["blocks"] = double(c.blocks()) * (c.K / kKT);
    state.counters["smem_kb"] = double(c.smem()) / 1024;
    if (!ok) {
      state.SkipWithError("the fused kernel does not match the chain it replaces");
      return;
    }

    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    check_cuda(cudaStreamBeginCapture(pe.stream, cudaStreamCaptureModeThreadLocal), "capture");
    for (int i = 0; i < kChainsPerGraph; ++i) launch_path(path, i % 2, c, b, conv, pe.h, env, gh);
    check_cuda(cudaStreamEndCapture(pe.stream, &graph), "capture");
    size_t nodes = 0;
    check_cuda(cudaGraphGetNodes(graph, nullptr, &nodes), "nodes");
    check_cuda(cudaGraphInstantiate(&exec, graph, 0), "instantiate");
    check_cuda(cudaGraphLaunch(exec, pe.stream), "warm-up");
    check_cuda(cudaStreamSynchronize(pe.stream), "warm-up");
    for (auto _ : state) {
      cudaEventRecord(pe.e0, pe.stream);
      cudaGraphLaunch(exec, pe.stream);
      cudaEventRecord(pe.e1, pe.stream);
      cudaEventSynchronize(pe.e1);
      float ms = 0;
      cudaEventElapsedTime(&ms, pe.e0, pe.e1);
      state.SetIterationTime(1e-3 * ms / kChainsPerGraph);
    }
    const cudaError_t e = cudaGetLastError();
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    check_cuda(e, "graph launches");
    state.counters["nodes"] = double(nodes) / kChainsPerGraph;
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}

// Paths 0 and 2 (tr's chain, cuDNN) once; the fused paths 1, 3 and 4 with
// one and with two blocks per SM.
void conv_bn_fused_args(benchmark::internal::Benchmark* b) {
  for (int shape = 0; shape < int(std::size(kShapes)); ++shape)
    for (int batch : {256, 1024})
      for (int path = 0; path < 5; ++path)
        for (int minb : {1, 2})
          if (minb == 1 || path != 0 && path != 2) b->Args({shape, batch, path, minb});
}

}  // namespace
}  // namespace tr

BENCHMARK(tr::BM_ConvBnFused)
    ->Apply(tr::conv_bn_fused_args)
    ->ArgNames({"shape", "batch", "path", "minb"})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
#endif  // TR_HAVE_CUDA
