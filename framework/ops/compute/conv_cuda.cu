// Convolutions (R x R window, stride, zero padding, NHWC, weights KRSC).
// Semantics: framework/ops/compute/conv.h. Outputs are overwritten (beta = 0).
//
// cuDNN (legacy convolution API, fp32 compute) does every shape except the
// few-input-channel 3x3 / stride 1 / pad 1 forward and filter gradient (Note
// [small-C convolutions]), which run the direct kernels below, and the f16 3x3
// filter gradient of 32 -> 64 channels (Note [3x3 filter gradient on tensor
// cores], conv_filter_tc_cuda.cu). The algorithm, descriptors and kernel
// choice come from GpuHandles::conv_plans, prepared before any capture (Note
// [conv plans before capture]); a launch only looks them up, so it is
// capture-safe and uses the same algorithm eagerly and in graphs.
//   workspace: the plan's workspace_bytes (ConvPlanCache::max_workspace_bytes()).
//   Small-C filter gradient: blocks * K*9*C * 4 bytes, blocks = min(4 * SMs /
//   channel blocks, row blocks) (small_c_conv_workspace_bytes).
//   Tensor-core filter gradient: splits * K*9*C * 4 bytes (filter_tc_workspace_bytes).
#include <algorithm>

#include "framework/ops/compute/conv.h"
#include "framework/ops/conv_plans/conv_filter_tc_cuda.h"
#include "framework/ops/conv_plans/conv_plan_cache_cuda.h"
#include "framework/ops/conv_plans/conv_small_tc_cuda.h"
#include "framework/ops/kernels/channel_sums_cuda.h"
#include "framework/ops/op_signature.h"

namespace tr {
namespace {

using namespace tr::cuda;

// ---------------------------------------------------------------- small-C kernels
// f32, and f16 shapes the tensor-core kernels do not take (uses_small_c_tc,
// conv_small_tc_cuda.h), run these on the CUDA cores.
// 3x3 window, stride 1, padding 1 only (uses_small_c_kernel), so Ho = H, Wo = W.
// 32-bit indices: run_small_c checks N*H*W*K < 2^31.

constexpr int kSmallThreads = 256;
constexpr int kSmallFilterBlocksPerSm = 4;

// The 3x3xC input window of one pixel column at a time: thread-row q (flattened
// n*H + h) loads column `col` of rows h-1..h+1 into slot `slot` of xw, zeros
// outside the image. Shared by the forward and the filter gradient.
template <typename T, int C>
__device__ __forceinline__ void load_window_col(const T* __restrict__ x, int q, int h, int H, int W, int col,
                                                float (&xw)[3][3][C], int slot) {
#pragma unroll
  for (int r = 0; r < 3; ++r) {
    const int ih = h + r - 1;
    const bool ok = ih >= 0 && ih < H && col >= 0 && col < W;
    const T* xp = x + ((int64_t(q) + r - 1) * W + col) * C;
#pragma unroll
    for (int c = 0; c < C; ++c) xw[r][slot][c] = ok ? to_f(xp[c]) : 0.f;
  }
}

template <int C>
__device__ __forceinline__ void shift_window(float (&xw)[3][3][C]) {
#pragma unroll
  for (int r = 0; r < 3; ++r)
#pragma unroll
    for (int c = 0; c < C; ++c) {
      xw[r][0][c] = xw[r][1][c];
      xw[r][1][c] = xw[r][2][c];
    }
}

// Output channels per thread of the forward: its 9*C*KV weights live in
// registers (<= 72 floats), so each pixel costs 3*C input loads, 9*C*KV FMAs
// and one KV-element store, and no shared-memory traffic.
template <typename T, int C>
constexpr int small_fwd_kv() {
  constexpr int want = C == 1 ? 8 : C == 2 ? 4 : 2;
  return want < kVec16<T> ? want : kVec16<T>;
}

// y[p, k0..k0+KV) = sum over taps (r,s) and c of x[nbr(p,r,s), c] * w[k, r, s, c]
// Block (bx, by) = (KV-channel groups, image rows): thread (kg, row) holds its
// channels' weights in registers, walks its row left to right with the 3x3xC
// input window in registers (one new column per step) and writes KV outputs
// per pixel. Taps accumulate in (r, s, c) order.
template <typename T, int C, int KV>
__global__ void conv_small_fwd_kernel(const T* __restrict__ x, const T* __restrict__ w, T* __restrict__ y, int N, int H,
                                      int W, int K) {
  grid_dependency_begin();
  const int kg = blockIdx.y * blockDim.x + threadIdx.x;
  if (kg * KV >= K) return;
  float wr[9 * C][KV];  // wr[tap*C + c][j] = w[kg*KV + j, tap, c]
#pragma unroll
  for (int t = 0; t < 9 * C; ++t)
#pragma unroll
    for (int j = 0; j < KV; ++j) wr[t][j] = to_f(w[int64_t(kg * KV + j) * 9 * C + t]);
  const int NH = N * H;
  for (int q = blockIdx.x * blockDim.y + threadIdx.y; q < NH; q += gridDim.x * blockDim.y) {
    const int h = q % H;
    float xw[3][3][C];  // [tap row][column w-1, w, w+1][c]
    load_window_col<T, C>(x, q, h, H, W, -1, xw, 0);
    load_window_col<T, C>(x, q, h, H, W, 0, xw, 1);
#pragma unroll 2
    for (int wq = 0; wq < W; ++wq) {
      load_window_col<T, C>(x, q, h, H, W, wq + 1, xw, 2);
      float acc[KV];
#pragma unroll
      for (int j = 0; j < KV; ++j) acc[j] = 0.f;
#pragma unroll
      for (int r = 0; r < 3; ++r)
#pragma unroll
        for (int s = 0; s < 3; ++s)
#pragma unroll
          for (int c = 0; c < C; ++c)
#pragma unroll
            for (int j = 0; j < KV; ++j) acc[j] = fmaf(xw[r][s][c], wr[(r * 3 + s) * C + c][j], acc[j]);
      store_vec<T, KV>(y + (int64_t(q) * W + wq) * K + kg * KV, acc);
      shift_window<C>(xw);
    }
  }
}

// Filter-gradient geometry: block (bx, by) = (KV-channel groups, image rows);
// thread (kg, ty) walks the image rows (flattened n*H + h) blockIdx.x*by + ty,
// + gridDim.x*by, ... (a fixed set), each left to right.
// KV output channels per thread: each loaded 3x3xC input window feeds 9*C*KV
// FMAs (36 to 72 sums per thread), reduced across the block kSmallFilterChunk
// sums at a time (36 KB of shared memory at 256 threads).
template <int C>
constexpr int small_filter_kv() {
  return C <= 2 ? 4 : 2;
}
constexpr int kSmallFilterChunk = 36;

struct SmallFilterGeom {
  int bx = 1, by = 1;
  dim3 grid, block;
};
SmallFilterGeom small_filter_geom(const ConvKey& key, int sms, int kv) {
  SmallFilterGeom g;
  const int64_t groups = ceil_div(key.k, int64_t(kv));
  g.bx = groups >= 32 ? 32 : next_pow2(int(groups));
  g.by = kSmallThreads / g.bx;
  const int chan_blocks = int(ceil_div(groups, int64_t(g.bx)));
  const int64_t row_blocks = ceil_div(key.n * key.h, int64_t(g.by));
  int64_t blocks = int64_t(sms) * kSmallFilterBlocksPerSm / chan_blocks;
  if (blocks < 1) blocks = 1;
  if (blocks > row_blocks) blocks = row_blocks;
  g.grid = dim3(unsigned(blocks), unsigned(chan_blocks));
  g.block = dim3(unsigned(g.bx), unsigned(g.by));
  return g;
}
// The channels per thread of the kernel's vector path (the launch falls back to
// 1 where K or dy's alignment does not allow it).
int small_filter_kv(const ConvKey& key) { return key.c <= 2 ? small_filter_kv<1>() : small_filter_kv<3>(); }

// dw[k, r, s, c] = sum over pixels p of x[nbr(p,r,s), c] * dy[p, k]
// Thread (kg, row) walks its rows left to right with the 3x3xC input window in
// registers (one new column per step) and its KV channels' dy loaded straight
// from memory (KV * sizeof(T) bytes, contiguous across the kg lanes). Each
// thread keeps 9*C*KV sums over a fixed pixel order, indexed (kk*9 + tap)*C + c
// for channel k0 + kk, which is dw's KRSC layout from k0*9*C on; the block and
// the blocks are added by block_sum_store / finalize_sums (Note [deterministic
// kernels]).
template <typename T, int C, int KV>
__global__ void conv_small_bwd_filter_kernel(const T* __restrict__ x, const T* __restrict__ dy, int N, int H, int W,
                                             int K, SumOut<T, 1> out) {
  grid_dependency_begin();
  const int k0 = (blockIdx.y * blockDim.x + threadIdx.x) * KV;
  const bool active = k0 < K;
  const int NH = N * H;
  float acc[1][9 * C * KV];
#pragma unroll
  for (int i = 0; i < 9 * C * KV; ++i) acc[0][i] = 0.f;
  for (int q = blockIdx.x * blockDim.y + threadIdx.y; active && q < NH; q += gridDim.x * blockDim.y) {
    const int h = q % H;
    float xw[3][3][C];  // [tap row][column w-1, w, w+1][c]
    const T* dyq = dy + int64_t(q) * W * K + k0;
    load_window_col<T, C>(x, q, h, H, W, -1, xw, 0);
    load_window_col<T, C>(x, q, h, H, W, 0, xw, 1);
#pragma unroll 4
    for (int j = 0; j < W; ++j) {
      load_window_col<T, C>(x, q, h, H, W, j + 1, xw, 2);
      float d[KV];
      load_vec<T, KV>(dyq + int64_t(j) * K, d);
#pragma unroll
      for (int kk = 0; kk < KV; ++kk)
#pragma unroll
        for (int r = 0; r < 3; ++r)
#pragma unroll
          for (int s = 0; s < 3; ++s)
#pragma unroll
            for (int c = 0; c < C; ++c) {
              float& a = acc[0][((kk * 9) + r * 3 + s) * C + c];
              a = fmaf(xw[r][s][c], d[kk], a);
            }
      shift_window<C>(xw);
    }
  }
  block_sum_store<T, 1, 9 * C * KV, kSmallFilterChunk>(acc, int64_t(k0) * 9 * C, active, int64_t(K) * 9 * C, out);
}

template <typename T, int C>
void launch_small_c(const ConvKey& key, const OpCall& c, const GpuHandles& gh, void* ws) {
  const int sms = sm_count(gh);
  const int N = int(key.n), H = int(key.h), W = int(key.w), K = int(key.k);
  if (key.dir == ConvDir::Fwd) {
    auto run = [&](auto kv) {
      constexpr int KV = decltype(kv)::value;
      const int kgs = K / KV;
      const int bx = kgs >= 32 ? 32 : next_pow2(kgs);
      const int by = kSmallThreads / bx;
      const unsigned chan_blocks = unsigned(ceil_div(kgs, bx));
      int64_t row_blocks = ceil_div(key.n * key.h, by);
      const int64_t cap = int64_t(sms) * 8 / chan_blocks;
      if (row_blocks > cap) row_blocks = cap < 1 ? 1 : cap;
      launch_kernel(c.env, {dim3(unsigned(row_blocks), chan_blocks), dim3(bx, by), 0}, conv_small_fwd_kernel<T, C, KV>,
                    c.in[0].as<T>(), c.in[1].as<T>(), c.out[0].as<T>(), N, H, W, K);
    };
    constexpr int KV = small_fwd_kv<T, C>();
    if (key.k % KV == 0 && aligned_to(c.out[0].data, sizeof(T) * KV)) run(std::integral_constant<int, KV>{});
    else run(std::integral_constant<int, 1>{});
    return;
  }
  SumOut<T, 1> out;
  out.partial = static_cast<float*>(ws);
  out.t[0] = c.out[0].as<T>();
  // KV channels per thread where K and dy's alignment allow one KV-element load.
  constexpr int KV = small_filter_kv<C>();
  const bool vec = K % KV == 0 && aligned_to(c.in[1].data, sizeof(T) * KV);
  const SmallFilterGeom g = small_filter_geom(key, sms, vec ? KV : 1);
  TR_CHECK(g.grid.x <= 1 || ws != nullptr, "ConvBwdFilter: small-C kernel without workspace");
  auto run = [&](auto kv) {
    constexpr int V = decltype(kv)::value;
    launch_kernel(c.env, {g.grid, g.block, sum_smem_bytes<1, 9 * C * V, kSmallFilterChunk>()},
                  conv_small_bwd_filter_kernel<T, C, V>, c.in[0].as<T>(), c.in[1].as<T>(), N, H, W, K, out);
  };
  if (vec) run(std::integral_constant<int, KV>{});
  else run(std::integral_constant<int, 1>{});
  ChannelGrid fg;  // launch_finalize needs only the number of row blocks
  fg.grid = g.grid;
  launch_finalize<T, 1>(fg, key.k * 9 * C, out, c.env);
}

void run_small_c(const ConvKey& key, const OpCall& c, const GpuHandles& gh, void* ws) {
  TR_CHECK(uses_small_c_kernel(key), "conv small-C: no kernel for ", key.str());
  TR_CHECK(key.n * key.h * key.w * key.k < (int64_t(1) << 31), "conv small-C: shape too large: ", key.str());
  if (uses_small_c_tc(key)) {  // f16 on the tensor cores (Note [small-C on tensor cores])
    if (key.dir == ConvDir::Fwd) conv_small_fwd_tc(c.env, sm_count(gh), c.in[0].data, c.in[1].data, c.out[0].data, key);
    else conv_small_bwd_filter_tc(c.env, sm_count(gh), c.in[0].data, c.in[1].data, c.out[0].data, ws, key);
    return;
  }
  dispatch_float(key.dtype, "conv small-C", [&](auto tag) {
    using T = decltype(tag);
    switch (key.c) {
      case 1: launch_small_c<T, 1>(key, c, gh, ws); break;
      case 2: launch_small_c<T, 2>(key, c, gh, ws); break;
      case 3: launch_small_c<T, 3>(key, c, gh, ws); break;
      case 4: launch_small_c<T, 4>(key, c, gh, ws); break;
      default: TR_CHECK(false, "conv small-C: no kernel for ", key.str());
    }
  });
}

// ---------------------------------------------------------------- cuDNN

struct ConvLaunch {
  cudnnHandle_t h;
  const ConvPlan* plan;
  void* ws;
  bool done;  // one of our kernels already ran
};

// Checks the call against the plan's key and binds the handle to the op's stream.
ConvLaunch begin(const OpCall& c, OpKind kind, const char* op) {
  check_operands(kind, c);
  const GpuHandles& gh = handles_of(c, op);
  TR_CHECK(gh.cudnn != nullptr, op, ": no cuDNN handle");
  TR_CHECK(gh.conv_plans != nullptr, op, ": no ConvPlanCache in GpuHandles");
  const TensorRef& a = c.in[0];
  const TensorRef& b = c.in[1];
  const TensorRef& out = c.out[0];
  TR_CHECK(a.dtype == DType::F32 || is_half(a.dtype), op, ": dtype ", dtype_name(a.dtype),
           " is not supported on CUDA (f32, f16 or bf16 only)");
  check_dtype(b, a.dtype, op, "second input");
  check_dtype(out, a.dtype, op, "output");
  TR_CHECK(c.attrs != nullptr, op, ": no attributes");
  Shape shapes[3];  // the inputs' shapes (ConvBwdData's x: shape only, never read)
  for (int i = 0; i < c.n_in; ++i) shapes[i] = c.in[i].shape;
  const ConvKey key = conv_key(kind, shapes, c.n_in, *c.attrs, a.dtype);
  const Shape want = kind == OpKind::ConvFwd       ? Shape{key.n, key.ho(), key.wo(), key.k}
                     : kind == OpKind::ConvBwdData ? Shape{key.n, key.h, key.w, key.c}
                                                   : Shape{key.k, key.r, key.r, key.c};
  TR_CHECK(out.shape.numel() == want.numel(), op, ": output is ", out.shape.str(), ", expected ", want.str());
  ConvLaunch l;
  l.h = static_cast<cudnnHandle_t>(gh.cudnn);
  l.plan = &gh.conv_plans->lookup(key);
  l.ws = workspace(gh, l.plan->workspace_bytes, op);
  l.done = false;
  if (l.plan->impl == ConvImpl::SmallC) {
    run_small_c(key, c, gh, l.ws);
    l.done = true;
    return l;
  }
  if (l.plan->impl == ConvImpl::FilterTc) {  // Note [3x3 filter gradient on tensor cores]
    conv_bwd_filter_tc(c.env, sm_count(gh), a.data, b.data, out.data, l.ws, key);
    l.done = true;
    return l;
  }
  TR_GPU_CHECK(cudnnSetStream(l.h, stream_of(c)));
  return l;
}

}  // namespace

// x[N,H,W,C], w[K,R,R,C] -> y[N,Ho,Wo,K]
void conv_fwd_cuda(const OpCall& c) {
  const ConvLaunch l = begin(c, OpKind::ConvFwd, "ConvFwd");
  if (l.done) return;
  TR_LIBRARY_LAUNCH(run_cudnn_plan(l.h, *l.plan, c.in[0].data, c.in[1].data, c.out[0].data, l.ws));
}

// dy[N,Ho,Wo,K], w[K,R,R,C], x[N,H,W,C] (shape only) -> dx[N,H,W,C]
void conv_bwd_data_cuda(const OpCall& c) {
  const ConvLaunch l = begin(c, OpKind::ConvBwdData, "ConvBwdData");
  if (l.done) return;
  TR_LIBRARY_LAUNCH(run_cudnn_plan(l.h, *l.plan, c.out[0].data, c.in[1].data, c.in[0].data, l.ws));
}

// x[N,H,W,C], dy[N,Ho,Wo,K] -> dw[K,R,R,C]
void conv_bwd_filter_cuda(const OpCall& c) {
  const ConvLaunch l = begin(c, OpKind::ConvBwdFilter, "ConvBwdFilter");
  if (l.done) return;
  TR_LIBRARY_LAUNCH(run_cudnn_plan(l.h, *l.plan, c.in[0].data, c.out[0].data, c.in[1].data, l.ws));
}

size_t small_c_conv_workspace_bytes(const ConvKey& key, int sms) {
  TR_CHECK(uses_small_c_kernel(key), "conv small-C: no kernel for ", key.str());
  if (key.dir != ConvDir::BwdFilter) return 0;
  if (uses_small_c_tc(key)) return small_c_tc_filter_workspace_bytes(key, sms);
  size_t bytes = 0;  // either path the launch may take
  for (int kv : {small_filter_kv(key), 1}) {
    const SmallFilterGeom g = small_filter_geom(key, sms, kv);
    if (g.grid.x > 1) bytes = std::max(bytes, size_t(g.grid.x) * size_t(key.k * 9 * key.c) * sizeof(float));
  }
  return bytes;
}

}  // namespace tr
