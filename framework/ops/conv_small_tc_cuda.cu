// Note [small-C on tensor cores]
// The first layer's 3x3 convolution has C = 1 or 3 input channels, so each
// output is only 9*C products: on CUDA cores its forward and filter gradient
// are bound by loads and registers, not by the HBM traffic of the K-channel
// activation they write or read. VGG16-BN at 224x224, batch 128, spent 3.6 ms
// of a 30 ms step in them (H200). As GEMMs over the im2col index
// k = (r*3 + s)*C + c (9*C of them, zero-padded to 16 or 32) they fit the
// tensor cores' mma.sync m16n8k16 (f16 products, exact in f32; f32 sums):
//   forward:         Y[16 pixels x 8 channels]  += X_im2col[16 x 16 k] * W^T[16 k x 8]
//   filter gradient: dW[16 channels x 8 k]       += dY^T[16 x 16 pixels] * X_im2col[16 pixels x 8 k]
// Each warp owns tiles of 16 consecutive pixels (flattened n*H*W + h*W + w; a
// tile may span rows and images: each lane places its own pixels) and builds
// its fragments straight from global memory with the image border as zeros.
// The filter gradient keeps every warp's sums over a fixed set of tiles, adds
// the block's warps in warp order through shared memory, and the blocks in
// block order (finalize_sums): deterministic, like every kernel here. Sums are
// in f32 but their order is the mma's, so the bits differ from the CUDA-core
// kernels (GPU-CPU tests keep their f16 tolerance).
//
// mma.sync m16n8k16 fragments (PTX ISA), lane = 4*g + t:
//   A 16x16 row-major: a0 (row g,   cols 2t..2t+1)  a1 (row g+8, cols 2t..2t+1)
//                      a2 (row g,   cols 2t+8..+9)  a3 (row g+8, cols 2t+8..+9)
//   B 16x8 (k x n):    b0 (k 2t..2t+1, col g)       b1 (k 2t+8..2t+9, col g)
//   C/D 16x8 f32:      d0,d1 (row g, cols 2t, 2t+1) d2,d3 (row g+8, cols 2t, 2t+1)
// each 32-bit register holds two f16, the lower index in the low half.
#include "framework/ops/conv_small_tc_cuda.h"

#include <cuda_fp16.h>

#include "framework/ops/cuda_kernel_util_cuda.h"

namespace tr {
namespace {

using namespace tr::cuda;

constexpr int kTcThreads = 256;     // 8 warps
constexpr int kTcBlocksPerSm = 4;
constexpr int kTile = 16;           // pixels per mma tile

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

// Where a pixel of the flattened [N*H*W] index sits: its row q = n*H + h
// (flattened), h and w; valid = inside the tensor.
struct Pixel {
  int q, h, w;
  bool valid;
};
__device__ __forceinline__ Pixel pixel_at(int p, int P, int H, int W) {
  Pixel px;
  px.valid = p < P;
  const int pp = px.valid ? p : 0;
  px.w = pp % W;
  px.q = pp / W;
  px.h = px.q % H;
  return px;
}

// im2col value k = (r*3 + s)*C + c of pixel px: x at (h + r - 1, w + s - 1, c),
// 0 outside the image, for k >= 9*C and for pixels past the tensor.
template <int C>
__device__ __forceinline__ __half im2col(const __half* __restrict__ x, const Pixel& px, int k, int H, int W) {
  if (!px.valid || k >= 9 * C) return __float2half(0.f);
  const int tap = k / C, c = k - tap * C;
  const int r = tap / 3, s = tap - r * 3;
  const int ih = px.h + r - 1, iw = px.w + s - 1;
  if (ih < 0 || ih >= H || iw < 0 || iw >= W) return __float2half(0.f);
  return x[((int64_t(px.q) + r - 1) * W + iw) * C + c];
}

// ---- forward ----

// y[P, K] for K = 8*NT; KS = k-steps of 16 over the 9*C im2col columns.
template <int C, int NT>
__global__ void __launch_bounds__(kTcThreads) conv_small_fwd_tc_kernel(const __half* __restrict__ x,
                                                                       const __half* __restrict__ w,
                                                                       __half* __restrict__ y, int N, int H, int W) {
  grid_dependency_begin();
  constexpr int KS = (9 * C + 15) / 16, K = 8 * NT, KC = 9 * C;
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  // B = W^T: b[nt][ks][j] = (k = ks*16 + 2t + 8j + {0,1}, n = nt*8 + g) = w[n, k].
  uint32_t b[NT][KS][2];
#pragma unroll
  for (int nt = 0; nt < NT; ++nt)
#pragma unroll
    for (int ks = 0; ks < KS; ++ks)
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        const int k = ks * 16 + 2 * t + 8 * j;
        const __half* wn = w + (nt * 8 + g) * KC;
        b[nt][ks][j] = pack2(k < KC ? wn[k] : __float2half(0.f), k + 1 < KC ? wn[k + 1] : __float2half(0.f));
      }
  const int P = N * H * W;
  const int tiles = (P + kTile - 1) / kTile;
  const int warps = gridDim.x * (blockDim.x / 32);
  for (int tile = blockIdx.x * (blockDim.x / 32) + (threadIdx.x >> 5); tile < tiles; tile += warps) {
    const Pixel px[2] = {pixel_at(tile * kTile + g, P, H, W), pixel_at(tile * kTile + g + 8, P, H, W)};
    uint32_t a[KS][4];
#pragma unroll
    for (int ks = 0; ks < KS; ++ks)
#pragma unroll
      for (int i = 0; i < 4; ++i) {  // a_i: row g + 8*(i&1), cols 2t + 8*(i>>1) + {0,1}
        const Pixel& p = px[i & 1];
        const int k = ks * 16 + 2 * t + 8 * (i >> 1);
        a[ks][i] = pack2(im2col<C>(x, p, k, H, W), im2col<C>(x, p, k + 1, H, W));
      }
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
      float d[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
      for (int ks = 0; ks < KS; ++ks) mma_16816(d, a[ks], b[nt][ks]);
      const int ch = nt * 8 + 2 * t;
      if (px[0].valid)
        *reinterpret_cast<__half2*>(y + int64_t(tile * kTile + g) * K + ch) = __floats2half2_rn(d[0], d[1]);
      if (px[1].valid)
        *reinterpret_cast<__half2*>(y + int64_t(tile * kTile + g + 8) * K + ch) = __floats2half2_rn(d[2], d[3]);
    }
  }
}

// ---- filter gradient ----

// dw[K, 9*C] for K = 16*MT channels and NK = ceil(9*C / 8) tap n-tiles. Each
// warp adds its tiles' products in registers; the block's warps are added in
// warp order in shared memory (sw[K * 9C]), then stored as the block's partial
// (or, with one block, as dw).
template <int C, int MT>
__global__ void __launch_bounds__(kTcThreads) conv_small_bwd_filter_tc_kernel(const __half* __restrict__ x,
                                                                              const __half* __restrict__ dy, int N,
                                                                              int H, int W, SumOut<__half, 1> out) {
  grid_dependency_begin();
  constexpr int K = 16 * MT, KC = 9 * C, NK = (KC + 7) / 8;
  __shared__ float sw[K * KC];
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3, warp = threadIdx.x >> 5;
  float d[MT][NK][4];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int nk = 0; nk < NK; ++nk)
#pragma unroll
      for (int i = 0; i < 4; ++i) d[mt][nk][i] = 0.f;
  const int P = N * H * W;
  const int tiles = (P + kTile - 1) / kTile;
  const int warps = gridDim.x * (blockDim.x / 32);
  const __half zero = __float2half(0.f);
  for (int tile = blockIdx.x * (blockDim.x / 32) + warp; tile < tiles; tile += warps) {
    // This lane's pixels: 2t, 2t+1, 2t+8, 2t+9 of the tile (the mma's k index).
    Pixel px[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) px[j] = pixel_at(tile * kTile + 2 * t + (j & 1) + 8 * (j >> 1), P, H, W);
    // B = im2col: b[nk][j] = (pixels 2t + 8j + {0,1}, k = nk*8 + g).
    uint32_t b[NK][2];
#pragma unroll
    for (int nk = 0; nk < NK; ++nk)
#pragma unroll
      for (int j = 0; j < 2; ++j)
        b[nk][j] = pack2(im2col<C>(x, px[2 * j], nk * 8 + g, H, W), im2col<C>(x, px[2 * j + 1], nk * 8 + g, H, W));
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
      // A = dY^T: a_i = (channel mt*16 + g + 8*(i&1), pixels 2t + 8*(i>>1) + {0,1}).
      uint32_t a[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int ch = mt * 16 + g + 8 * (i & 1);
        const Pixel& p0 = px[2 * (i >> 1)];
        const Pixel& p1 = px[2 * (i >> 1) + 1];
        const int64_t base = int64_t(tile) * kTile + 2 * t + 8 * (i >> 1);
        a[i] = pack2(p0.valid ? dy[base * K + ch] : zero, p1.valid ? dy[(base + 1) * K + ch] : zero);
      }
#pragma unroll
      for (int nk = 0; nk < NK; ++nk) mma_16816(d[mt][nk], a, b[nk]);
    }
  }
  // The block's warps in warp order: warp 0 stores, warps 1.. add.
  for (int wv = 0; wv < blockDim.x / 32; ++wv) {
    if (warp == wv) {
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int nk = 0; nk < NK; ++nk)
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            const int ch = mt * 16 + g + 8 * (i >> 1);
            const int k = nk * 8 + 2 * t + (i & 1);
            if (k < KC) {
              float& s = sw[ch * KC + k];
              s = wv == 0 ? d[mt][nk][i] : s + d[mt][nk][i];
            }
          }
    }
    __syncthreads();
  }
  for (int i = threadIdx.x; i < K * KC; i += blockDim.x) {
    if (gridDim.x > 1) out.partial[int64_t(blockIdx.x) * K * KC + i] = sw[i];
    else out.t[0][i] = __float2half(sw[i]);
  }
}

unsigned filter_blocks(const ConvKey& key, int sms) {
  const int64_t tiles = ceil_div(key.n * key.h * key.w, int64_t(kTile));
  int64_t blocks = ceil_div(tiles, int64_t(kTcThreads / 32));
  const int64_t cap = int64_t(sms) * kTcBlocksPerSm;
  if (blocks > cap) blocks = cap;
  return unsigned(blocks < 1 ? 1 : blocks);
}

template <typename F>
void with_c(int64_t c, F&& f) {
  switch (c) {
    case 1: f(std::integral_constant<int, 1>{}); break;
    case 2: f(std::integral_constant<int, 2>{}); break;
    case 3: f(std::integral_constant<int, 3>{}); break;
    default: f(std::integral_constant<int, 4>{}); break;
  }
}

}  // namespace

bool uses_small_c_tc(const ConvKey& key) {
  return uses_small_c_kernel(key) && key.dtype == DType::F16 && key.k % 16 == 0 && key.k <= 64 && key.c <= 4;
}

void conv_small_fwd_tc(const ExecEnv* env, int sms, const void* x, const void* w, void* y, const ConvKey& key) {
  TR_CHECK(uses_small_c_tc(key) && key.dir == ConvDir::Fwd, "conv small-C tc: no kernel for ", key.str());
  const int64_t tiles = ceil_div(key.n * key.h * key.w, int64_t(kTile));
  const unsigned grid = grid_stride_blocks(tiles * 32, sms, kTcThreads, kTcBlocksPerSm * 2);
  const int N = int(key.n), H = int(key.h), W = int(key.w);
  with_c(key.c, [&](auto cc) {
    constexpr int C = decltype(cc)::value;
    auto run = [&](auto nt) {
      launch_kernel(env, {dim3(grid), dim3(kTcThreads), 0}, conv_small_fwd_tc_kernel<C, decltype(nt)::value>,
          static_cast<const __half*>(x), static_cast<const __half*>(w), static_cast<__half*>(y), N, H, W);
    };
    switch (key.k) {
      case 16: run(std::integral_constant<int, 2>{}); break;
      case 32: run(std::integral_constant<int, 4>{}); break;
      case 48: run(std::integral_constant<int, 6>{}); break;
      default: run(std::integral_constant<int, 8>{}); break;
    }
  });
}

void conv_small_bwd_filter_tc(const ExecEnv* env, int sms, const void* x, const void* dy, void* dw, void* ws,
                              const ConvKey& key) {
  TR_CHECK(uses_small_c_tc(key) && key.dir == ConvDir::BwdFilter, "conv small-C tc: no kernel for ", key.str());
  const unsigned grid = filter_blocks(key, sms);
  TR_CHECK(grid <= 1 || ws != nullptr, "ConvBwdFilter: small-C tensor-core kernel without workspace");
  SumOut<__half, 1> out;
  out.partial = static_cast<float*>(ws);
  out.t[0] = static_cast<__half*>(dw);
  const int N = int(key.n), H = int(key.h), W = int(key.w);
  with_c(key.c, [&](auto cc) {
    constexpr int C = decltype(cc)::value;
    auto run = [&](auto mt) {
      launch_kernel(env, {dim3(grid), dim3(kTcThreads), 0}, conv_small_bwd_filter_tc_kernel<C, decltype(mt)::value>,
          static_cast<const __half*>(x), static_cast<const __half*>(dy), N, H, W, out);
    };
    switch (key.k) {
      case 16: run(std::integral_constant<int, 1>{}); break;
      case 32: run(std::integral_constant<int, 2>{}); break;
      case 48: run(std::integral_constant<int, 3>{}); break;
      default: run(std::integral_constant<int, 4>{}); break;
    }
  });
  ChannelGrid fg;  // launch_finalize needs only the number of row blocks
  fg.grid = dim3(grid);
  launch_finalize<__half, 1>(fg, key.k * 9 * key.c, out, env);
}

size_t small_c_tc_filter_workspace_bytes(const ConvKey& key, int sms) {
  const unsigned grid = filter_blocks(key, sms);
  return grid > 1 ? size_t(grid) * size_t(key.k * 9 * key.c) * sizeof(float) : 0;
}

}  // namespace tr
