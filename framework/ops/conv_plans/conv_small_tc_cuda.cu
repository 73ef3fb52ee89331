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
// Measured (tr_bench_ops, H200, f16): resnet18's 32x32x3 -> 64 at batch 512,
// forward 63 us and filter gradient 49 us (the CUDA-core kernels: 131 and 161
// us before this, 90 and 123 after their own rework); the cnn's 28x28x1 -> 32
// at batch 1024, filter gradient 30.5 us (84 before), forward 26.9 us, where
// the CUDA-core kernel with its weights in registers measured 19.8 us. The
// forward is far from the 17 us its 67 MB of output take at HBM speed; its
// loads and stores are per lane and 2 or 4 bytes wide.
// The mma.sync and ldmatrix fragment layouts: mma_sync_cuda.h.
#include "framework/ops/conv_plans/conv_small_tc_cuda.h"

#include <cuda_fp16.h>

#include "framework/ops/kernels/channel_sums_cuda.h"
#include "framework/ops/kernels/mma_sync_cuda.h"

namespace tr {
namespace {

using namespace tr::cuda;

constexpr int kTcThreads = 256;  // 8 warps
constexpr int kTcBlocksPerSm = 4;
constexpr int kTile = 16;  // pixels per mma tile

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

// ---- forward ----
// Note [kernel rows per lane]: the mma sums over k in any order, so the forward
// permutes k to make its A fragments cheap. Lane t < 3 (t = lane & 3) owns
// kernel row r = t: its slots j = 0..4*KS-1 hold (s, c) = (j / C, j % C) of
// that row for j < 3C and zeros after; lane t = 3 holds zeros. Slot j of lane
// t is the mma's k index 16*(j>>2) + 2t + 8*((j>>1)&1) + (j&1), which is where
// both fragment layouts put it. A lane then reads 3C contiguous values of one
// input row per pixel at offsets known when compiling (the loops are
// unrolled), and the weights take the same slots.
template <int C>
constexpr int row_ksteps() {
  return (3 * C + 3) / 4;
}

// Slot j of a lane for one pixel: row[j] = x at (h + t - 1, w + j/C - 1, j%C),
// 0 outside the image and past 3C.
template <int C>
__device__ __forceinline__ __half row_slot(const __half* __restrict__ row, bool row_ok, const Pixel& px, int W, int j) {
  const int s = j / C;
  const bool ok = j < 3 * C && row_ok && (s != 0 || px.w > 0) && (s != 2 || px.w + 1 < W);
  return ok ? row[j] : __float2half(0.f);
}

// y[P, K] for K = 8*NT.
template <int C, int NT>
__global__ void __launch_bounds__(kTcThreads)
    conv_small_fwd_tc_kernel(const __half* __restrict__ x, const __half* __restrict__ w, __half* __restrict__ y, int N,
                             int H, int W) {
  grid_dependency_begin();
  constexpr int KS = row_ksteps<C>(), K = 8 * NT, KC = 9 * C;
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  // B = W^T in the lane's slots: b[nt][ks][jj] = slots 4ks + 2jj + {0,1} of row t, channel nt*8 + g.
  uint32_t b[NT][KS][2];
#pragma unroll
  for (int nt = 0; nt < NT; ++nt)
#pragma unroll
    for (int ks = 0; ks < KS; ++ks)
#pragma unroll
      for (int jj = 0; jj < 2; ++jj) {
        const int j = 4 * ks + 2 * jj;
        const __half* wr = w + (nt * 8 + g) * KC + t * 3 * C;  // w[n, r = t, s, c]
        const bool row = t < 3;
        b[nt][ks][jj] =
            pack2(row && j < 3 * C ? wr[j] : __float2half(0.f), row && j + 1 < 3 * C ? wr[j + 1] : __float2half(0.f));
      }
  const int P = N * H * W;
  const int tiles = (P + kTile - 1) / kTile;
  const int warps = gridDim.x * (blockDim.x / 32);
  for (int tile = blockIdx.x * (blockDim.x / 32) + (threadIdx.x >> 5); tile < tiles; tile += warps) {
    const Pixel px[2] = {pixel_at(tile * kTile + g, P, H, W), pixel_at(tile * kTile + g + 8, P, H, W)};
    // a[ks][i]: pixel g + 8*(i&1), slots 4ks + 2*(i>>1) + {0,1}.
    uint32_t a[KS][4];
#pragma unroll
    for (int u = 0; u < 2; ++u) {
      const int ih = px[u].h + t - 1;
      const bool row_ok = px[u].valid && t < 3 && ih >= 0 && ih < H;
      const __half* row = x + ((int64_t(px[u].q) + t - 1) * W + px[u].w - 1) * C;
#pragma unroll
      for (int ks = 0; ks < KS; ++ks)
#pragma unroll
        for (int hi = 0; hi < 2; ++hi) {
          const int j = 4 * ks + 2 * hi;
          a[ks][u + 2 * hi] = pack2(row_slot<C>(row, row_ok, px[u], W, j), row_slot<C>(row, row_ok, px[u], W, j + 1));
        }
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

// Where im2col column n = (r*3 + s)*C + c reads from, relative to a pixel:
// x[p*C + off] when (h + dr, w + ds) is inside the image.
struct Tap {
  int off, dr, ds;
  bool valid;
};

// dw[K, 9*C] for K = 16*MT channels and NK = ceil(9*C / 8) n-tiles of im2col
// columns. Per tile of 16 pixels a warp copies dy's 16 x K rows (contiguous in
// memory) to shared memory and reads its A = dY^T fragments with ldmatrix.trans
// (matrix i of m-tile mt: pixels 8*(i>>1).., channels mt*16 + 8*(i&1)..); its
// B = im2col fragments come from x through per-lane Tap offsets. Each warp
// adds its tiles' products in registers; the block's warps are added in warp
// order in shared memory, then stored as the block's partial (or, with one
// block, as dw).
template <int C, int MT>
__global__ void __launch_bounds__(kTcThreads)
    conv_small_bwd_filter_tc_kernel(const __half* __restrict__ x, const __half* __restrict__ dy, int N, int H, int W,
                                    SumOut<__half, 1> out) {
  grid_dependency_begin();
  constexpr int K = 16 * MT, KC = 9 * C, NK = (KC + 7) / 8;
  constexpr int kRow = K + 8;  // padded row of the dy tile (halves): ldmatrix rows hit distinct banks
  constexpr int kWarps = kTcThreads / 32;
  __shared__ float sw[K * KC];
  __shared__ __align__(16) __half sdy[kWarps][kTile * kRow];
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3, warp = threadIdx.x >> 5;
  Tap tap[NK];  // this lane's im2col columns n = nk*8 + g
#pragma unroll
  for (int nk = 0; nk < NK; ++nk) {
    const int n = nk * 8 + g, k = n / C, c = n % C;
    tap[nk].valid = n < KC;
    tap[nk].dr = k / 3 - 1;
    tap[nk].ds = k % 3 - 1;
    tap[nk].off = (tap[nk].dr * W + tap[nk].ds) * C + c;
  }
  float d[MT][NK][4] = {};
  const int P = N * H * W;
  const int tiles = (P + kTile - 1) / kTile;
  const int warps = gridDim.x * kWarps;
  __half* tile_s = sdy[warp];
  const __half zero = __float2half(0.f);
  for (int tile = blockIdx.x * kWarps + warp; tile < tiles; tile += warps) {
    // dy rows tile*16.. (16 * K halves, contiguous) in 16-byte pieces; rows past P are 0.
    __syncwarp();  // the previous tile's ldmatrix reads are done
#pragma unroll
    for (int piece = lane; piece < kTile * K / 8; piece += 32) {
      const int row = piece / (K / 8), col = (piece % (K / 8)) * 8;
      uint4 v = make_uint4(0, 0, 0, 0);
      if (tile * kTile + row < P) v = *reinterpret_cast<const uint4*>(dy + (int64_t(tile) * kTile + row) * K + col);
      *reinterpret_cast<uint4*>(tile_s + row * kRow + col) = v;
    }
    __syncwarp();
    // B = im2col: b[nk][jj] = (pixels 2t + 8jj + {0,1}, column nk*8 + g).
    Pixel px[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) px[j] = pixel_at(tile * kTile + 2 * t + (j & 1) + 8 * (j >> 1), P, H, W);
    uint32_t b[NK][2];
#pragma unroll
    for (int nk = 0; nk < NK; ++nk)
#pragma unroll
      for (int jj = 0; jj < 2; ++jj) {
        __half v[2];
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const Pixel& p = px[2 * jj + e];
          const int ih = p.h + tap[nk].dr, iw = p.w + tap[nk].ds;
          const bool ok = tap[nk].valid && p.valid && ih >= 0 && ih < H && iw >= 0 && iw < W;
          v[e] = ok ? x[(int64_t(tile) * kTile + 2 * t + 8 * jj + e) * C + tap[nk].off] : zero;
        }
        b[nk][jj] = pack2(v[0], v[1]);
      }
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
      uint32_t a[4];
      const int i = lane >> 3;  // the matrix whose row this lane addresses
      ldmatrix_x4_trans(a, tile_s + (8 * (i >> 1) + (lane & 7)) * kRow + mt * 16 + 8 * (i & 1));
#pragma unroll
      for (int nk = 0; nk < NK; ++nk) mma_16816(d[mt][nk], a, b[nk]);
    }
  }
  // The block's warps in warp order: warp 0 stores, warps 1.. add.
  for (int wv = 0; wv < kWarps; ++wv) {
    if (warp == wv) {
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int nk = 0; nk < NK; ++nk)
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            const int ch = mt * 16 + g + 8 * (i >> 1);
            const int n = nk * 8 + 2 * t + (i & 1);
            if (n < KC) {
              float& s = sw[ch * KC + n];
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
  TR_CHECK(aligned_to(dy, 16), "ConvBwdFilter: small-C tensor-core kernel needs dy on 16 bytes");
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
