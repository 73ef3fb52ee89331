// Note [3x3 filter gradient on tensor cores]
// The cnn's second convolution (28x28, 32 -> 64 channels) has a filter gradient
// of 64 x 288 outputs, each a sum over every pixel of the batch (200,704 at
// batch 256). cuDNN's deterministic choice for it, an sm80 implicit GEMM,
// reached 59 TFLOP/s inside the step at batch 256 and 185 at 4096 (H200), and
// was the step's longest kernel; at 256 it ran alone on the GPU for 106 us.
// This kernel splits the pixel sum over the whole GPU instead:
//   - Block tile: 64 output channels k x 9 taps x 32 input channels c, one
//     (k, c) tile per blockIdx.y; blockIdx.x takes one contiguous share of the
//     image rows (a "split"), about one block per SM in all. Shares are fixed
//     by the shape, not by timing.
//   - Sub-tile: R flattened rows q = n*H + h (R*W <= 224 pixels). Shared memory
//     holds x's rows q0-1 .. q0+R (the halo included), dy's R*W pixels and each
//     pixel's mask of in-image taps, copied with cp.async in two stages, so the
//     next sub-tile's loads overlap this one's products.
//   - Warp tile: all 64 channels k x 72 im2col columns (9 n8-tiles); the 8
//     warps are 4 column quarters x 2 chunk parities. Per 16-pixel chunk a warp
//     reads dY^T with ldmatrix.trans (4 A fragments) and the shifted x rows
//     with ldmatrix.trans (9 B fragments): 36 mma.sync m16n8k16. Each lane
//     addresses one pixel's 8 channels, so a tap's shift is only an address:
//     out-of-image taps (and pixels past the tensor) read a zero pixel kept at
//     the end of the x tile.
//   - Padded rows (40 halves for x, 72 for dy) put the 8 rows an ldmatrix reads
//     in distinct banks.
//   - Each warp keeps its sums in registers over all its sub-tiles; the odd
//     parity's sums go through shared memory to the even one's, which stores
//     the block's partial dw (f32); finalize_sums adds the splits in split
//     order. The result is the same bits on every run; the sums' order is the
//     mma's, so the bits differ from cuDNN's (GPU-CPU tests: f16 tolerance).
#include "framework/ops/conv_plans/conv_filter_tc_cuda.h"

#include <cuda_fp16.h>

#include <algorithm>

#include "framework/ops/kernels/channel_sums_cuda.h"
#include "framework/ops/kernels/mma_sync_cuda.h"

namespace tr {
namespace {

using namespace tr::cuda;

constexpr int kThreads = 256;           // 8 warps: 4 column quarters x 2 chunk parities
constexpr int kKT = 64;                 // output channels per block tile
constexpr int kCT = 32;                 // input channels per block tile
constexpr int kColTiles = 9 * kCT / 8;  // 36 n8-tiles of (tap, c) columns
constexpr int kWarpColTiles = kColTiles / 4;
constexpr int kXRow = kCT + 8;        // halves per pixel of the x tile (80 bytes)
constexpr int kDyRow = kKT + 8;       // halves per pixel of the dy tile (144 bytes)
constexpr int kSumRow = 9 * kCT + 8;  // floats per channel of the block's sum tile
constexpr int kMaxTilePixels = 224;   // R*W <= this
constexpr int kMaxW = 64;

// Rows per sub-tile: as many whole rows as fit in kMaxTilePixels.
int rows_per_subtile(int64_t w) { return int(std::max<int64_t>(1, kMaxTilePixels / w)); }

// One stage of shared memory: x rows (R+2)*W pixels and the zero pixel, dy's
// pixels rounded up to 16 (halves), then each pixel's tap mask (ints).
__host__ __device__ constexpr int x_tile_halves(int R, int W) { return ((R + 2) * W + 1) * kXRow; }
__host__ __device__ constexpr int tile_pixels(int R, int W) { return (R * W + 15) / 16 * 16; }
__host__ __device__ constexpr int stage_bytes(int R, int W) {
  return (x_tile_halves(R, W) + tile_pixels(R, W) * kDyRow) * 2 + tile_pixels(R, W) * 4;
}

struct Geometry {
  int R = 1;             // rows per sub-tile
  int64_t subtiles = 0;  // ceil(N*H / R)
  unsigned tiles = 1;    // (K / 64) * (C / 32)
  unsigned splits = 1;   // blocks per tile along the rows
  size_t smem = 0;       // dynamic shared memory, bytes
};

Geometry geometry(const ConvKey& key, int sms) {
  Geometry g;
  const int W = int(key.w);
  g.R = rows_per_subtile(W);
  g.subtiles = ceil_div(key.n * key.h, int64_t(g.R));
  g.tiles = unsigned((key.k / kKT) * (key.c / kCT));
  // One block per SM in all (each thread holds 235 registers), and at least
  // two sub-tiles per block so the copies of one overlap the products of the other.
  const int64_t want = ceil_div(int64_t(sms), int64_t(g.tiles));
  g.splits = unsigned(std::max<int64_t>(1, std::min(want, g.subtiles / 2)));
  g.smem = std::max<size_t>(size_t(2) * stage_bytes(g.R, W), size_t(kKT) * kSumRow * sizeof(float));
  return g;
}

// Copies sub-tile u's x rows (q0-1 .. q0+R, channels c0..c0+31) and dy pixels
// (channels k0..k0+63) into one stage, and writes each pixel's tap mask: bit
// 3*(dr+1) + (ds+1) set when tap (dr, ds) lies inside the pixel's image, none
// for pixels past the tensor or the sub-tile. x rows outside [0, Q) are left
// as they are (no tap inside an image reads them); dy pixels past the tensor
// or the sub-tile are zeros. Pixel p of the sub-tile is pixel q0*W + p of the
// tensor, so only the masks need a division.
__device__ __forceinline__ void load_subtile(__half* xs, __half* dys, int* taps, const __half* __restrict__ x,
                                             const __half* __restrict__ dy, int64_t u, int R, int H, int W, int C,
                                             int K, int Q, int c0, int k0) {
  const int q0 = int(u * R);
  const int64_t first = int64_t(q0) * W, end = int64_t(Q) * W;  // tensor pixels [first, first + R*W), of [0, end)
  const int xpieces = (R + 2) * W * (kCT / 8);
  for (int i = threadIdx.x; i < xpieces; i += kThreads) {
    const int pix = i / (kCT / 8), part = i % (kCT / 8);
    const int64_t gp = first - W + pix;
    if (gp >= 0 && gp < end) cp_async_16(xs + pix * kXRow + part * 8, x + gp * C + c0 + part * 8);
  }
  const int PT = R * W, pixels = tile_pixels(R, W);
  const int dpieces = pixels * (kKT / 8);
  for (int i = threadIdx.x; i < dpieces; i += kThreads) {
    const int pix = i / (kKT / 8), part = i % (kKT / 8);
    const int64_t gp = first + pix;
    __half* dst = dys + pix * kDyRow + part * 8;
    if (pix < PT && gp < end) cp_async_16(dst, dy + gp * K + k0 + part * 8);
    else *reinterpret_cast<uint4*>(dst) = make_uint4(0, 0, 0, 0);
  }
  for (int p = threadIdx.x; p < pixels; p += kThreads) {
    int m = 0;
    if (p < PT && first + p < end) {
      const int lr = p / W, w = p - lr * W, h = (q0 + lr) % H;
      const int cols = 2 | int(w > 0) | (int(w + 1 < W) << 2);
      m = (h > 0 ? cols : 0) | (cols << 3) | (h + 1 < H ? cols << 6 : 0);
    }
    taps[p] = m;
  }
}

// partial[split][K][3][3][C] (f32), or dw itself (f16) with one split.
__global__ void __launch_bounds__(kThreads, 1)
    conv3x3_bwd_filter_tc_kernel(const __half* __restrict__ x, const __half* __restrict__ dy, int H, int W, int C,
                                 int K, int Q, int R, int64_t subtiles, float* __restrict__ partial,
                                 __half* __restrict__ dw) {
  grid_dependency_begin();
  extern __shared__ __align__(16) unsigned char smem[];
  const int xh = x_tile_halves(R, W), pixels = tile_pixels(R, W), stage = stage_bytes(R, W);
  const int zero_off = (R + 2) * W * kXRow;  // the zero pixel, in halves of the x tile
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int g = lane >> 2, t = lane & 3, i4 = lane >> 3;
  const int ctiles = C / kCT;
  const int c0 = int(blockIdx.y % ctiles) * kCT, k0 = int(blockIdx.y / ctiles) * kKT;
  const int nq = warp & 3, parity = warp >> 2;  // column tiles nq*9.., chunks of this parity
  auto xs_of = [&](int st) { return reinterpret_cast<__half*>(smem + st * stage); };
  auto dys_of = [&](int st) { return xs_of(st) + xh; };
  auto taps_of = [&](int st) { return reinterpret_cast<int*>(dys_of(st) + pixels * kDyRow); };
  for (int i = threadIdx.x; i < kXRow; i += kThreads)
    for (int s = 0; s < 2; ++s) xs_of(s)[zero_off + i] = __float2half(0.f);

  // This lane's B addressing per ldmatrix of the warp: 4 x4 (column tiles
  // j, j+1) and one x2 (the ninth). Lane l addresses block l >> 3: column tile
  // j + (l >> 4), pixels 8 * ((l >> 3) & 1) .. of the chunk. b_off: the tap's
  // shift and the tile's channels, in halves of the x tile; b_tap: 1 << tap.
  int b_off[5], b_tap[5];
#pragma unroll
  for (int m = 0; m < 5; ++m) {
    const int j = nq * kWarpColTiles + 2 * m + (m < 4 ? (lane >> 4) : 0);
    const int tap = j / (kCT / 8), dr = tap / 3 - 1, ds = tap % 3 - 1;
    b_off[m] = ((1 + dr) * W + ds) * kXRow + (j % (kCT / 8)) * 8;
    b_tap[m] = 1 << tap;
  }

  float d[4][kWarpColTiles][4] = {};
  const int64_t u_begin = int64_t(blockIdx.x) * subtiles / gridDim.x;
  const int64_t u_end = int64_t(blockIdx.x + 1) * subtiles / gridDim.x;
  const int chunks = pixels / 16;
  if (u_begin < u_end) load_subtile(xs_of(0), dys_of(0), taps_of(0), x, dy, u_begin, R, H, W, C, K, Q, c0, k0);
  cp_async_commit();
  for (int64_t u = u_begin; u < u_end; ++u) {
    const int st = int(u - u_begin) & 1;
    if (u + 1 < u_end)
      load_subtile(xs_of(st ^ 1), dys_of(st ^ 1), taps_of(st ^ 1), x, dy, u + 1, R, H, W, C, K, Q, c0, k0);
    cp_async_commit();
    cp_async_wait<1>();
    __syncthreads();
    const __half* xs = xs_of(st);
    const __half* dys = dys_of(st);
    const int* taps = taps_of(st);
    for (int ch = parity; ch < chunks; ch += 2) {
      uint32_t a[4][4];
#pragma unroll
      for (int mt = 0; mt < 4; ++mt)
        ldmatrix_x4_trans(a[mt], dys + (ch * 16 + 8 * (i4 >> 1) + (lane & 7)) * kDyRow + mt * 16 + 8 * (i4 & 1));
      const int pp = ch * 16 + 8 * (i4 & 1) + (lane & 7);  // the pixel whose row this lane addresses for B
      const int pt = taps[pp];
      uint32_t b[kWarpColTiles][2];
#pragma unroll
      for (int m = 0; m < 5; ++m) {
        const __half* row = xs + ((pt & b_tap[m]) ? pp * kXRow + b_off[m] : zero_off);
        if (m < 4) {
          uint32_t r4[4];
          ldmatrix_x4_trans(r4, row);
          b[2 * m][0] = r4[0];
          b[2 * m][1] = r4[1];
          b[2 * m + 1][0] = r4[2];
          b[2 * m + 1][1] = r4[3];
        } else {
          ldmatrix_x2_trans(b[8], row);
        }
      }
#pragma unroll
      for (int mt = 0; mt < 4; ++mt)
#pragma unroll
        for (int j = 0; j < kWarpColTiles; ++j) mma_16816(d[mt][j], a[mt], b[j]);
    }
    __syncthreads();  // this stage is read before the next loads overwrite it
  }
  cp_async_wait<0>();
  __syncthreads();

  // The two parities' sums, odd into shared memory first, then even adds its
  // own and stores: a fixed order.
  float* sum = reinterpret_cast<float*>(smem);  // [64][kSumRow]
  const int64_t KC = int64_t(9) * C;
  float* part = partial + int64_t(blockIdx.x) * K * KC;
  // Each of this warp's sum pairs: f(kk, col, value) with kk the channel and
  // col the (tap, c) column of the tile, value its two adjacent columns.
  auto each_pair = [&](auto&& f) {
#pragma unroll
    for (int mt = 0; mt < 4; ++mt)
#pragma unroll
      for (int j = 0; j < kWarpColTiles; ++j)
#pragma unroll
        for (int hi = 0; hi < 2; ++hi)
          f(mt * 16 + g + 8 * hi, (nq * kWarpColTiles + j) * 8 + 2 * t,
            make_float2(d[mt][j][2 * hi], d[mt][j][2 * hi + 1]));
  };
  if (parity == 1)
    each_pair([&](int kk, int col, float2 v) { *reinterpret_cast<float2*>(sum + kk * kSumRow + col) = v; });
  __syncthreads();
  if (parity == 0)
    each_pair([&](int kk, int col, float2 v) {
      const float2 o = *reinterpret_cast<const float2*>(sum + kk * kSumRow + col);
      v = make_float2(o.x + v.x, o.y + v.y);
      const int64_t at = int64_t(k0 + kk) * KC + (col / kCT) * C + c0 + col % kCT;
      if (gridDim.x > 1) *reinterpret_cast<float2*>(part + at) = v;
      else *reinterpret_cast<__half2*>(dw + at) = __floats2half2_rn(v.x, v.y);
    });
}

}  // namespace

bool uses_filter_tc(const ConvKey& key) {
  return key.dir == ConvDir::BwdFilter && key.dtype == DType::F16 && key.r == 3 && key.stride == 1 && key.pad == 1 &&
         key.c % kCT == 0 && key.k % kKT == 0 && key.w <= kMaxW &&
         key.n * key.h + kMaxTilePixels < (int64_t(1) << 31);  // row indices in 32 bits
}

bool filter_tc_beats_cudnn(const ConvKey& key) { return uses_filter_tc(key) && key.c == kCT && key.k == kKT; }

void conv_bwd_filter_tc(const ExecEnv* env, int sms, const void* x, const void* dy, void* dw, void* ws,
                        const ConvKey& key) {
  TR_CHECK(uses_filter_tc(key), "conv 3x3 filter gradient (tensor cores): no kernel for ", key.str());
  const Geometry g = geometry(key, sms);
  TR_CHECK(g.splits <= 1 || ws != nullptr, "ConvBwdFilter: tensor-core kernel without workspace");
  TR_CHECK(aligned_to(x, 16) && aligned_to(dy, 16) && aligned_to(dw, 4),
           "ConvBwdFilter: tensor-core kernel needs x and dy on 16 bytes");
  const int Q = int(key.n * key.h);
  launch_kernel(env, {dim3(g.splits, g.tiles), dim3(kThreads), g.smem}, conv3x3_bwd_filter_tc_kernel,
                static_cast<const __half*>(x), static_cast<const __half*>(dy), int(key.h), int(key.w), int(key.c),
                int(key.k), Q, g.R, g.subtiles, static_cast<float*>(ws), static_cast<__half*>(dw));
  if (g.splits <= 1) return;
  SumOut<__half, 1> out;
  out.partial = static_cast<float*>(ws);
  out.t[0] = static_cast<__half*>(dw);
  ChannelGrid fg;  // launch_finalize needs only the number of partials
  fg.grid = dim3(g.splits);
  launch_finalize<__half, 1>(fg, key.k * 9 * key.c, out, env);
}

void prepare_filter_tc_device() {
  // The largest geometry's stages, over every row width the kernel takes (the
  // attribute is per device and per function: one value for all shapes).
  size_t most = 0;
  for (int w = 1; w <= kMaxW; ++w) {
    ConvKey k;
    k.w = w;
    k.n = k.h = 1;
    k.c = kCT;
    k.k = kKT;
    most = std::max(most, geometry(k, 1).smem);
  }
  TR_GPU_CHECK(
      cudaFuncSetAttribute(conv3x3_bwd_filter_tc_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(most)));
}

size_t filter_tc_workspace_bytes(const ConvKey& key, int sms) {
  const Geometry g = geometry(key, sms);
  return g.splits > 1 ? size_t(g.splits) * size_t(key.k * 9 * key.c) * sizeof(float) : 0;
}

}  // namespace tr
